"""Ask an installed triton-ascend's own launcher generator, and this package, the same launch questions (tests only).

Usage: python launcher_probe.py CASES.json, with triton-ascend's directory first on PYTHONPATH; prints one JSON line.
"""

from __future__ import annotations

import json
import os
import re
import sys
import types
from typing import Any


class Cores:
    """The generator's only device query: the core counts it caps all-blocks-parallel grids with (NPUUtils builds a
    native module against CANN to ask ACL; the launch decisions probed here do not depend on the counts)."""

    def get_aicore_num(self) -> int:
        return 24

    def get_aivector_core_num(self) -> int:
        return 48


def _product(text: str) -> int:
    """An integer the launcher writes as a product of literals, e.g. ``216 * 1024``."""
    value = 1
    for factor in text.split("*"):
        value *= int(factor.strip().rstrip("UuLl"))
    return value


def launcher_answers(driver: Any, metadata: dict[str, Any]) -> dict[str, Any]:
    """What triton-ascend's generated launcher source does with ``metadata`` (signature: one pointer, one int)."""
    source = driver.generate_npu_wrapper_src({}, {0: "*fp32", 1: "i32"}, types.SimpleNamespace(**metadata))
    init = re.findall(r"lockInitData\(\s*[^,]+,\s*([^)]+)\)", source)
    memory = re.findall(r"localMemorySize\s*=\s*([^;]+);", source) + re.findall(r"dynUBufSize\s*=\s*([^;]+);", source)
    return {
        "ffts": re.search(r"void\s*\*\s*ffts_addr\s+__attribute__", source) is not None,
        "lock_init": int(init[0]) if init else None,
        "dynamic_unified_buffer": _product(memory[0]) if memory else None,
    }


def our_answers(metadata: dict[str, Any]) -> dict[str, Any]:
    from npu_inductor_compat.common.device import npu_cpp_wrapper
    from npu_inductor_compat.common.device.kernel_metadata import read_launch_metadata
    from npu_inductor_compat.common.device.npu_launch import ArgField, ordered_init, render_launch

    meta = read_launch_metadata("k", metadata)
    ffts, reason = npu_cpp_wrapper.ffts_decision()
    text = render_launch(meta, "kernel", [ArgField("void*", "x", "x"), ArgField("int32_t", "n", "n")], ffts=ffts)
    memory = re.findall(r"dynUBufSize = (\d+)U;", text)
    return {
        "ffts": "ffts_addr" in text,
        "ffts_reason": reason,
        "lock_init": ordered_init(meta) if meta.uses_locks else None,
        "dynamic_unified_buffer": int(memory[0]) if memory else None,
    }


def main() -> None:
    from triton.backends.ascend import compiler, driver

    driver.NPUUtils = Cores
    with open(sys.argv[1]) as file:
        cases = json.load(file)
    lock_key = re.search(
        r"_infer_sync_block_lock_init_function\",\s*metadata,\s*\"(\w+)\"", open(compiler.__file__).read()
    )
    results = []
    for case in cases:
        saved = dict(os.environ)
        os.environ.update(case.get("env", {}))
        try:
            launcher = launcher_answers(driver, case["metadata"])
            results.append({"launcher": launcher, "ours": our_answers(case["metadata"])})
        finally:
            os.environ.clear()
            os.environ.update(saved)
    print(json.dumps({"results": results, "compiler_lock_init_key": lock_key.group(1) if lock_key else None}))


if __name__ == "__main__":
    main()
