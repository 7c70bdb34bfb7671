"""The torch_npu wheel survey: detectors and hooked names on small synthetic wheels, coverage of every fix record and
every torch_npu name in the package source, and the real findings for the core torch_npu releases (downloaded once
into the wheel cache; skipped, with the reason, when they cannot be downloaded)."""

from __future__ import annotations

import ast
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from import_graph import folder_packages
from npu_compat_test_paths import ROOT

from npu_inductor_compat.common.composition.layers import all_layer_ids
from npu_inductor_compat.lines import LINES
from npu_inductor_compat.registry import fix_records
from npu_inductor_compat.targets import Target
from npu_inductor_compat.tools import wheel_cache
from npu_inductor_compat.tools.torch_npu_survey import survey

LINE_FOLDERS = tuple(line.module for line in LINES)
SOURCE_FOLDERS = tuple(folder_packages(ROOT))  # pyproject.toml's package-dir


def make_wheel(
    where: Path, files: dict[str, str], version: str = "2.9.0.post1", torch: str | None = "2.9.0+cpu"
) -> Path:
    """A minimal torch_npu wheel: METADATA, torch_npu/__init__.py and ``files`` (paths under torch_npu/)."""
    path = where / f"torch_npu-{version}-cp311-cp311-manylinux_2_28_x86_64.whl"
    metadata = f"Metadata-Version: 2.1\nName: torch_npu\nVersion: {version}\n"
    if torch:
        metadata += f"Requires-Dist: torch =={torch}\nRequires-Dist: numpy\n"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"torch_npu-{version}.dist-info/METADATA", metadata)
        wheel.writestr("torch_npu/__init__.py", "")
        for name, text in files.items():
            wheel.writestr(f"torch_npu/{name}", text)
    return path


def fix(report: survey.ReleaseReport, fix_id: str) -> dict[str, Any]:
    return next(item for item in report.fixes if item["id"] == fix_id)


def hook(report: survey.ReleaseReport, hook_id: str) -> dict[str, Any]:
    return next(item for item in report.hooks if item["id"] == hook_id)


# ------------------------------------------------------------------------------------------ synthetic wheels
CPP_WRAPPER_CARRIED = '''
class CppWrapperNpu:
    def generate_args_decl(self):
        return """
            void* workspace_addr = NULL;
            void* sync_block_lock = NULL;
            auto workspace_tensor = at_npu::native::allocate_workspace(workspace_size, stream_);
            workspace_addr = const_cast<void *>(workspace_tensor.storage().data());
            auto lock_tensor = at_npu::native::allocate_workspace(lock_size, stream_);
            sync_block_lock = const_cast<void *>(lock_tensor.storage().data());
            ret = aclrtMemsetAsync(sync_block_lock, lock_size, 0, lock_size, stream_);
        """
'''
CPP_WRAPPER_NULL = '''
class CppWrapperNpu:
    def generate_args_decl(self):
        return """
            void* workspace_addr = NULL;
            void* sync_block_lock = NULL;
            if (workspace_addr == nullptr) {}
        """
'''
AUTOTUNER_CARRIED = """
class NPUCachingAutotuner(CachingAutotuner):
    def save_gpu_kernel(self, stream, launcher):
        self.save_npu_kernel(stream, launcher)

    def save_npu_kernel(self, input_stream, input_launcher):
        params = {"mangled_name": "k", "workspace_size": 0}
        params["sync_block_lock_layout"] = 0
"""
AUTOTUNER_NOT_CARRIED = """
class NPUCachingAutotuner(CachingAutotuner):
    def save_gpu_kernel(self, stream, launcher):
        params = {"mangled_name": "k", "shared_mem": 0}
"""
GRID_SYMBOLIC = """
from torch._inductor.kernel.flex_attention import flex_attention_backward_template as upstream_backward_template

@SymbolicGridFn
def _backward_grid(b, h, m, d, kvh, n, meta, *, cdiv):
    return (1, 1, 1)

upstream_backward_template.grid = (_backward_grid)
"""
GRID_PLAIN = """
def _backward_grid(b, h, m, d, kvh, n, meta):
    return (1, 1, 1)

flex_attention_backward_template = NPUTritonTemplate(name="bwd", grid=_backward_grid, source="")
"""


# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line (its flex fix is the example)
@pytest.mark.once
def test_fixes_carried_and_not_carried(tmp_path: Path) -> None:
    carried = survey.survey(
        make_wheel(
            tmp_path,
            {
                "_inductor/codegen/cpp_wrapper.py": CPP_WRAPPER_CARRIED,
                "_inductor/npu_triton_heuristics.py": AUTOTUNER_CARRIED,
                "_inductor/kernel/flex_attention.py": GRID_SYMBOLIC,
                "_inductor/scheduler.py": "from torch._inductor import scheduler\n"
                "scheduler.BaseSchedulerNode.decide_inplace_update = lambda self: None\n",
            },
            version="2.7.1.post1",
            torch="2.7.1+cpu",
        )
    )
    assert carried.line == "v2_7_1" and carried.torch == "2.7.1"
    locks = fix(carried, "cpp-wrapper-workspace-locks")
    assert locks["status"] == "carried"
    assert locks["notes"] == ["lock init: stream-ordered, aclrtMemsetAsync/aclrtMemcpyAsync"]
    assert fix(carried, "autotuner-kernel-metadata")["status"] == "carried"
    assert "save_gpu_kernel -> save_npu_kernel" in fix(carried, "autotuner-kernel-metadata")["evidence"]
    grid = fix(carried, "flex-backward-symbolic-grid")
    assert grid["status"] == "carried" and grid["needed"] is True and "_backward_grid" in grid["evidence"]
    inplace = fix(carried, "inplace-skips-removed-users")
    assert inplace["status"] == "carried" and "_inductor/scheduler.py" in inplace["evidence"]

    (tmp_path / "other").mkdir()
    not_carried = survey.survey(
        make_wheel(
            tmp_path / "other",
            {
                "_inductor/codegen/cpp_wrapper_npu.py": CPP_WRAPPER_NULL,
                "_inductor/runtime/triton_heuristics.py": AUTOTUNER_NOT_CARRIED,
                "_inductor/kernel/flex_attention.py": GRID_PLAIN,
            },
        )
    )
    assert not_carried.line == "v2_9"
    locks = fix(not_carried, "cpp-wrapper-workspace-locks")
    assert locks["status"] == "not carried" and "passes NULL workspace and lock pointers" in locks["evidence"]
    assert fix(not_carried, "autotuner-kernel-metadata")["status"] == "not carried"
    assert fix(not_carried, "inplace-skips-removed-users")["status"] == "not carried"
    grid = fix(not_carried, "flex-backward-symbolic-grid")
    # a plain grid is not the fix, and the 2.7-only fix is not needed on torch 2.9
    assert grid["status"] == "not carried" and grid["needed"] is False and "plain" in grid["evidence"]
    table = survey.render([carried, not_carried], details=False)
    assert "| `flex-backward-symbolic-grid` | carried | not carried (n/a on v2_9) |" in table


