"""This package's NPU C++ wrapper: Inductor's GPU C++ wrapper with every Triton kernel loaded and launched by ACL.

Everything but the kernel load and launch is upstream's (argument handling, symbolic grids, memory planning). The
per-kernel call wrappers Inductor defers until autotuning is done are re-classed to :class:`NpuTritonCall` just
before they are generated (``finalize_prefix``), on every torch line: that is the one override point the lines
share (2.7 generates them from ``generate_kernel_call``, 2.8+ from ``_generate_kernel_call_helper``). The launch
itself is ``npu_launch.render_launch``, fed by the kernel's launch metadata that ``autotuner-kernel-metadata``
stored in its saved params.

Imported only when a C++ wrapper is created for "npu" (it imports Inductor).
"""

from __future__ import annotations

from typing import Any

import sympy
import torch
from torch._inductor.codegen import cpp_wrapper_gpu as gpu
from torch._inductor.codegen.common import DeviceOpOverrides
from torch._inductor.codegen.cpp_utils import cexpr
from torch._inductor.virtualized import V

from npu_inductor_compat.common.kernel_metadata import read_saved_launch_metadata
from npu_inductor_compat.common.launch_fixes import NPU_WRAPPER_HEADER
from npu_inductor_compat.common.npu_launch import NAMESPACE, ArgField, render_launch, runtime_source

# How triton-ascend passes scalar kernel arguments (by signature): sub-32-bit floats travel as float, i1 as int32.
SIGNATURE_CTYPES = {
    "i1": "int32_t",
    "i8": "int8_t",
    "i16": "int16_t",
    "i32": "int32_t",
    "i64": "int64_t",
    "u1": "uint32_t",
    "u8": "uint8_t",
    "u16": "uint16_t",
    "u32": "uint32_t",
    "u64": "uint64_t",
    "fp16": "float",
    "bf16": "float",
    "fp32": "float",
    "fp64": "double",
}

BANNER = (
    '// Generated for device "npu" by npu_inductor_compat\'s NPU C++ wrapper: Triton kernels are loaded and launched\n'
    "// through ACL, with workspace and sync-block locks allocated and initialised on the launch stream.\n"
)
STREAM_GETTER = "aoti_torch_get_current_npu_stream"  # torch_npu's C shim (2.7.1.post11, 2.9.0.post9, 2.12.0.post3)


class NpuLaunchError(RuntimeError):
    """The NPU C++ wrapper cannot launch a kernel as asked; the message names the kernel."""


class NpuCppDeviceOps(DeviceOpOverrides):  # type: ignore[misc]
    """The C++ side of device "npu": ACL types, the launch runtime prelude, torch_npu's stream getter."""

    def cpp_stream_type(self) -> str:
        return "aclrtStream"

    def cpp_kernel_type(self) -> str:
        return "aclrtFuncHandle"

    def cpp_device_ptr(self) -> str:
        return "void*"

    def aoti_get_stream(self) -> str:
        return STREAM_GETTER

    def kernel_driver(self) -> str:
        getter = f'extern "C" AOTITorchError {STREAM_GETTER}(int32_t device_index, void** ret_stream);'
        return f"{runtime_source()}\n{getter}\n"

    def tma_descriptor_helpers(self) -> str:
        raise NpuLaunchError("TMA descriptors are a CUDA feature; NPU kernels take none")

    def cpp_scratch(self, *args: Any, **kwargs: Any) -> None:
        return None  # triton-ascend kernels take no global/profile scratch; workspace comes from the metadata


NPU_CPP_DEVICE_OPS = NpuCppDeviceOps()


# SoCs whose kernels take no FFTS address (triton-ascend python/.../backends/ascend/utils.py, is_ffts_supported and
# force_disable_ffts: Ascend910A and Ascend310B4, and the 910_95 / 950 family).
NO_FFTS_ARCHS = ("Ascend910A", "Ascend310B4")
NO_FFTS_FAMILIES = ("910_95", "950")
FFTS_ENV = "TRITON_DISABLE_FFTS"
ARCH_ENV = "TRITON_ASCEND_ARCH"
ALL_BLOCKS_PARALLEL_ENV = "TRITON_ALL_BLOCKS_PARALLEL"


def env_switch(name: str) -> bool:
    """triton-ascend's on/off variables: on is 1/true, off is unset, empty, 0 or false (any case); anything else is
    an error, since triton-ascend's own readers disagree on it (3.2.0's grid check treats "false" as on)."""
    from npu_inductor_compat.envflags import env_flag

    try:
        return env_flag(
            name, False, on=("1", "true"), off=("0", "false"), expected="expected 1 or true (on), 0 or false (off)"
        )
    except ValueError as err:
        raise NpuLaunchError(str(err)) from None


