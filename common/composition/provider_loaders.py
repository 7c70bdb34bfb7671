"""The provider loaders (mlir, dvm, ascendc): one journal record per backend that imports the torch_npu package
registering that backend's codegen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.device.layer_shared import BACKEND_REGISTRIES, DEVICE, PR_40264
from npu_inductor_compat.patching import Change, Patch
from npu_inductor_compat.targets import Target


def _provider_loader(backend: str, steps: tuple[str, ...]) -> Patch:
    """Import the provider modules that register a backend: each step a module, or a ``"module:function"`` to call.

    Journaled as a registration: whatever they write for "npu" into Inductor's backend and interface registries
    is undone exactly. A module imported before registers only once, so its first registration is kept and
    replayed on re-activation.
    """
    first_seen: dict[str, Any] = {}
    parsed = tuple(Target.parse(step, attribute=False) for step in steps)

    def load(_import_module: Callable[[str], Any]) -> None:
        from torch._inductor.codegen import common

        for target in parsed:
            found = target.resolve()
            if target.qualname:
                found()
        if DEVICE in common.device_codegens:
            first_seen.setdefault("codegen", common.device_codegens[DEVICE])
        elif "codegen" in first_seen:
            common.device_codegens[DEVICE] = first_seen["codegen"]
        else:
            modules = ", ".join(target.module for target in parsed)
            raise ImportError(f"importing {modules} registered no 'npu' codegen for {backend}")

    return Patch(
        id=f"{backend}-provider-loader",
        layer=f"{backend}-loader",
        why=f"the {backend} backend's scheduling and wrappers come from torch_npu's {backend} package",
        upstream=f"_load_{backend}_backend in {PR_40264}",
        remove_when="never: this is how the backend is loaded",
        changes=(
            Change(
                "importlib:import_module",
                load,
                kind="registration",
                key=DEVICE,
                touches=(*BACKEND_REGISTRIES, "torch._dynamo.device_interface:device_interfaces"),
            ),
        ),
    )


_MLIR_REGISTER = torch_npu_names.qualname("mlir-plugin")
PROVIDER_LOADERS: dict[str, Patch] = {
    "mlir": _provider_loader("mlir", (_MLIR_REGISTER,)),
    "dvm": _provider_loader("dvm", (_MLIR_REGISTER, torch_npu_names.module_of("dvm-fusion"))),
    "ascendc": _provider_loader("ascendc", (torch_npu_names.module_of("ascendc-package"),)),
}