@pytest.mark.once
def test_hooked_names_present_missing_and_signature_mismatch(tmp_path: Path) -> None:
    report = survey.survey(
        make_wheel(
            tmp_path,
            {
                "utils/_dynamo_device.py": "if True:\n    class NpuInterface:\n        pass\n",
                # re-exported from a submodule: present, with the defining file's signature
                "_inductor/utils.py": "from ._streams import get_current_raw_stream\n",
                "_inductor/_streams.py": "def get_current_raw_stream(device):\n    return 0\n",
                # save_gpu_kernel that cannot take Inductor's (stream, launcher)
                "_inductor/npu_triton_heuristics.py": (
                    "class NPUCachingAutotuner:\n    def save_gpu_kernel(self, stream):\n        pass\n"
                ),
                "_inductor/ascend_npu_ir/ascend_npu_ir/npu/npu_inductor_plugin.py": (
                    "def register_mlir_codegen_backend(device='npu', *, strict=False):\n    pass\n"
                ),
                "_inductor/ascendc/__init__.py": "from .npu import *\n",
                "_inductor/ascendc/npu.py": (
                    "class NPUScheduling:\n    @staticmethod\n"
                    "    def scheduler_should_partition_override(scheduler, node, orig_fn):\n        pass\n"
                ),
            },
        )
    )
    assert hook(report, "device-interface")["status"] == "present"
    raw = hook(report, "raw-stream")
    assert raw["status"] == "present" and "re-exported by torch_npu/_inductor/utils.py" in raw["detail"]
    assert "signature (device)" in raw["detail"]
    saver = hook(report, "autotuner-save-kernel")
    assert saver["status"] == "missing"
    assert "signature (self, stream) cannot take 2 positional" in saver["detail"]
    assert "torch_npu/_inductor/runtime/triton_heuristics.py" in saver["detail"]  # the other layout, also looked at
    assert hook(report, "mlir-plugin")["status"] == "present"
    assert hook(report, "mlir-package")["detail"] == "namespace package in torch_npu/_inductor/ascend_npu_ir/"
    assert hook(report, "ascendc-partition-override")["status"] == "present"  # staticmethod: 3 positional
    assert hook(report, "dvm-package")["status"] == "missing"
    assert "no module torch_npu._inductor.dvm" in hook(report, "dvm-package")["detail"]
    assert hook(report, "scheduling")["status"] == "missing"