def ffts_decision() -> tuple[bool, str]:
    """Whether kernels take the hardware sync (FFTS) address first, and whose answer that is. The kernel's compiler
    decides (it adds --disable-ffts otherwise), so in order: triton-ascend's own answer where it is the installed
    ``triton``; torch_npu's ``_inductor.utils.triton_support_ffts`` where the provider has one; else triton-ascend's
    rule applied here: off when TRITON_DISABLE_FFTS is on or TRITON_ASCEND_ARCH names a SoC without FFTS, on
    otherwise (triton-ascend's is_ffts_supported("") is True)."""
    import importlib
    import importlib.util
    import os

    try:
        ascend = importlib.util.find_spec("triton.backends.ascend.utils")
    except (ImportError, ValueError):
        ascend = None
    if ascend is not None:
        utils = importlib.import_module("triton.backends.ascend.utils")
        if hasattr(utils, "triton_support_ffts"):
            return bool(utils.triton_support_ffts()), "triton-ascend's triton_support_ffts()"
        arch = utils.get_ascend_arch_from_env()
        answer = bool(utils.is_ffts_supported(arch)) and not bool(utils.force_disable_ffts())
        return answer, "triton-ascend's is_ffts_supported() and force_disable_ffts()"
    from npu_inductor_compat.common import torch_npu_names
    from npu_inductor_compat.common.providers import TORCH_NPU, active_provider

    if active_provider() is TORCH_NPU:
        try:
            support = torch_npu_names.first_defined("triton-support-ffts")
        except ImportError:
            support = None  # releases without it pass the address (their wrapper always does)
        if support is not None:
            return bool(support()), "torch_npu's triton_support_ffts()"
    if env_switch(FFTS_ENV):
        return False, f"{FFTS_ENV} is on"
    arch = os.environ.get(ARCH_ENV, "")
    if arch in NO_FFTS_ARCHS or any(family in arch for family in NO_FFTS_FAMILIES):
        return False, f"{ARCH_ENV}={arch} has no FFTS"
    return True, f"triton-ascend's rule: FFTS unless {FFTS_ENV} or a SoC without it ({ARCH_ENV}={arch or 'unset'})"


class NpuTritonCall(gpu.DeferredTritonCallWrapper):  # type: ignore[misc]
    """Upstream's deferred call wrapper (signature, grid) with the kernel loaded and launched through ACL."""

    def generate(self, wrapper: Any) -> Any:
        if V.graph.aot_mode:
            raise NpuLaunchError(
                f"kernel {self.kernel_name}: AOTInductor packaging for NPU is not supported by npu_inductor_compat's "
                "C++ wrapper (JIT cpp_wrapper only)"
            )
        from torch._inductor.codecache import CudaKernelParamCache

        if not self.kernel_name.startswith("multi_kernel_") and not CudaKernelParamCache.get(self.kernel_name):
            raise NpuLaunchError(
                f"kernel {self.kernel_name}: no saved launch parameters. The NPU C++ wrapper needs each kernel "
                "compiled and its metadata saved at compile time (fix cpp-wrapper-workspace-locks asks Inductor to "
                "autotune at compile time for npu graphs); was triton.autotune_at_compile_time forced off?"
            )
        return super().generate(wrapper)

    def generate_grid(self, prefix: Any, inductor_meta: dict[str, Any], params: dict[str, Any]) -> None:
        """Upstream's grid, each dimension computed in 64 bits and range-checked before it is narrowed (upstream
        assigns the expression to a uint32_t unchecked)."""
        from torch._inductor.runtime.triton_heuristics import GridExpr

        grid = GridExpr.from_meta(inductor_meta, params["config"], mode="cpp")
        for line in grid.prefix:
            prefix.writeline(line)
        kernel = gpu.cpp_string_literal(self.kernel_name)
        for axis, expression in enumerate((grid.x_grid, grid.y_grid, grid.z_grid)):
            prefix.writeline(
                f"const uint32_t grid_{axis} = {NAMESPACE}::grid_dim(static_cast<int64_t>({expression}), {axis}, "
                f"{kernel});"
            )
        prefix.writeline("if (grid_0 == 0 || grid_1 == 0 || grid_2 == 0) return;")

    def generate_load_kernel(self, prefix: Any, kernel_var_name: str, params: dict[str, Any]) -> None:
        from torch._inductor.codecache import get_cpp_wrapper_cubin_path_name

        meta = read_saved_launch_metadata(self.kernel_name, params)
        binary = gpu.cpp_string_literal(params[get_cpp_wrapper_cubin_path_name()])
        name = gpu.cpp_string_literal(params["mangled_name"])
        mode = gpu.cpp_string_literal(meta.mix_mode)
        prefix.writeline(f"if ({kernel_var_name} == nullptr) {{")
        with prefix.indent():
            prefix.writeline(f"{kernel_var_name} = {NAMESPACE}::load_kernel({binary}, {name}, {mode}, cubin_dir_);")
        prefix.writeline("}")

    def generate_launch_kernel(self, prefix: Any, wrapper: Any, kernel_var_name: str, params: dict[str, Any]) -> None:
        triton_meta = params["triton_meta"]
        type_of = dict(zip(params["def_args"], self.arg_types, strict=False))
        # like upstream: the C++ wrapper passes no constexpr/equal-to-1 constants
        call_args = [name for name in params["call_args"] if name not in triton_meta["constants"]]
        missing = [name for name in call_args if name not in type_of]
        if missing:
            raise NpuLaunchError(f"kernel {self.kernel_name}: no argument type for {', '.join(missing)}")
        signature = triton_meta["signature"]
        fields = wrapper.npu_arg_fields(
            prefix,
            self.kernel_name,
            call_args,
            [type_of[name] for name in call_args],
            [signature[n] for n in call_args],
        )
        meta = read_saved_launch_metadata(self.kernel_name, params)
        prefix.splice(
            render_launch(
                meta,
                kernel_var_name,
                fields,
                ffts=wrapper.npu_ffts,
                all_blocks_parallel=wrapper.npu_all_blocks_parallel,
            )
        )


