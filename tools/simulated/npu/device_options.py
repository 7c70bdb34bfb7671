"""torch_npu's options on the simulated NPU: recorded, so that a run can say what its script asked for, and they
change nothing."""

# torch_npu passes them to CANN (torch_npu._C._npu_setOption). torch.npu.config, .matmul and .conv (device.py)
# record theirs here too.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from npu_inductor_compat.tools.simulated.npu import device_state

__all__ = ["API", "recorded", "set_compile_mode", "set_option", "simulated_options"]

_options: dict[str, str] = {}


def simulated_options() -> dict[str, str]:
    """The torch_npu options the script set (set_option, set_compile_mode, config, matmul, conv), last value each."""
    with device_state.lock:
        return dict(_options)


def recorded(option: str) -> str | None:
    """The value last set for ``option``, None while it is unset."""
    with device_state.lock:
        return _options.get(option)


def set_option(option: Mapping[str, Any]) -> None:
    """torch_npu/npu/npu_config.py set_option (a dict of CANN options; recorded, names not checked)."""
    if not isinstance(option, Mapping):
        raise TypeError(f"torch.npu.set_option: the option must be a dict, got {type(option).__name__}")
    with device_state.lock:
        _options.update({str(key): str(value) for key, value in option.items()})


def set_compile_mode(jit_compile: bool = False) -> None:
    """torch_npu/npu/npu_config.py set_compile_mode: the "jitCompile" option."""
    set_option({"jitCompile": "enable" if jit_compile else "disable"})


# What torch.npu gets from this module (device.py builds torch.npu), each under its own name.
API = (set_option, set_compile_mode)