@pytest.mark.once
def test_unpacked_directory_is_surveyed_like_the_wheel(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, {"_inductor/codegen/cpp_wrapper.py": CPP_WRAPPER_CARRIED})
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    from_zip, from_dir = survey.survey(wheel), survey.survey(unpacked)
    assert from_zip.fixes == from_dir.fixes and from_zip.hooks == from_dir.hooks


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(b"not a zip"), "not a readable wheel"),
        (lambda p: zipfile.ZipFile(p, "w").writestr("other/__init__.py", ""), "holds no torch_npu/__init__.py"),
        (lambda p: zipfile.ZipFile(p, "w").writestr("torch_npu/__init__.py", ""), "no torch_npu-*.dist-info/METADATA"),
    ],
)
@pytest.mark.once
def test_malformed_wheel_is_a_clear_error_naming_the_file(
    tmp_path: Path, make: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "torch_npu-9.9.9-cp311-cp311-manylinux_2_28_x86_64.whl"
    make(path)
    with pytest.raises(survey.SurveyError, match=re.escape(str(path)) + ".*" + re.escape(message)):
        survey.survey(path)
    assert survey.main([str(path)]) == 2
    assert str(path) in capsys.readouterr().err


@pytest.mark.once
def test_unparsable_source_is_reported_per_item_not_fatal(tmp_path: Path) -> None:
    report = survey.survey(make_wheel(tmp_path, {"_inductor/codegen/cpp_wrapper.py": "class CppWrapperNpu(:\n"}))
    cpp = hook(report, "cpp-wrapper")
    assert cpp["status"] == "missing" and "cannot parse torch_npu/_inductor/codegen/cpp_wrapper.py" in cpp["detail"]
    assert fix(report, "cpp-wrapper-workspace-locks")["status"] == "not carried"


@pytest.mark.once
def test_cli_writes_markdown_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_wheel(tmp_path, {}, version="2.12.0.post1", torch="2.12.0")
    out = tmp_path / "survey.md"
    assert survey.main([str(tmp_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| fix | 2.12.0.post1 (torch 2.12.0) |" in printed
    written = out.read_text()
    for detector in survey.FIX_DETECTORS:
        assert f"| `{detector.fix_id}` |" in written and f"- `{detector.fix_id}` is carried when" in written
    for hooked in survey.TORCH_NPU_HOOKS:
        assert f"| `{hooked.id}` | missing |" in written
    assert survey.main([str(tmp_path), "--json", "--out", str(tmp_path / "s.json")]) == 0
    assert '"torch_npu": "2.12.0.post1"' in (tmp_path / "s.json").read_text()


@pytest.mark.once
def test_fetch_uses_the_cache_and_falls_back_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    older = make_wheel(tmp_path, {}, version="2.9.0.post2")
    newer = make_wheel(tmp_path, {}, version="2.9.0.post10")
    make_wheel(tmp_path, {}, version="2.9.1")

    def no_pip() -> list[str]:
        raise AssertionError("an exact cached version must not ask the index")

    monkeypatch.setattr(wheel_cache, "_pip", no_pip)
    assert wheel_cache.fetch("2.9.0.post2", tmp_path) == older
    # a line asks pip (failing here), then takes the newest cached wheel of that line, not 2.9.1
    monkeypatch.setattr(wheel_cache, "_pip", lambda: ["sh", "-c", "echo offline >&2; exit 1"])
    assert wheel_cache.fetch("2.9.0", tmp_path) == newer
    assert "using cached torch_npu-2.9.0.post10" in capsys.readouterr().err
    with pytest.raises(survey.SurveyError, match="could not download torch_npu==2.8.0.*offline"):
        wheel_cache.fetch("2.8.0", tmp_path)


@pytest.mark.once
def test_cache_dir_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(wheel_cache.WHEEL_CACHE_ENV, str(tmp_path))
    assert wheel_cache.default_cache_dir() == tmp_path


# ---------------------------------------------------------------------------------------------- coverage
def test_every_fix_record_has_a_detector_and_every_detector_a_record(adapters: Any) -> None:
    detectors = [detector.fix_id for detector in survey.FIX_DETECTORS]
    assert len(detectors) == len(set(detectors))
    records = {record.id for record in fix_records()}
    assert records - set(detectors) == set(), "fix records without a torch_npu survey detector"
    unknown = set(detectors) - records - all_layer_ids(adapters)
    assert unknown == set(), "detectors for ids that are no record"


FILE_SUFFIXES = frozenset({"whl", "py", "so", "h", "json", "md", "txt"})


def _torch_npu_references() -> dict[str, set[str]]:
    """Every torch_npu name the package source names (imports and strings), with the files naming it."""
    found: dict[str, set[str]] = {}
    for folder in SOURCE_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            # the survey itself; the stand-in torch_npu of the codegen command, which names torch_npu's public names
            # only as what it imitates (torch_npu.npu, the fused operators of npu_ops.py and npu_attention.py) or
            # refuses (its other operators); and the wheel provider (torch_npu_wheel.py and its wheel_*.py), whose
            # stub table names torch_npu's *native* symbols (the survey reads Python sources; the provider's own
            # tests fail when a stub goes missing): none of them hooks a torch_npu name
            simulated = ROOT / "tools" / "simulated"
            provider = ("torch_npu_wheel", "wheel_release", "wheel_stubs", "wheel_depth", "wheel_targets")
            provider += ("wheel_events", "wheel_records", "standin")
            imitations = {simulated / "npu" / "npu_ops.py", simulated / "npu" / "npu_attention.py"}
            imitations |= {simulated / "wheel" / f"{name}.py" for name in provider}
            if path == ROOT / "tools" / "torch_npu_survey" / "survey.py" or path in imitations:
                continue
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [f"{node.module}:{alias.name}" for alias in node.names]
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    text = node.value
                    names = [f"{m}:{n}" for m, n in re.findall(r"from (torch_npu[\w.]*) import (\w+)", text)]
                    text = re.sub(r"from torch_npu[\w.]* import \w+", "", text)
                    names += re.findall(r"\btorch_npu(?:\.\w+)+(?::\w+(?:\.\w+)*)?", text)
                for name in names:
                    if name.rsplit(".", 1)[-1] in FILE_SUFFIXES:  # a file name such as torch_npu.whl
                        continue
                    if name.split(":")[0].split(".")[0] == "torch_npu" and name != "torch_npu":
                        found.setdefault(name, set()).add(where)
    return found


def _covered(reference: str) -> bool:
    found = Target.parse(reference, attribute=False)
    module, attribute = found.module, found.qualname
    for hooked in survey.TORCH_NPU_HOOKS:
        for candidate in hooked.candidates:
            target = Target.parse(candidate, attribute=False)
            candidate_module, qualname = target.module, target.qualname
            if attribute:
                if module == candidate_module and (qualname == attribute or qualname.startswith(f"{attribute}.")):
                    return True
            elif candidate_module == module or candidate_module.startswith(f"{module}."):
                return True
    return False


@pytest.mark.once
def test_every_torch_npu_name_in_the_package_is_a_surveyed_hook() -> None:
    references = _torch_npu_references()
    # the scan sees the one table of hooked names (the provider's interface, the generated-code import)
    assert "torch_npu.utils._dynamo_device:NpuInterface" in references
    assert "torch_npu._inductor.utils:get_current_raw_stream" in references
    uncovered = {name: sorted(files) for name, files in references.items() if not _covered(name)}
    assert uncovered == {}, "add these to common/torch_npu_names.py TORCH_NPU_HOOKS"


@pytest.mark.once
def test_hook_and_detector_tables_are_well_formed() -> None:
    ids = [hooked.id for hooked in survey.TORCH_NPU_HOOKS]
    assert len(ids) == len(set(ids))
    for hooked in survey.TORCH_NPU_HOOKS:
        assert hooked.candidates and hooked.used_by
        for candidate in hooked.candidates:
            assert re.fullmatch(r"torch_npu(\.\w+)+(:\w+(\.\w+)*)?", candidate), candidate


# ------------------------------------------------------------------------------------------ released wheels
NOT_CARRIED, CARRIED = "not carried", "carried"
RUNTIME_HEURISTICS = "torch_npu._inductor.runtime.triton_heuristics"
# What the released wheels show (read from their sources, see docs/torch-npu-survey.md). Fix statuses in
# FIX_DETECTORS order; hooks: the missing ones (all others present), and the layout found where there are two.
RELEASED: dict[str, dict[str, Any]] = {
    "2.7.1.post11": {
        "torch": "2.7.1",
        "fixes": {
            "flex-backward-symbolic-grid": CARRIED,
            "flex-configs-from-device": CARRIED,
            "flex-decoding-block-index-wrap": NOT_CARRIED,
            "flex-decoding-split-from-device": CARRIED,
            "autotuner-kernel-metadata": CARRIED,
            "cpp-wrapper-workspace-locks": CARRIED,
            "cpp-wrapper-scalar-returns": NOT_CARRIED,
            "cpp-wrapper-optional-list-args": NOT_CARRIED,
            "triton-cpp-wrapper-two-pass": CARRIED,
            "ascendc-lowering-gpu-like": CARRIED,
            "ascendc-should-partition-hook": CARRIED,
            "inplace-skips-removed-users": NOT_CARRIED,
            "torch-npu-masked-load-size-symbols": NOT_CARRIED,
            "torch-npu-persistent-reduction-ub": NOT_CARRIED,
            "torch-npu-looped-argreduce-index": NOT_CARRIED,
            "torch-npu-dynamic-persistent-reduction": NOT_CARRIED,
            "npu-variance-two-step": CARRIED,
            "npu-index-wrap-as-shift": NOT_CARRIED,
            "torch-npu-masked-subblock-size-symbols": CARRIED,
            "torch-npu-make-reduction-strict-sum": CARRIED,
            "torch-npu-cant-split-arguments": CARRIED,
            "torch-npu-split-symbolic-sizes": CARRIED,
            "torch-npu-masked-load-permute-order": NOT_CARRIED,
            "torch-npu-two-reduction-tiling": NOT_CARRIED,
            "torch-npu-constant-load-reshape": CARRIED,
            "torch-npu-persistent-reduction-store": CARRIED,
            "torch-npu-long-rows-tiles": CARRIED,
            "torch-npu-flex-lowerings-kept": CARRIED,
            "torch-npu-template-libdevice": CARRIED,
            "torch-npu-flex-decoding-precision": CARRIED,
            "torch-npu-split-blocks-past-cores": NOT_CARRIED,
            "torch-npu-combined-scheduling-epilogue": CARRIED,
            "torch-npu-implicit-fallback-under-ci": NOT_CARRIED,
            "torch-npu-numels-pinned": CARRIED,
        },
        "lock_init": ["lock init: blocking aclrtMemcpy"],
        # FastATileGenerator's heuristics: no triton_config_npu_index; only 2.9.0.post9 imports torch's decoding kernel
        # no gen_triton_ext_imports: the releases writing their template header themselves
        "missing": {"index-kernel-configs", "flex-decoding-kernel", "index-kernel-ext-imports"},
        "layouts": {
            "cpp-wrapper": "torch_npu._inductor.codegen.cpp_wrapper_npu:CppWrapperNpu",
            "autotuner-save-kernel": f"{RUNTIME_HEURISTICS}:NPUCachingAutotuner.save_gpu_kernel",
            "python-wrapper": "torch_npu._inductor.codegen.wrapper:NPUWrapperCodeGen",
        },
    },
    "2.9.0.post9": {
        "torch": "2.9.0",
        "fixes": {
            "flex-backward-symbolic-grid": CARRIED,
            "flex-configs-from-device": CARRIED,
            "flex-decoding-block-index-wrap": NOT_CARRIED,
            "flex-decoding-split-from-device": NOT_CARRIED,
            "autotuner-kernel-metadata": NOT_CARRIED,
            "cpp-wrapper-workspace-locks": NOT_CARRIED,
            "cpp-wrapper-scalar-returns": NOT_CARRIED,
            "cpp-wrapper-optional-list-args": NOT_CARRIED,
            "triton-cpp-wrapper-two-pass": CARRIED,
            "ascendc-lowering-gpu-like": CARRIED,
            "ascendc-should-partition-hook": CARRIED,
            "inplace-skips-removed-users": NOT_CARRIED,
            "torch-npu-masked-load-size-symbols": NOT_CARRIED,
            "torch-npu-persistent-reduction-ub": CARRIED,
            "torch-npu-looped-argreduce-index": NOT_CARRIED,
            "torch-npu-dynamic-persistent-reduction": NOT_CARRIED,
            "npu-variance-two-step": CARRIED,
            "npu-index-wrap-as-shift": NOT_CARRIED,
            "torch-npu-masked-subblock-size-symbols": CARRIED,
            "torch-npu-make-reduction-strict-sum": CARRIED,
            "torch-npu-cant-split-arguments": CARRIED,
            "torch-npu-split-symbolic-sizes": CARRIED,
            "torch-npu-masked-load-permute-order": NOT_CARRIED,
            "torch-npu-two-reduction-tiling": NOT_CARRIED,
            "torch-npu-constant-load-reshape": CARRIED,
            "torch-npu-persistent-reduction-store": CARRIED,
            "torch-npu-long-rows-tiles": CARRIED,
            "torch-npu-flex-lowerings-kept": CARRIED,
            "torch-npu-template-libdevice": CARRIED,
            "torch-npu-flex-decoding-precision": NOT_CARRIED,
            "torch-npu-split-blocks-past-cores": NOT_CARRIED,
            "torch-npu-combined-scheduling-epilogue": CARRIED,
            "torch-npu-implicit-fallback-under-ci": NOT_CARRIED,
            "torch-npu-numels-pinned": CARRIED,
        },
        "lock_init": [],
        # FastATileGenerator's heuristics: no triton_config_npu_index; no gen_triton_ext_imports (own template header)
        "missing": {"index-kernel-configs", "index-kernel-ext-imports"},
        "layouts": {
            "cpp-wrapper": "torch_npu._inductor.codegen.cpp_wrapper_npu:CppWrapperNpu",
            "autotuner-save-kernel": f"{RUNTIME_HEURISTICS}:NPUCachingAutotuner.save_gpu_kernel",
            "python-wrapper": "torch_npu._inductor.codegen.wrapper:NPUPythonWrapperCodeGen",
        },
    },
    # By version number the newest 2.9 (for torch 2.9.1), but an older, smaller build than 2.9.0.post9.
    "2.9.1": {
        "torch": "2.9.1",
        "fixes": {
            "flex-backward-symbolic-grid": NOT_CARRIED,
            "flex-configs-from-device": NOT_CARRIED,
            "flex-decoding-block-index-wrap": NOT_CARRIED,
            "flex-decoding-split-from-device": NOT_CARRIED,
            "autotuner-kernel-metadata": NOT_CARRIED,
            "cpp-wrapper-workspace-locks": NOT_CARRIED,
            "cpp-wrapper-scalar-returns": NOT_CARRIED,
            "cpp-wrapper-optional-list-args": NOT_CARRIED,
            "triton-cpp-wrapper-two-pass": CARRIED,
            "ascendc-lowering-gpu-like": NOT_CARRIED,
            "ascendc-should-partition-hook": NOT_CARRIED,
            "inplace-skips-removed-users": NOT_CARRIED,
            "torch-npu-masked-load-size-symbols": CARRIED,
            "torch-npu-persistent-reduction-ub": CARRIED,
            "torch-npu-looped-argreduce-index": NOT_CARRIED,
            "torch-npu-dynamic-persistent-reduction": CARRIED,
            "npu-variance-two-step": CARRIED,
            "npu-index-wrap-as-shift": NOT_CARRIED,
            "torch-npu-masked-subblock-size-symbols": CARRIED,
            "torch-npu-make-reduction-strict-sum": CARRIED,
            "torch-npu-cant-split-arguments": CARRIED,
            "torch-npu-split-symbolic-sizes": NOT_CARRIED,
            "torch-npu-masked-load-permute-order": NOT_CARRIED,
            "torch-npu-two-reduction-tiling": NOT_CARRIED,
            "torch-npu-constant-load-reshape": NOT_CARRIED,
            "torch-npu-persistent-reduction-store": CARRIED,
            "torch-npu-long-rows-tiles": NOT_CARRIED,
            "torch-npu-flex-lowerings-kept": NOT_CARRIED,
            "torch-npu-template-libdevice": NOT_CARRIED,
            "torch-npu-flex-decoding-precision": CARRIED,
            "torch-npu-split-blocks-past-cores": NOT_CARRIED,
            "torch-npu-combined-scheduling-epilogue": CARRIED,
            "torch-npu-implicit-fallback-under-ci": NOT_CARRIED,
            "torch-npu-numels-pinned": NOT_CARRIED,
        },
        "lock_init": [],
        "missing": {
            "combined-scheduling",  # its scheduling is NPUTritonScheduling alone
            "flex-decoding-kernel",  # torch_npu 2.9.0.post9 alone imports torch's decoding kernel
            "index-overrides-masked",  # torch's own masked() kept: no subblock axis masks
            "no-linear-kernel-codegen",  # no no_linear fallback kernels
            "no-linear-loop-kernel-codegen",
            "triton-support-ffts",
            "mlir-plugin",
            "ascendc-package",
            "ascendc-partition-override",
            "index-kernel-persistent-reduction",
            "npu-config-ascend950",
            "runtime-triton-helpers",
            "autotuner-candidate-plan",  # no runtime-block candidates
        },
        "layouts": {
            "cpp-wrapper": "torch_npu._inductor.codegen.cpp_wrapper:CppWrapperNpu",
            "autotuner-save-kernel": "torch_npu._inductor.npu_triton_heuristics:NPUCachingAutotuner.save_gpu_kernel",
            "python-wrapper": "torch_npu._inductor.codegen.wrapper:NPUWrapperCodeGen",
        },
    },
    "2.12.0.post3": {
        "torch": "2.12.0",
        "fixes": {
            "flex-backward-symbolic-grid": NOT_CARRIED,
            "flex-configs-from-device": NOT_CARRIED,
            "flex-decoding-block-index-wrap": NOT_CARRIED,
            "flex-decoding-split-from-device": NOT_CARRIED,
            "autotuner-kernel-metadata": NOT_CARRIED,
            "cpp-wrapper-workspace-locks": NOT_CARRIED,
            "cpp-wrapper-scalar-returns": NOT_CARRIED,
            "cpp-wrapper-optional-list-args": NOT_CARRIED,
            "triton-cpp-wrapper-two-pass": CARRIED,
            "ascendc-lowering-gpu-like": CARRIED,
            "ascendc-should-partition-hook": CARRIED,
            "inplace-skips-removed-users": NOT_CARRIED,
            "torch-npu-masked-load-size-symbols": CARRIED,
            "torch-npu-persistent-reduction-ub": CARRIED,
            "torch-npu-looped-argreduce-index": NOT_CARRIED,
            "torch-npu-dynamic-persistent-reduction": CARRIED,
            "npu-variance-two-step": CARRIED,
            "npu-index-wrap-as-shift": NOT_CARRIED,
            "torch-npu-masked-subblock-size-symbols": CARRIED,
            "torch-npu-make-reduction-strict-sum": CARRIED,
            "torch-npu-cant-split-arguments": NOT_CARRIED,
            "torch-npu-split-symbolic-sizes": NOT_CARRIED,
            "torch-npu-masked-load-permute-order": NOT_CARRIED,
            "torch-npu-two-reduction-tiling": NOT_CARRIED,
            "torch-npu-constant-load-reshape": NOT_CARRIED,
            "torch-npu-persistent-reduction-store": CARRIED,
            "torch-npu-long-rows-tiles": NOT_CARRIED,
            "torch-npu-flex-lowerings-kept": NOT_CARRIED,
            "torch-npu-template-libdevice": NOT_CARRIED,
            "torch-npu-flex-decoding-precision": CARRIED,
            "torch-npu-split-blocks-past-cores": NOT_CARRIED,
            "torch-npu-combined-scheduling-epilogue": CARRIED,
            "torch-npu-implicit-fallback-under-ci": NOT_CARRIED,
            "torch-npu-numels-pinned": NOT_CARRIED,
        },
        "lock_init": [],
        "missing": {
            "combined-scheduling",  # its scheduling is NPUTritonScheduling alone
            "flex-decoding-kernel",  # torch_npu 2.9.0.post9 alone imports torch's decoding kernel
            "index-overrides-masked",  # torch's own masked() kept: no subblock axis masks
            "no-linear-kernel-codegen",  # no no_linear fallback kernels
            "no-linear-loop-kernel-codegen",
            "triton-support-ffts",
            "index-kernel-persistent-reduction",
            "npu-config-ascend950",
            "runtime-triton-helpers",
            "autotuner-candidate-plan",  # no runtime-block candidates
        },
        "layouts": {
            "cpp-wrapper": "torch_npu._inductor.codegen.cpp_wrapper:CppWrapperNpu",
            "autotuner-save-kernel": "torch_npu._inductor.npu_triton_heuristics:NPUCachingAutotuner.save_gpu_kernel",
            "python-wrapper": "torch_npu._inductor.codegen.wrapper:NPUWrapperCodeGen",
        },
    },
}


@pytest.mark.download
@pytest.mark.once
@pytest.mark.parametrize("version", list(RELEASED))
def test_released_torch_npu_findings(version: str) -> None:
    """Downloads the wheel into the cache once (tens of MB); skipped, saying why, when that is impossible here."""
    try:
        wheel = wheel_cache.fetch(version)
    except survey.SurveyError as err:
        pytest.skip(f"torch_npu {version} wheel not cached and not downloadable: {err}")
    report = survey.survey(wheel)
    expected = RELEASED[version]
    assert (report.torch_npu, report.torch) == (version, expected["torch"])
    assert {item["id"]: item["status"] for item in report.fixes} == expected["fixes"]
    assert fix(report, "cpp-wrapper-workspace-locks")["notes"] == expected["lock_init"]
    assert {item["id"] for item in report.hooks if item["status"] == "missing"} == expected["missing"]
    assert {hook_id: hook(report, hook_id)["found"] for hook_id in expected["layouts"]} == expected["layouts"]


@pytest.mark.once
def test_finding_pip_leaves_setuptools_importable(run_python: Any) -> None:
    """Looking for pip with importlib.util.find_spec ran setuptools' distutils hack, after which importing
    torch.utils.cpp_extension (setuptools) failed in the same process whenever pip was not installed there."""
    done = run_python(
        "from npu_inductor_compat.tools import wheel_cache; wheel_cache._pip(); import setuptools; print('ok')"
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
