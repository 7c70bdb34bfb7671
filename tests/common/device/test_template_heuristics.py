"""triton-template-heuristics-npu: "npu" in Inductor's template heuristic registry (torch >= 2.9), so the GEMM
lowerings find heuristics for it instead of logging "No template heuristic found" and falling back."""

from __future__ import annotations

import contextlib
import importlib
import logging
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch  # noqa: F401  # at collection, while conftest's NPU_INDUCTOR_COMPAT_AUTOLOAD=0 keeps the hook unarmed
from npu_compat_test_codegen import run_codegen  # tests/npu_compat_test_codegen.py, loaded by conftest.py

import npu_inductor_compat
from npu_inductor_compat.common.device import template_heuristics
from npu_inductor_compat.patching import PatchError

RECORD = "triton-template-heuristics-npu"
NO_HEURISTIC = "No template heuristic found"


def status_of(record_id: str) -> str:
    return {fix["id"]: fix["status"] for fix in npu_inductor_compat.status()["fixes"]}[record_id]


def registry_module(adapters: Any) -> Any:
    if adapters.template_heuristic_registry is None:
        pytest.skip(f"{adapters.line} has no template heuristic registry")
    return importlib.import_module(adapters.template_heuristic_registry)


@contextlib.contextmanager
def errors_logged(module: Any) -> Iterator[list[str]]:
    """The ERROR lines the registry module logs while the block runs."""
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    # 2.14 logs from heuristics/registry.py, whose logger the re-exporting module shares only through its functions
    logger = logging.getLogger(module.get_template_heuristic.__module__)
    handler = Collect(logging.ERROR)
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)


def lookup(module: Any, template: str, op: str | None) -> Any:
    """What a lowering asks (the op name is always given; an entry for op None matches any op)."""
    return module.get_template_heuristic(template, "npu", op or template.split("::", 1)[1])


def test_every_gemm_template_finds_the_generic_heuristics_for_npu_and_undo_is_exact(
    fake_provider: Any, torch_state: Any, adapters: Any
) -> None:
    before = torch_state.snapshot()
    report = npu_inductor_compat.activate()
    record = {fix["id"]: fix for fix in report["fixes"]}[RECORD]
    if adapters.template_heuristic_registry is None:  # torch 2.7/2.8: nothing asks a registry about npu
        assert record["status"] == "not needed"
        return
    assert record["status"] == "applied" and record["layer"] == "triton-family"
    module = registry_module(adapters)
    registry = getattr(module, template_heuristics.REGISTRY)
    with errors_logged(module) as errors:
        for template, op in template_heuristics.TEMPLATES:
            generic = registry[(template, template_heuristics.GENERIC_DEVICE, op)]
            found = lookup(module, template, op)
            assert type(found) is template_heuristics.npu_heuristic(generic), (template, op)
            assert isinstance(found, generic) and type(found).__name__.startswith("Npu")
    assert errors == []
    npu_inductor_compat.deactivate()
    torch_state.assert_same(before, torch_state.snapshot())
    assert not [key for key in registry if key[1] == "npu"]
    assert not [key for key in getattr(module, template_heuristics.CACHE) if key[1] == "npu"]
    with errors_logged(module) as errors:  # the condition the record removes
        lookup(module, "triton::bmm", None)
    assert any(NO_HEURISTIC in error and "device_type=npu" in error for error in errors)


