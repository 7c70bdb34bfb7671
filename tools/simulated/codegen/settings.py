"""The torch config a codegen run compiles with, in every thread: torch 2.12 keeps a ``config.patch`` per thread (a
ContextVar), so a thread the script starts would otherwise compile with Inductor's defaults, its caches on."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

Settings = dict[str, dict[str, Any]]  # config module -> {name: value}

# A cached graph skips codegen, and a cached stub breaks later runs ("'CompiledFxGraph' object has no attribute
# 'source_code'"). One compile thread: no npu kernel is compiled, so Inductor's pool of compile workers would only
# cost its start and a shutdown of seconds at exit.
CACHES_OFF: Settings = {
    "torch._inductor.config": {"force_disable_caches": True, "fx_graph_cache": False, "compile_threads": 1},
    "torch._functorch.config": {"enable_autograd_cache": False},
}


def with_caches_off(settings: Settings | None) -> Settings:
    merged = {module: dict(changes) for module, changes in (settings or {}).items()}
    for module, changes in CACHES_OFF.items():
        merged.setdefault(module, {}).update(changes)
    return merged


@contextmanager
def applied(settings: Settings) -> Iterator[None]:
    """The settings in this thread (config.patch), undone on exit."""
    with ExitStack() as stack:
        for module, changes in settings.items():
            stack.enter_context(importlib.import_module(module).patch(**changes))
        yield


def in_every_thread(settings: Settings) -> Patch:
    """A journal record: each thread started while it is applied runs with the settings."""

    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def _bootstrap_inner(self: Any) -> Any:  # what Thread.start runs in the new thread, around run()
            with applied(settings):
                return original(self)

        return _bootstrap_inner

    return Patch(
        id="capture-settings-in-threads",
        layer="capture",
        why="the codegen settings (caches off, --cpp-wrapper, --dynamic) hold in threads the script starts",
        upstream="torch.utils._config_module: user overrides are thread-local (torch 2.12)",
        remove_when="never: this is the codegen command's capture",
        changes=(Change("threading:Thread._bootstrap_inner", replacement),),
    )
