"""Our launch decisions against triton-ascend's own launcher generator (pure Python, run in a child where the
installed release is ``triton``, its core-count query stood in), per release: FFTS slot, lock start value, SIMT
dynamic unified buffer. No NPU or CANN here: this is the real component one level below the launch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from npu_compat_test_paths import TESTS

pytestmark = [pytest.mark.subprocess, pytest.mark.download, pytest.mark.once]

PROBE = TESTS / "triton_ascend" / "launcher_probe.py"
ARCHS = ["", "Ascend910B3", "Ascend910_9392", "Ascend310B4", "Ascend910_9579"]  # in 3.2.0's valid_arch_list
SIMT = [
    {"parallel_mode": "simd"},
    {"parallel_mode": "simt"},
    {"parallel_mode": "mix_simd_simt"},
    {"parallel_mode": "simt", "force_simt_only": True},
]


@pytest.fixture(scope="module")
def triton_ascend() -> Any:
    from npu_inductor_compat.tools.simulated.kernels import triton_ascend_site

    try:
        return triton_ascend_site.locate()
    except triton_ascend_site.KernelCheckUnavailable as err:
        pytest.skip(f"triton-ascend is not available: {err}")


def _known_fields(site: Path) -> set[str]:
    """The fields this release's compiler can record: NPUOptions' fields and what its stages add by name."""
    compiler = (site / "triton" / "backends" / "ascend" / "compiler.py").read_text()
    options = re.search(r"class NPUOptions\b.*?(?=\n(?:class|def) )", compiler, re.S)
    assert options is not None, "no NPUOptions in triton-ascend's compiler"
    fields = set(re.findall(r"^\s{4}(\w+)\s*:", options.group(0), re.M))
    fields |= set(re.findall(r"metadata,\s*\"(\w+)\"\)", compiler))  # __get_metadata_attr_by_callback(...)
    fields |= set(re.findall(r"metadata\[\"(\w+)\"\]\s*=", compiler))
    return fields


@pytest.fixture(scope="module")
def asked(triton_ascend: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every case asked of both launchers in one child process."""
    known = _known_fields(triton_ascend.root)
    base = {"name": "k aiv", "mix_mode": "aiv", "workspace_size": 64, "compile_on_910_95": False}
    base.update(parallel_mode="simd", force_simt_only=False)
    cases = []
    for arch in ARCHS:
        for disable in ("", "1"):
            env = {"TRITON_ASCEND_ARCH": arch, "TRITON_DISABLE_FFTS": disable}
            cases.append({"kind": "ffts", "metadata": base, "env": env})
    for mode in SIMT:
        for on_910_95 in (False, True):
            metadata = {**base, "lock_num": 2, "lock_init_val": 5, **mode, "compile_on_910_95": on_910_95}
            if "shared_mem_dynamic_size" in known:
                metadata["shared_mem_dynamic_size"] = 8192
            cases.append({"kind": "simt", "metadata": metadata, "env": {}})
    for value in (0, 5, 7):
        metadata = {**base, "lock_num": 3, "lock_init_val": value, "parallel_mode": "simd"}
        cases.append({"kind": "lock", "metadata": metadata, "env": {}})
    for case in cases:  # only what this release's compiler writes (3.2.0 records no unified-buffer size, ...)
        case["metadata"] = {k: v for k, v in case["metadata"].items() if k in known or k == "name"}
    path = tmp_path_factory.mktemp("launcher") / "cases.json"
    path.write_text(json.dumps(cases))
    env = {key: value for key, value in os.environ.items() if key not in ("TRITON_ASCEND_ARCH", "TRITON_DISABLE_FFTS")}
    if triton_ascend.site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(triton_ascend.site), env.get("PYTHONPATH")]))
    env["NPU_INDUCTOR_COMPAT_AUTOLOAD"] = "0"
    done = subprocess.run(
        [sys.executable, str(PROBE), str(path)], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for case, result in zip(cases, found["results"], strict=True):
        result.update(case)
    found["version"] = triton_ascend.version
    found["driver"] = (triton_ascend.root / "triton" / "backends" / "ascend" / "driver.py").read_text()
    return found


def _of(asked: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    found = [result for result in asked["results"] if result["kind"] == kind]
    assert found, kind
    return found


def test_the_ffts_address_is_passed_exactly_when_the_installed_triton_ascend_passes_it(asked: dict[str, Any]) -> None:
    """Per SoC and TRITON_DISABLE_FFTS, the installed release's own answer (not this package's fallback table)."""
    answers = set()
    for result in _of(asked, "ffts"):
        assert result["ours"]["ffts"] == result["launcher"]["ffts"], (asked["version"], result)
        assert "triton-ascend's" in result["ours"]["ffts_reason"], result
        answers.add(result["launcher"]["ffts"])
    assert answers == {True, False}  # the cases reach both answers


def test_simt_kernels_get_a_dynamic_unified_buffer_exactly_when_the_launcher_gives_one(asked: dict[str, Any]) -> None:
    """triton-ascend gives it to SIMT kernels compiled for 910_95 only, and with 216 KiB where its compiler records no
    size (3.2.0); a launch attribute for another SoC's kernel is a launch it never makes."""
    answers = set()
    for result in _of(asked, "simt"):
        assert result["ours"]["dynamic_unified_buffer"] == result["launcher"]["dynamic_unified_buffer"], (
            asked["version"],
            result,
        )
        answers.add(result["launcher"]["dynamic_unified_buffer"] is not None)
    assert answers == {True, False}


def test_locks_start_at_the_value_the_kernels_compiler_recorded(asked: dict[str, Any]) -> None:
    """The kernel library tells its compiler what its locks must start at (_infer_sync_block_lock_init_function),
    recorded under ``compiler_lock_init_key``; our launch starts them there. Where the release's own launcher starts
    them elsewhere, that is because it reads another field name (triton-ascend 3.2.0 and main read
    ``lock_init_value``, which their compiler never writes, so they start at 0): shown here from its source."""
    key = asked["compiler_lock_init_key"]
    assert key, "the compiler records no lock init value"
    read = re.findall(r"metadata\.(\w*lock_init\w*)", asked["driver"])
    assert read, "the launcher reads no lock init value"
    for result in _of(asked, "lock"):
        recorded = result["metadata"][key]
        assert result["ours"]["lock_init"] == recorded, result
        launcher = result["launcher"]["lock_init"]
        assert launcher == result["metadata"].get(read[0], 0), result  # the launcher's value is the field it reads
        if launcher != recorded:
            assert read[0] != key, result