def test_heuristics_torch_npu_registered_are_kept_and_the_record_is_not_needed(
    fake_provider: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = getattr(registry_module(adapters), template_heuristics.REGISTRY)

    class TorchNpuMM:  # as if torch_npu (or a future torch) registered its own for npu
        pass

    monkeypatch.setitem(registry, ("triton::mm", "npu", None), TorchNpuMM)
    npu_inductor_compat.activate()
    assert status_of(RECORD) == "not needed"
    assert [(key, value) for key, value in registry.items() if key[1] == "npu"] == [
        (("triton::mm", "npu", None), TorchNpuMM)
    ]


def test_a_device_agnostic_entry_upstream_made_is_not_overridden(
    fake_provider: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = registry_module(adapters)
    registry = getattr(module, template_heuristics.REGISTRY)
    agnostic = type(registry[("triton::bmm", "mtia", None)])  # any class will do; upstream's lookup returns it
    monkeypatch.setitem(registry, ("triton::bmm", None, None), agnostic)
    npu_inductor_compat.activate()
    assert status_of(RECORD) == "applied"
    for op in (None, "baddbmm"):  # upstream's lookup finds (bmm, None, None) for npu: nothing of ours shadows it
        assert ("triton::bmm", "npu", op) not in registry
    assert ("triton::mm", "npu", None) in registry


def test_a_generic_device_with_tuning_of_its_own_is_an_error_and_torch_stays_as_it_was(
    fake_provider: Any, torch_state: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = getattr(registry_module(adapters), template_heuristics.REGISTRY)
    generic = registry[("triton::mm", template_heuristics.GENERIC_DEVICE, None)]
    device = next(c for c in generic.__mro__ if any(b.__name__ == "BaseConfigHeuristic" for b in c.__bases__))
    monkeypatch.setattr(device, "mm_configs_for_mtia_only", [], raising=False)
    before = torch_state.snapshot()
    with pytest.raises(PatchError, match=rf"{RECORD}.*{device.__qualname__} now tunes for mtia"):
        npu_inductor_compat.activate()
    torch_state.assert_same(before, torch_state.snapshot())
    assert npu_inductor_compat.status()["applied"] == []


# ----------------------------------------------------------------------------------- the real pipeline
# Inductor considers its Triton GEMM templates only for a "big GPU" (utils.is_big_gpu: at least 68 SMs); every
# Ascend SoC reports fewer cores (torch_npu's multi_processor_count is the vector core count), so the script makes
# npu count as one, as a device with more cores would. bmm then asks the registry on every compile.
BMM_SCRIPT = """
    import torch
    import torch._inductor.utils as inductor_utils

    inductor_utils.is_big_gpu = lambda device=0: True


    def fn(a, b, c):
        return torch.mm(a, b).relu() + torch.bmm(c, c.transpose(1, 2)).sum(0)


    torch.manual_seed(0)
    a, b, c = torch.randn(16, 32), torch.randn(32, 16), torch.randn(2, 16, 8)
    out = torch.compile(fn)(a.to("npu"), b.to("npu"), c.to("npu"))
    torch.testing.assert_close(out.cpu(), fn(a, b, c), rtol=1e-4, atol=1e-4)
    print("mm and bmm on npu match eager CPU")
"""


def _codegen(tmp_path: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    script = tmp_path / "bmm.py"
    script.write_text(textwrap.dedent(BMM_SCRIPT))
    out = tmp_path / name
    done = run_codegen(script, *args, out=out, cwd=tmp_path)  # stock Inductor's templates, whatever the default
    assert done.returncode == 0, done.stderr[-3000:]
    return done, done.summary


@pytest.mark.subprocess
def test_a_bmm_compiled_for_npu_logs_no_missing_heuristic(tmp_path: Path, adapters: Any) -> None:
    done, summary = _codegen(tmp_path, "with")
    assert "match eager CPU" in done.stdout
    assert NO_HEURISTIC not in done.stderr
    if adapters.template_heuristic_registry is None:
        assert summary["fixes"][RECORD] == "not needed"
        return
    assert summary["fixes"][RECORD] == "applied"
    # without the record, the same compile logs the error (so the check above can fail)
    done, summary = _codegen(tmp_path, "without", "--without-fix", RECORD)
    assert summary["fixes"][RECORD] == "skipped"
    assert f"{NO_HEURISTIC} - template_name=triton::bmm, device_type=npu" in done.stderr