class CppWrapperNpu(gpu.CppWrapperGpu):  # type: ignore[misc]
    """Inductor's GPU C++ wrapper for device "npu", launching through ACL with workspace and sync-block locks."""

    def __init__(self) -> None:
        self.npu_ffts, self.npu_ffts_reason = ffts_decision()
        self.npu_all_blocks_parallel = env_switch(ALL_BLOCKS_PARALLEL_ENV)
        super().__init__()

    # Upstream's __init__ assigns both (from get_gpu_type() and the registered Python-side op overrides) and writes
    # the header right away, so they are fixed here rather than set after it.
    @property
    def device(self) -> str:
        return "npu"

    @device.setter
    def device(self, value: str) -> None:
        pass

    @property
    def device_codegen(self) -> NpuCppDeviceOps:
        return NPU_CPP_DEVICE_OPS

    @device_codegen.setter
    def device_codegen(self, value: Any) -> None:
        pass

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> CppWrapperNpu:
        return CppWrapperNpu()

    def write_header(self) -> None:
        super().write_header()
        if not V.graph.is_const_graph:
            self.header.splice(BANNER)
            ffts = "passed" if self.npu_ffts else "not passed"
            self.header.writeline(f"// FFTS address {ffts} ({self.npu_ffts_reason}).")
            if self.npu_all_blocks_parallel:
                self.header.writeline(f"// {ALL_BLOCKS_PARALLEL_ENV}: blockDim capped at the physical core count.")

    @staticmethod
    def get_device_include_path(device: str) -> str:
        if V.graph.aot_mode:
            raise NpuLaunchError("AOTInductor packaging for NPU is not supported by npu_inductor_compat's C++ wrapper")
        # torch has no cpp_wrapper/npu.h: the common wrapper header, then our own runtime (kernel_driver)
        return f"#include <{NPU_WRAPPER_HEADER}>"

    def finalize_prefix(self) -> None:
        for call in self._triton_call_wrappers.values():
            if type(call) is gpu.DeferredTritonCallWrapper:
                call.__class__ = NpuTritonCall
        super().finalize_prefix()

    def npu_arg_fields(
        self, code: Any, kernel: str, call_args: list[Any], arg_types: list[Any], signatures: list[Any]
    ) -> list[ArgField]:
        """Declare each kernel argument's value and return its slot in the packed argument struct."""
        fields = []
        for index, (arg, arg_type, signature) in enumerate(zip(call_args, arg_types, signatures, strict=True)):
            var = f"var_{next(self.arg_var_id)}"
            field = f"arg_{index}"
            if isinstance(arg_type, torch.dtype):
                code.writeline(f"void* {var} = reinterpret_cast<void*>({arg}.data_ptr());")
                fields.append(ArgField("void*", field, var))
                continue
            ctype = SIGNATURE_CTYPES.get(signature) if isinstance(signature, str) else None
            if isinstance(arg_type, gpu.UnwrapUnspecArg):
                self.codegen_tensor_item(arg_type.dtype, arg, f"{var}_item", indented_buffer=code)
                value = f"{var}_item"
            elif ctype is not None or arg_type in (int, float, sympy.Integer, sympy.Float) or arg_type is bool:
                value = cexpr(arg) if not isinstance(arg, str) else arg
            else:
                raise NpuLaunchError(
                    f"kernel {kernel}: argument {arg!r} (type {arg_type!r}, signature {signature!r}) has no NPU launch "
                    f"type; known scalar signatures: {', '.join(SIGNATURE_CTYPES)}"
                )
            if ctype is None:
                ctype = "float" if arg_type in (float, sympy.Float) else "int32_t"
            code.writeline(f"{ctype} {var} = static_cast<{ctype}>({value});")
            fields.append(ArgField(ctype, field, var))
        return fields


class CppWrapperNpuSplitIncludes(CppWrapperNpu):
    """For lines whose Inductor asks for the JIT and the AOT include separately (2.13 and newer: both are written,
    one per buffer; 2.12, on the same line, still asks get_device_include_path and never calls these)."""

    @staticmethod
    def get_device_include_path_jit(device: str) -> str:
        return f"#include <{NPU_WRAPPER_HEADER}>"

    @staticmethod
    def get_device_include_path_aot(device: str) -> str:
        return "// AOTInductor packaging for NPU is not supported by npu_inductor_compat's C++ wrapper"

    @staticmethod
    def create(*args: Any, **kwargs: Any) -> CppWrapperNpuSplitIncludes:
        return CppWrapperNpuSplitIncludes()
