"""The package's environment variables a test's child process must not inherit from the shell (each test sets what
it means), and the environment a fresh interpreter gets: the one list, for conftest.py and every test module."""

from __future__ import annotations

import os

ENV_KEYS = (
    "NPU_INDUCTOR_COMPAT_AUTOLOAD",
    "NPU_INDUCTOR_COMPAT_TORCH_VERSION",
    "NPU_INDUCTOR_COMPAT_STRICT",
    "NPU_INDUCTOR_COMPAT_DISABLE",
    "TORCHINDUCTOR_NPU_BACKEND",
)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment less the package's overrides (ENV_KEYS), plus ``extra``: what a fresh interpreter gets."""
    return {**{key: value for key, value in os.environ.items() if key not in ENV_KEYS}, **(extra or {})}
