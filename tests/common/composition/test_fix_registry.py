"""The fix registry (common/composition/fix_registry.py): every module of common/fixes/ is found without a list, in
apply order; a module that declares nothing, or two that change one target with no order said, is refused."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from npu_inductor_compat.common.composition import fix_registry
from npu_inductor_compat.common.composition.fix_registry import (
    FixDeclarationError,
    apply_order,
    records_of,
    shared_fixes,
)
from npu_inductor_compat.dispatch import load_line
from npu_inductor_compat.lines import LINES
from npu_inductor_compat.patching import Change, Patch


def _record(record_id: str, target: str) -> Patch:
    return Patch(id=record_id, why="w", upstream="u", remove_when="r", changes=(Change(target, lambda old: old),))


def _package(root: Path, modules: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """A package of fix modules on sys.path, the registry pointed at it."""
    name = f"planted_fixes_{abs(hash(root)) % 10**8}"
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    for module, text in modules.items():
        (root / name / f"{module}.py").write_text(
            "from npu_inductor_compat.patching import Change, Patch\n"
            "def _r(i, t):\n"
            "    return Patch(id=i, why='w', upstream='u', remove_when='r', changes=(Change(t, lambda old: old),))\n"
            + text
        )
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(fix_registry, "PACKAGE", name)
    for module in [name, *(f"{name}.{module}" for module in modules)]:  # gone from sys.modules after the test
        monkeypatch.setitem(sys.modules, module, None)
        del sys.modules[module]
    return name


def test_every_line_applies_every_module_of_the_folder() -> None:
    """Each line's LINE starts with the registry's records, module by module in apply order."""
    folder = Path(fix_registry.__file__).parents[1] / "fixes"
    on_disk = sorted(path.stem for path in folder.glob("*.py") if not path.name.startswith("_"))
    modules = fix_registry.fix_modules()
    assert sorted(module.__name__.rpartition(".")[2] for module in modules) == on_disk
    for line in LINES:
        spec = load_line(line.module)
        expected = [record.id for module in modules for record in records_of(module, spec.adapters)]
        assert [record.id for record in spec.fixes[: len(expected)]] == expected


def test_a_new_module_is_found_without_a_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapters = load_line(LINES[-1].module).adapters
    _package(
        tmp_path,
        {
            "b_second": "FIXES = (_r('b', 'torch:b'),)\n",
            "a_first": "def line_fixes(adapters):\n    return (_r('a-' + type(adapters).__name__, 'torch:a'),)\n",
            "c_wraps_a": "FIXES = (_r('c', 'torch:a'),)\nAFTER = ('a_first',)\n",
        },
        monkeypatch,
    )
    assert [record.id for record in shared_fixes(adapters)] == ["a-LineAdapters", "b", "c"]


def test_two_modules_changing_one_target_must_say_which_goes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapters = load_line(LINES[-1].module).adapters
    name = _package(
        tmp_path, {"one": "FIXES = (_r('one', 'torch:x'),)\n", "two": "FIXES = (_r('two', 'torch:x'),)\n"}, monkeypatch
    )
    with pytest.raises(FixDeclarationError, match=rf"{name}\.two and {name}\.one both change torch:x: .*AFTER"):
        shared_fixes(adapters)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("X = 1\n", "declares no records"),
        ("FIXES = ()\n", "no records"),
        ("FIXES = ('an id',)\n", "str at 0"),
    ],
)
def test_a_module_that_declares_no_records_is_refused(text: str, problem: str) -> None:
    module = types.ModuleType("fixes.odd")
    exec(text, module.__dict__)
    with pytest.raises(FixDeclarationError, match=f"fixes.odd: .*{problem}|fixes.odd {problem}"):
        records_of(module, None)  # type: ignore[arg-type]


def test_the_apply_order_is_by_name_after_what_each_names() -> None:
    assert apply_order({"b": (), "a": ("c",), "c": ()}) == ["b", "c", "a"]
    with pytest.raises(FixDeclarationError, match="AFTER names \\['nope'\\]"):
        apply_order({"a": ("nope",)})
    with pytest.raises(FixDeclarationError, match="cycle among \\['a', 'b'\\]"):
        apply_order({"a": ("b",), "b": ("a",)})


def test_the_records_this_tree_nests_on_one_target_are_ordered() -> None:
    """The two pairs of records that wrap one target today, in the order they always applied in."""
    ids = [record.id for record in load_line(LINES[-1].module).fixes]
    assert ids.index("torch-npu-masked-load-permute-order") < ids.index("torch-npu-constant-load-reshape")
    assert ids.index("flex-decoding-split-from-device") < ids.index("torch-npu-flex-decoding-precision")
