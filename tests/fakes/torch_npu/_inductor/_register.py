"""Registers a recognisable "npu" codegen backend, as torch_npu's backend packages do on import."""

from torch._inductor.codegen.common import register_backend_for_device
from torch._inductor.codegen.triton import TritonScheduling
from torch._inductor.codegen.wrapper import PythonWrapperCodegen


def register(tag: str) -> type:
    scheduling = type(f"{tag}Scheduling", (TritonScheduling,), {"backend_tag": tag})
    register_backend_for_device(device="npu", device_scheduling=scheduling, device_wrapper_codegen=PythonWrapperCodegen)
    return scheduling
