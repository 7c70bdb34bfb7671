"""Survey checks for the C++ wrapper's fallback-call records (common/fixes/cpp_wrapper_scalar_returns.py,
cpp_wrapper_optional_lists.py): whether a torch_npu release replaces the torch code each one mends.
Each returns (carried, evidence); FIX_DETECTORS lists them."""

from __future__ import annotations

import re

from npu_inductor_compat.tools.torch_npu_survey.survey_sources import Sources


def _replacing(sources: Sources, name: str) -> list[str]:
    """torch_npu's _inductor files that define or assign ``name`` (a replacement of torch's function of that name)."""
    pattern = re.compile(rf"\bdef {name}\b|\.{name}\s*=(?!=)")
    found = [file for file in sources.py_files("torch_npu/_inductor") if pattern.search(sources.text(file) or "")]
    return [file.removeprefix("torch_npu/_inductor/") for file in found]


def scalar_returns_unnamed(sources: Sources) -> tuple[bool, str]:
    """Carried when torch_npu replaces both halves: the codegen of a fallback call and the Python op runner."""
    codegen = _replacing(sources, "generate_fallback_kernel_with_runtime_lookup")
    runner = _replacing(sources, "custom_op_wrapper")
    if codegen and runner:
        return True, f"fallback calls generated in {', '.join(codegen)}, ops run by {', '.join(runner)}"
    if not runner:
        return False, "torch's codecache.custom_op_wrapper is used as is (it refuses a number among an op's results)"
    return False, f"custom_op_wrapper replaced in {', '.join(runner)}, torch's fallback-call codegen used as is"


def optional_lists_built(sources: Sources) -> tuple[bool, str]:
    """Carried when a replacement of generate_py_arg handles optional types itself (ascendc's only post-edits what
    torch's generates)."""
    replaced = _replacing(sources, "generate_py_arg")
    handling = []
    for file in replaced:
        text = sources.text(f"torch_npu/_inductor/{file}") or ""
        body = text[text.index("def generate_py_arg") :].split("\n    def ", 1)[0]
        if "OptionalType" in body:
            handling.append(file)
    if handling:
        return True, f"generate_py_arg replaced, handling optional types, in {', '.join(handling)}"
    if replaced:
        return False, f"generate_py_arg replaced in {', '.join(replaced)}, passing optional lists to torch's as is"
    return False, "torch's CppWrapperCpu.generate_py_arg is used as is"
