"""The ``npu_backend`` Inductor option: injected into ``torch._inductor.config`` so ``torch.compile`` accepts it.

``torch.compile(..., options={"npu_backend": "ascendc"})`` is validated by Inductor's own option check, which calls
``isinstance(value, <the option's value_type>)``. The value type below answers that check by validating the name, so
a typo fails at ``torch.compile`` with the list of valid backends instead of much later.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

OPTION = "npu_backend"
CONFIG_MODULE = "torch._inductor.config"


class _ValidatesBackendName(type):
    def __instancecheck__(cls, value: object) -> bool:
        from npu_inductor_compat.common.backends import normalise

        normalise(value, f"torch.compile option {OPTION!r}")  # raises ValueError naming the valid backends
        return True


class NpuBackendName(str, metaclass=_ValidatesBackendName):
    """The value type of the ``npu_backend`` option: a backend name from the table in common.backends."""


def _new_config_entry(default: Any, value_type: type, name: str) -> Any:
    """COMPAT(>= 2.12): ``_ConfigEntry(config, name)`` (a ContextVar per option); before that ``_ConfigEntry(config)``.
    COMPAT(>= 2.10): ``_Config`` is keyword-only, so keywords are passed on every line.
    CAN REMOVE when MIN_SUPPORTED >= (2, 12): always pass the name.
    """
    from torch.utils._config_module import _Config, _ConfigEntry

    config = _Config(default=default, value_type=value_type)
    if "name" in inspect.signature(_ConfigEntry.__init__).parameters:
        return _ConfigEntry(config, name)
    return _ConfigEntry(config)


def _config_hash_dirty() -> None:
    """The config hash (part of Inductor's FX-graph cache key) and the option dict are memoised; adding or removing
    an option must invalidate them.

    COMPAT(>= 2.13): the memo flags became ContextVars (``_hash_dirty_var``, ``_get_dict_dirty_keys_var``; checked
    in 2.13.0 and 2.14.1, 2.12.1 still has ``_is_dirty``); None dirty keys means "recompute everything".
    CAN REMOVE when MIN_SUPPORTED >= (2, 13): keep only the ContextVar branch.
    """
    config: Any = sys.modules.get(CONFIG_MODULE)
    if config is None:
        return
    if hasattr(config, "_hash_dirty_var"):
        config._hash_dirty_var.set(True)
        config._get_dict_dirty_keys_var.set(None)
    else:
        config._is_dirty = True


def _torch_npu_defined_it() -> bool:
    # torch_npu injects its own npu_backend entry when its _inductor package loads; then ours is not needed.
    import torch._inductor.config as config

    return OPTION in config._config


def current_value() -> str | None:
    """The option's value if it has been injected and set, without importing Inductor to find out."""
    config = sys.modules.get(CONFIG_MODULE)
    if config is None or OPTION not in getattr(config, "_config", {}):
        return None
    value = getattr(config, OPTION)
    # Ours defaults to None, torch_npu's own entry to "default": both mean "not chosen by the option".
    if value is None or value == "default":
        return None
    return str(value)


def _switch_backend_per_compile(original: Any) -> Any:
    """Wrap the compile entry Dynamo hands each graph to, so that ``options={"npu_backend": ...}`` selects the
    backend for that compile (when the package is active): its layers are switched in before Inductor lowers."""

    @wraps_original(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        wanted = self.config.get(OPTION)
        if wanted is not None and wanted != "default":
            from npu_inductor_compat.activation import switch_backend

            switch_backend(wanted, f"torch.compile option {OPTION!r}")
        return original(self, *args, **kwargs)

    return __call__


OPTION_RECORD = Patch(
    id="npu-backend-option",
    layer="config",
    why="torch.compile rejects unknown options; users select the NPU backend with options={'npu_backend': ...}",
    upstream="torch_npu _dynamo.py injects npu_backend by patching ConfigModule.get_config_copy (PR 40264)",
    remove_when="never while torch has no per-device compile option routed through torch.compile(options=...)",
    changes=(
        Change(
            f"{CONFIG_MODULE}:_config",
            lambda _old: _new_config_entry(None, NpuBackendName, OPTION),
            kind="dict_item",
            key=OPTION,
            must_exist=False,
        ),
    ),
    upstream_has_fix=_torch_npu_defined_it,
    refresh=_config_hash_dirty,
)

PER_COMPILE_RECORD = Patch(
    id="npu-backend-per-compile",
    layer="config",
    why="options={'npu_backend': ...} must select the backend for that compile, not only at activation",
    upstream="torch_npu _dynamo.py _NpuBackendScope around _TorchCompileInductorWrapper.__call__ (PR 40264)",
    remove_when="never while the backend is a process-wide choice made through torch.compile options",
    changes=(Change("torch:_TorchCompileInductorWrapper.__call__", _switch_backend_per_compile),),
)
