"""Zero-touch activation: torch's device-backend autoload (entry point ``torch.backends``) calls ``autoload()`` at
the end of ``import torch``, which only *arms* activation; the first graph involving an "npu" tensor activates."""

# Arming is one wrapper on the compile entry Dynamo hands every graph to
# (``torch._TorchCompileInductorWrapper.__call__``, defined in ``torch/__init__.py``, so arming imports no
# ``torch._inductor`` module). The first graph that involves an "npu" tensor activates the package, with the backend
# selected as usual, and so does the first ``torch.compile(..., options={"npu_backend": ...})`` (torch validates
# options at that call, so the option must exist by then); graphs for other devices pass straight through.
#
# Opt out with ``NPU_INDUCTOR_COMPAT_AUTOLOAD=0`` (or torch's own ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). An explicit
# ``activate()`` works as before and wins: once active, the hook does nothing; ``deactivate()`` disarms it too.
# Because activation waits for the first NPU compile, it happens after every autoload entry point (torch_npu's
# included) has run, whatever order torch loads them in.

from __future__ import annotations

import logging
from typing import Any

from npu_inductor_compat.envflags import env_flag
from npu_inductor_compat.patching import Change, Patch, wraps_original
from npu_inductor_compat.state import STATE

log = logging.getLogger("npu_inductor_compat")

AUTOLOAD_ENV = "NPU_INDUCTOR_COMPAT_AUTOLOAD"
DEVICE = "npu"
OPTION = "npu_backend"


def autoload_enabled() -> bool:
    """Whether the entry point arms activation. A value that is not a valid switch is warned about (raising would
    break ``import torch``) and taken as off: whoever set the variable most likely meant to opt out."""
    try:
        return env_flag(AUTOLOAD_ENV, default=True)
    except ValueError as err:
        log.warning("npu_inductor_compat: %s; zero-touch activation is not armed", err)
        return False


def _is_npu(value: Any) -> bool:
    device = getattr(value, "device", None)
    return getattr(device, "type", None) == DEVICE


def graph_uses_npu(model: Any, inputs: Any) -> bool:
    """Whether a graph Dynamo hands to Inductor reads or makes a tensor on "npu" (inputs, then node values)."""
    if any(_is_npu(value) for value in inputs or ()):
        return True
    graph = getattr(model, "graph", None)
    for node in getattr(graph, "nodes", ()):
        meta = getattr(node, "meta", {})
        if _is_npu(meta.get("example_value")) or _is_npu(meta.get("val")):
            return True
    return False


def _activate_on_first_npu_graph(original: Any) -> Any:
    @wraps_original(original)
    def __call__(self: Any, model_: Any, inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        from npu_inductor_compat.activation import activate, is_active

        if not is_active() and graph_uses_npu(model_, inputs_):
            log.info("npu_inductor_compat: first graph on npu: activating (zero-touch autoload)")
            activate()
        return original(self, model_, inputs_, *args, **kwargs)

    return __call__


def _activate_when_the_option_is_first_read(original: Any) -> Any:
    @wraps_original(original)
    def apply_options(self: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
        from npu_inductor_compat.activation import activate, is_active

        # torch.compile validates options when it is called, before any graph exists: the option must exist then.
        if options and OPTION in options and not is_active():
            from npu_inductor_compat.dispatch import resolve

            # a bad value is rejected before anything is applied, naming where it came from
            resolve()[1].normalise_backend(options[OPTION], f"torch.compile option {OPTION!r}")
            log.info("npu_inductor_compat: torch.compile got the npu_backend option: activating (zero-touch)")
            activate()
        return original(self, options, *args, **kwargs)

    return apply_options


ARM = Patch(
    id="autoload-activate-on-npu-graph",
    layer="autoload",
    why=(
        "activate the NPU glue when Inductor first compiles an npu graph, or torch.compile first gets the "
        "npu_backend option, with no change to the user's script"
    ),
    upstream="torch_npu applies its Inductor patches when torch_npu._inductor is imported (about 7 s of imports)",
    remove_when="never: this is the zero-touch entry point",
    changes=(
        Change("torch:_TorchCompileInductorWrapper.__call__", _activate_on_first_npu_graph),
        Change("torch:_TorchCompileInductorWrapper.apply_options", _activate_when_the_option_is_first_read),
    ),
)


def armed() -> bool:
    return STATE.autoload_journal.is_applied(ARM.id)


def arm() -> None:
    STATE.autoload_journal.apply([ARM])


def disarm() -> None:
    STATE.disarm_autoload()


def autoload() -> None:
    """The ``torch.backends`` entry point. Must never break ``import torch``: failures are logged, not raised."""
    if not autoload_enabled():
        log.debug("npu_inductor_compat: autoload disabled by %s", AUTOLOAD_ENV)
        return
    try:
        arm()
    except Exception as err:  # a broken hook must not make `import torch` fail for every user of this machine
        log.warning("npu_inductor_compat: zero-touch activation not armed: %r", err)
