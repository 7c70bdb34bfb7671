"""What the simulated NPU and its torch_npu stand-in do not simulate: the errors, and :data:`attribute_error`, through
which device.py raises one without importing the stand-in (standin.py puts its recording function there)."""

from __future__ import annotations

from collections.abc import Callable


class NotSimulatedError(Exception):
    """Something of torch_npu that the simulated NPU and its torch_npu stand-in do not simulate."""


class NotSimulated(NotSimulatedError, AttributeError):
    """An attribute of torch_npu or torch.npu that is not simulated (an AttributeError: hasattr answers False)."""


class NotSimulatedModule(NotSimulatedError, ModuleNotFoundError):
    """A torch_npu module that is not simulated (a ModuleNotFoundError)."""


def message(name: str) -> str:
    return (
        f"{name} is not simulated by npu_inductor_compat's stand-in for torch_npu (codegen runs the script on a "
        "simulated NPU: torch.npu's device, stream, event, seed, memory and option calls work; torch_npu's operators "
        "and its other modules and names do not)"
    )


def _unrecorded(qualified: str, name: str) -> NotSimulated:
    """Before the stand-in is imported no script can have imported torch_npu: nothing to record."""
    return NotSimulated(message(qualified), name=name)


# (qualified name, attribute) -> the error to raise; standin.py replaces it with its not_simulated_attribute, which
# also records the name when the script asked. Called straight from device.py's frame, so the stand-in's reading of
# who asked sees the same frames as when device.py called it directly.
attribute_error: Callable[[str, str], NotSimulated] = _unrecorded
