"""The ``npu_backend`` Inductor option: injected into ``torch._inductor.config`` so ``torch.compile`` accepts it."""

# ``torch.compile(..., options={"npu_backend": "ascendc"})`` is validated by Inductor's own option check, which calls
# ``isinstance(value, <the option's value_type>)``. The value type below answers that check by validating the name, so
# a typo fails at ``torch.compile`` with the list of valid backends instead of much later.

from __future__ import annotations

import sys
from typing import Any

from npu_inductor_compat.common.composition.adapters import LineAdapters
from npu_inductor_compat.common.composition.backend_table import normalise
from npu_inductor_compat.hooks import compiling_with_backend
from npu_inductor_compat.npu_graph import graph_uses_npu
from npu_inductor_compat.patching import Change, Patch, wraps_original

OPTION = "npu_backend"
CONFIG_MODULE = "torch._inductor.config"


class _ValidatesBackendName(type):
    def __instancecheck__(cls, value: object) -> bool:
        normalise(value, f"torch.compile option {OPTION!r}")  # raises ValueError naming the valid backends
        return True


class NpuBackendName(str, metaclass=_ValidatesBackendName):
    """The value type of the ``npu_backend`` option: a backend name from common.composition.backend_table's table."""


# ------------------------------------------------------- line variants (chosen in common/composition/adapters.py)
# CAN REMOVE when MIN_SUPPORTED >= (2, 12) [next]: the lines up to 2.11 (v2_7_1, v2_9)
def config_entry_unnamed(default: Any, value_type: type, name: str) -> Any:
    """Lines up to 2.11: ``_ConfigEntry(config)``. ``_Config`` takes keywords (keyword-only from 2.10)."""
    from torch.utils._config_module import _Config, _ConfigEntry

    return _ConfigEntry(_Config(default=default, value_type=value_type))


def config_entry_named(default: Any, value_type: type, name: str) -> Any:
    """Lines from 2.12: ``_ConfigEntry(config, name)`` (each option is backed by its own ContextVar)."""
    from torch.utils._config_module import _Config, _ConfigEntry

    return _ConfigEntry(_Config(default=default, value_type=value_type), name)


# CAN REMOVE when MIN_SUPPORTED >= (2, 13) [next]: the releases up to 2.12
def config_memo_flag_dirty() -> None:
    """Up to 2.12: the config hash (part of Inductor's FX-graph cache key) and the option dict are memoised behind
    ``_is_dirty``; adding or removing an option must invalidate them."""
    config: Any = sys.modules.get(CONFIG_MODULE)
    if config is not None:
        config._is_dirty = True


def config_memo_contextvars_dirty() -> None:
    """From 2.13: the memo flags are ContextVars (``_hash_dirty_var``, ``_get_dict_dirty_keys_var``; None dirty
    keys means "recompute everything")."""
    config: Any = sys.modules.get(CONFIG_MODULE)
    if config is not None:
        config._hash_dirty_var.set(True)
        config._get_dict_dirty_keys_var.set(None)


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
    backend for that compile. Only graphs that touch an npu tensor are affected: any other graph compiles exactly as
    without this package, whatever the option says. An npu compile holds the package's selection lock from the
    switch to the end of the compile, so a concurrent compile cannot switch the layers under it."""

    @wraps_original(original)
    def __call__(self: Any, model_: Any, inputs_: Any, *args: Any, **kwargs: Any) -> Any:
        if not graph_uses_npu(model_, inputs_):
            return original(self, model_, inputs_, *args, **kwargs)
        wanted = self.config.get(OPTION)
        if wanted == "default":
            wanted = None
        with compiling_with_backend(wanted, f"torch.compile option {OPTION!r}"):
            return original(self, model_, inputs_, *args, **kwargs)

    return __call__


def option_record(adapters: LineAdapters) -> Patch:
    """The record injecting the option, with the running line's config entry and memo refresh."""
    return Patch(
        id="npu-backend-option",
        layer="config",
        why="torch.compile rejects unknown options; users select the NPU backend with options={'npu_backend': ...}",
        upstream="torch_npu _dynamo.py injects npu_backend by patching ConfigModule.get_config_copy (PR 40264)",
        remove_when="never while torch has no per-device compile option routed through torch.compile(options=...)",
        changes=(
            Change(
                f"{CONFIG_MODULE}:_config",
                lambda _old: adapters.new_config_entry(None, NpuBackendName, OPTION),
                kind="dict_item",
                key=OPTION,
                must_exist=False,
            ),
        ),
        upstream_has_fix=_torch_npu_defined_it,
        refresh=adapters.config_changed,
    )


PER_COMPILE_RECORD = Patch(
    id="npu-backend-per-compile",
    layer="config",
    why="options={'npu_backend': ...} must select the backend for that compile, not only at activation",
    upstream="torch_npu _dynamo.py _NpuBackendScope around _TorchCompileInductorWrapper.__call__ (PR 40264)",
    remove_when="never while the backend is a process-wide choice made through torch.compile options",
    changes=(Change("torch:_TorchCompileInductorWrapper.__call__", _switch_backend_per_compile),),
)
