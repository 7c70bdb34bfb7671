"""Zero-touch activation: torch's device-backend autoload (entry point ``torch.backends``) calls ``autoload()`` at
the end of ``import torch``, which only *arms* activation; the first graph involving an "npu" tensor activates."""

from __future__ import annotations

import logging
import threading
from typing import Any

from npu_inductor_compat import hooks
from npu_inductor_compat.envflags import env_flag
from npu_inductor_compat.npu_graph import graph_uses_npu

# What `import torch` pays for this module is its own import and two setattrs: it imports no other module of the package
# but three leaves (the journal, records and targets load at activation), nothing torch has not imported already
# (tests/compat/test_autoload.py keeps the set exact). So the hook is not a journal record: arm() keeps the two
# originals and disarm() puts them back, exactly, under the same rule as the journal's undo.

log = logging.getLogger("npu_inductor_compat")

AUTOLOAD_ENV = "NPU_INDUCTOR_COMPAT_AUTOLOAD"
OPTION = "npu_backend"
OWNER = "_TorchCompileInductorWrapper"  # in torch/__init__.py: arming imports no torch._inductor module
_armed: dict[str, tuple[Any, Any]] = {}  # attribute -> (torch's original, our wrapper), while armed
_lock = threading.Lock()


def autoload_enabled() -> bool:
    """Whether the entry point arms activation. A value that is not a valid switch is warned about (raising would
    break ``import torch``) and taken as off: whoever set the variable most likely meant to opt out."""
    try:
        return env_flag(AUTOLOAD_ENV, default=True)
    except ValueError as err:
        log.warning("npu_inductor_compat: %s; zero-touch activation is not armed", err)
        return False


def _activate_on_first_npu_graph(original: Any) -> Any:
    def __call__(self: Any, model_: Any, inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        from npu_inductor_compat.activation import activate, is_active

        if not is_active() and graph_uses_npu(model_, inputs_):
            log.info("npu_inductor_compat: first graph on npu: activating (zero-touch autoload)")
            activate()
        return original(self, model_, inputs_, *args, **kwargs)

    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    return __call__


def _activate_when_the_option_is_first_read(original: Any) -> Any:
    def apply_options(self: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
        from npu_inductor_compat.activation import activate, is_active

        # torch.compile validates options when it is called, before any graph exists: the option must exist then.
        if options and OPTION in options and not is_active():
            from npu_inductor_compat.common.composition.backend_table import normalise

            # a bad value is rejected before anything is applied, naming where it came from
            normalise(options[OPTION], f"torch.compile option {OPTION!r}")
            log.info("npu_inductor_compat: torch.compile got the npu_backend option: activating (zero-touch)")
            activate()
        return original(self, options, *args, **kwargs)

    apply_options.__wrapped__ = original  # type: ignore[attr-defined]
    return apply_options


# attribute of torch._TorchCompileInductorWrapper -> its wrapper
WRAPPERS = {"__call__": _activate_on_first_npu_graph, "apply_options": _activate_when_the_option_is_first_read}


def armed() -> bool:
    return bool(_armed)


def arm() -> None:
    """Wrap the compile entry and its option check; idempotent, all or nothing.

    Arming is one wrapper on the compile entry Dynamo hands every graph to
    (``torch._TorchCompileInductorWrapper.__call__``, defined in ``torch/__init__.py``, so arming imports no
    ``torch._inductor`` module). The first graph that involves an "npu" tensor activates the package, with the
    backend selected as usual, and so does the first ``torch.compile(..., options={"npu_backend": ...})`` (torch
    validates options at that call, so the option must exist by then); graphs for other devices pass straight through.
    """
    import torch

    owner = getattr(torch, OWNER)
    with _lock:
        if _armed:
            return
        made = {name: (owner.__dict__[name], wrap(owner.__dict__[name])) for name, wrap in WRAPPERS.items()}
        for name, (_, wrapper) in made.items():
            setattr(owner, name, wrapper)
        _armed.update(made)
    hooks.on_deactivate(disarm)


def disarm() -> None:
    """Put torch's originals back (the very objects); a later wrapper over ours is warned about and replaced, as
    the journal's undo does."""
    import torch

    owner = getattr(torch, OWNER)
    with _lock:
        for name, (original, wrapper) in _armed.items():
            if owner.__dict__.get(name) is not wrapper:
                log.warning(
                    "npu_inductor_compat: torch.%s.%s was replaced by someone else after the zero-touch hook; "
                    "restoring the original anyway",
                    OWNER,
                    name,
                )
            setattr(owner, name, original)
        _armed.clear()


def autoload() -> None:
    """The ``torch.backends`` entry point. Must never break ``import torch``: failures are logged, not raised.

    Opt out with ``NPU_INDUCTOR_COMPAT_AUTOLOAD=0`` (or torch's own ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``). An explicit
    ``activate()`` works as before and wins: once active, the hook does nothing; ``deactivate()`` disarms it too.
    Because activation waits for the first NPU compile, it happens after every autoload entry point (torch_npu's
    included) has run, whatever order torch loads them in.
    """
    if not autoload_enabled():
        log.debug("npu_inductor_compat: autoload disabled by %s", AUTOLOAD_ENV)
        return
    try:
        arm()
    except Exception as err:  # a broken hook must not make `import torch` fail for every user of this machine
        log.warning("npu_inductor_compat: zero-touch activation not armed: %r", err)
