"""Shared fixtures: every test leaves the package deactivated and the env overrides unset."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

import npu_inductor_compat
from npu_inductor_compat import dispatch

ENV_KEYS = (
    "NPU_INDUCTOR_COMPAT_TORCH_VERSION",
    "NPU_INDUCTOR_COMPAT_STRICT",
    "NPU_INDUCTOR_COMPAT_DISABLE",
    "TORCHINDUCTOR_NPU_BACKEND",
)


@pytest.fixture(autouse=True)
def clean_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    dispatch._forget_resolution()
    yield
    npu_inductor_compat.deactivate()
    dispatch._forget_resolution()


PythonRunner = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def run_python() -> PythonRunner:
    """Run code in a fresh interpreter of this environment (env overrides cleared unless passed)."""
    return _run_python


def _run_python(code: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout, check=False
    )
