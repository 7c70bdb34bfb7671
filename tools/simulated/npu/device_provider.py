"""The simulated NPU as a device provider: its Dynamo interface, and the records it needs to generate code at all."""

# Runtime code finds it through the provider registry (common/composition/providers.py) while it is set up in this
# process.

from __future__ import annotations

from typing import Any

import torch

from npu_inductor_compat.common.composition.providers import DeviceProvider, register_provider
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.tools.simulated.npu import device_interface, device_state

__all__ = ["PROVIDER", "interface_for_provider", "triton_key"]


def interface_for_provider() -> type:
    """The device's Dynamo interface, the device set up first."""
    device_state.ensure()
    interface: type = device_interface.SimulatedNpuInterface
    return interface


def triton_key() -> str:
    """Triton's cache key, read where torch reads it."""
    from torch._inductor.runtime import triton_compat

    # COMPAT(>= 2.9): torch wraps Triton's key in triton_compat (newer Triton moved it).
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [block]: 2.7 and 2.8 read it from Triton
    if not hasattr(triton_compat, "triton_key"):
        from triton.compiler.compiler import triton_key

        return str(triton_key())
    # END CAN REMOVE
    return str(triton_compat.triton_key())


def _backend_hash_without_driver(original: Any) -> Any:
    @wraps_original(original)
    def triton_hash_with_backend() -> str:
        import hashlib

        return hashlib.sha256(f"{triton_key()}-{PROVIDER.name}".encode()).hexdigest().upper()

    return triton_hash_with_backend


def _seed_kernel_params(original: Any) -> Any:
    from npu_inductor_compat.tools.simulated.codegen.kernel_params import seed_instead_of_autotune

    return seed_instead_of_autotune(original)


def _records() -> tuple[Patch, ...]:
    return (
        Patch(
            id="simulated-triton-backend-hash",
            layer="simulated-npu",
            why="Inductor keys Triton kernels by the active Triton driver's hash; the simulated NPU has no driver",
            upstream="torch.utils._triton.triton_hash_with_backend (asks triton.runtime.driver.active)",
            remove_when="never while the simulated NPU has no Triton driver (codegen only)",
            changes=(Change("torch.utils._triton:triton_hash_with_backend", _backend_hash_without_driver),),
        ),
        Patch(
            id="simulated-kernel-params",
            layer="simulated-npu",
            why="cpp_wrapper launches every kernel once at compile time to save its launch parameters; nothing can "
            "be launched here, so each kernel's autotuner saves them from a simulated launcher instead",
            upstream="PythonWrapperCodegen.generate_and_run_autotune_block / CachingAutotuner.save_gpu_kernel",
            remove_when="never while the simulated NPU can neither compile nor launch kernels",
            changes=(
                Change(
                    "torch._inductor.codegen.wrapper:PythonWrapperCodegen.generate_and_run_autotune_block",
                    _seed_kernel_params,
                ),
            ),
        ),
    )


PROVIDER = DeviceProvider(
    name="simulated-npu",
    device_interface=interface_for_provider,
    raw_stream_import="from torch.npu import _get_current_raw_stream as {name}",
    summary="the simulated NPU (PrivateUse1 renamed npu, CPU memory underneath; codegen only)",
    records=_records,  # no codegen classes of its own: stock Inductor's, and this package's NPU C++ wrapper
)


def _set_up_in_this_process() -> bool:
    return bool(getattr(getattr(torch, "npu", None), device_state.MARK, False))


register_provider(PROVIDER, _set_up_in_this_process)
