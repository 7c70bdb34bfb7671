"""Shared fixtures: every test leaves the package deactivated and the env overrides unset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# In this process the tests activate and undo explicitly; zero-touch activation is tested in fresh interpreters
# (run_python drops this setting). Set before any test module imports torch, which runs the autoload entry point.
os.environ.setdefault("NPU_INDUCTOR_COMPAT_AUTOLOAD", "0")
# No test compiles a kernel for a device, and the few CPU kernels are tiny: Inductor's pool of compile workers (started
# at its import on some lines) would only take a core from the other xdist worker, here and in every child process.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
# torch runs its autoload entry points once, at its first import: import it now, while autoload is off, so no test
# that first imports torch inside its body (where clean_state has removed the variable) arms the hook by accident.
import torch  # noqa: F401

import npu_inductor_compat
from npu_inductor_compat import dispatch


def _load(path: Path) -> None:
    """A helper file as an importable module of its own name (--import-mode=importlib puts no test folder on
    sys.path): ``import <stem>`` in a test module, and grep finds the file by that name."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)


HERE = Path(__file__).parent
# The dev scripts (not shipped: the import graph, the README picture, retire, the matrices) import as top-level
# modules of their own names, as they do when run as `python dev/NAME.py`.
sys.path.insert(0, str(HERE.parent / "dev"))
_load(HERE / "npu_compat_test_paths.py")  # ROOT and TESTS, for test modules at any depth
_load(HERE / "npu_compat_test_env.py")  # the package's variables a child process must not inherit
_load(HERE / "npu_compat_test_codegen.py")  # the one way a test runs codegen
_load(HERE / "npu_compat_test_tiers.py")
_load(HERE / "npu_compat_test_skips.py")
_load(HERE / "emulated_acl" / "emulated_acl_harness.py")  # what the NPU C++ wrapper tests share
_load(HERE / "torch_npu_codegen_harness.py")  # what the tests of torch_npu's own codegen share
_load(HERE / "batch_norm_interpreted_harness.py")  # batch norm's kernels from torch_npu's codegen, interpreted

from npu_compat_test_codegen import CodegenRun, codegen_command, run_codegen  # noqa: E402 - loaded just above
from npu_compat_test_env import ENV_KEYS, child_env  # noqa: E402 - loaded just above


@pytest.fixture(scope="session")
def emulated_npu(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The stub libtorch_npu and libascendcl built for this torch line (the tool's emulated runtime, an ACL without
    aclgraph capture), and the test session's Inductor cache beside it (tests/emulated_acl/emulated_acl_harness.py)."""
    return sys.modules["emulated_acl_harness"].build_emulated_npu(tmp_path_factory)


pytest_plugins = ["npu_compat_test_tiers", "npu_compat_test_skips", "pytester"]


# The slow tier's longest files (a minute or more each on 2 cores; `--durations` in the slow session shows them) go
# first: pytest-xdist's --dist loadfile hands files out in collection order, so a long file collected last would run
# alone at the end while the other worker idles.
LONGEST_FIRST = (
    "test_npu_wrapper_run.py",
    "test_npu_wrapper_threads.py",
    "test_npu_wrapper_queue.py",
    "test_torch_npu_flex.py",
    "test_models.py",
    "test_kernel_corpus.py",
    "test_doc_commands.py",
    "test_torch_npu_tiling.py",
    "test_execute_runs.py",
    "test_torch_npu_fixes.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order is kept


def pytest_sessionstart(session: pytest.Session) -> None:
    """Import Inductor once per process before any test (seconds): a cost of the process, not of whichever test
    happens to activate first, so the fast tier's per-test limit measures the tests."""
    import warnings

    with warnings.catch_warnings():  # torch.jit's deprecation notes at import: not this suite's concern
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch._inductor.compile_fx  # noqa: F401


@pytest.fixture(autouse=True)
def clean_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    dispatch._forget_resolution()
    yield
    npu_inductor_compat.deactivate()
    dispatch._forget_resolution()


PythonRunner = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture(scope="session")
def shared_codegen(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., CodegenRun]:
    """`codegen SCRIPT ARGS` run once per pytest run and shared by every test that asks for the same run, across
    xdist workers too (a file lock per run): read its folder, never change it. ``provider``: stock Inductor unless
    ARGS name one; None runs codegen's default (torch_npu's codegen on a paired torch), as a user would."""
    import fcntl
    import hashlib

    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-codegen"
    root.mkdir(exist_ok=True)

    def run(script: Path, *args: str, provider: str | None = "stock") -> CodegenRun:
        command = codegen_command(script, *args, out=None, provider=provider)  # the run's identity, --out aside
        key = hashlib.sha256(json.dumps(command).encode()).hexdigest()[:16]
        folder = root / key
        with open(root / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = folder / "run.json"
            if not done.is_file():
                (folder / "cwd").mkdir(parents=True, exist_ok=True)
                ran = run_codegen(script, *args, out=folder / "out", provider=provider, cwd=folder / "cwd")
                done.write_text(json.dumps([ran.returncode, ran.stdout, ran.stderr]))
            returncode, stdout, stderr = json.loads(done.read_text())
        return CodegenRun(returncode, stdout, stderr, folder / "out")

    return run


@pytest.fixture(scope="session")
def triton_ascend_root() -> Path:
    """The folder holding triton-ascend 3.2.0's ``triton`` package: installed into the cache on first use (a test
    using it is marked ``download``), or this environment's own if it is triton-ascend."""
    from npu_inductor_compat.tools.simulated.kernels import triton_ascend_site

    try:
        located = triton_ascend_site.locate()
    except triton_ascend_site.KernelCheckUnavailable as err:  # no network: a listed reason, refused under CI
        pytest.skip(f"triton-ascend unavailable: {err}")
    assert located.version == "3.2.0", located
    return located.root


@pytest.fixture
def run_python() -> PythonRunner:
    """Run code in a fresh interpreter of this environment (env overrides cleared unless passed)."""
    return _run_python


@pytest.fixture
def last_json_of() -> Callable[..., dict[str, Any]]:
    """Run ``code`` with an argument in a fresh interpreter without TRITON_INTERPRET (the code sets Triton's
    interpreter up itself) and give the JSON object its last line printed (its stderr when it fails)."""

    def run(code: str, argument: str) -> dict[str, Any]:
        env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
        command = [sys.executable, "-c", code, argument]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return found

    return run


def _run_python(code: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full_env = child_env(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout, check=False
    )


FAKES = Path(__file__).resolve().parent / "fakes"


def _fake_interface() -> type:
    from torch._dynamo.device_interface import DeviceInterface

    class FakeNpuInterface(DeviceInterface):  # type: ignore[misc]
        """Answers only what the layers ask: availability and the current device."""

        @staticmethod
        def is_available() -> bool:
            return True

        @staticmethod
        def current_device() -> int:
            return 0

        @staticmethod
        def device_count() -> int:
            return 1

    return FakeNpuInterface


@pytest.fixture
def fake_provider() -> Iterator[Any]:
    """A device provider standing in for torch_npu (no device is created; only the Inductor side is patched)."""
    from npu_inductor_compat.common.composition import providers

    provider = providers.DeviceProvider(
        name="test-fake",
        device_interface=_fake_interface,
        raw_stream_import="from torch._C import _cuda_getCurrentRawStream as {name}",
    )
    previous = providers.set_provider(provider)
    yield provider
    npu_inductor_compat.deactivate()
    providers.set_provider(previous)


@pytest.fixture
def fake_torch_npu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Put the stand-in torch_npu backend packages and torch_mlir on sys.path; purge them afterwards."""
    monkeypatch.syspath_prepend(str(FAKES))
    yield FAKES
    npu_inductor_compat.deactivate()
    for name in [m for m in sys.modules if m.split(".")[0] in ("torch_npu", "torch_mlir")]:
        del sys.modules[name]


def running_adapters() -> Any:
    """The adapters of the version module serving the installed torch."""
    from npu_inductor_compat.dispatch import resolve

    return resolve()[1].adapters


@pytest.fixture
def adapters() -> Any:
    return running_adapters()


def _all_records(provider: Any) -> list[Any]:
    from npu_inductor_compat.common.composition import layers
    from npu_inductor_compat.common.device import device_layer
    from npu_inductor_compat.registry import fix_records

    adapters = running_adapters()
    records = [*layers.config_layer(adapters), *device_layer.device_layer(provider, adapters)]
    for build in layers.LAYERS.values():
        records += build(provider, adapters)
    return records + list(fix_records(adapters.line))


def _state_of(change: Any) -> list[tuple[str, Any]]:
    """Identity-level state of what a change touches: (label, object) pairs compared with `is`."""
    from npu_inductor_compat.patching import ABSENT
    from npu_inductor_compat.targets import Target

    def resolve(target: str) -> tuple[Any, str] | None:
        try:
            return Target.parse(target).owner()
        except (ImportError, AttributeError):
            return None

    found: list[tuple[str, Any]] = []
    for target in (change.target, *change.touches):
        resolved = resolve(target)
        if resolved is None:
            continue
        owner, name = resolved
        own = owner.__dict__.get(name, ABSENT) if hasattr(owner, "__dict__") else getattr(owner, name, ABSENT)
        found.append((target, own))
        value = getattr(owner, name, None)
        if isinstance(value, dict) and change.kind != "attr":
            found.append((f"{target}[{change.key!r}]", value.get(change.key, ABSENT)))
        if isinstance(value, list):
            found.append((f"{target} items", tuple(value)))
    return found


class TorchState:
    """Snapshots of every object any record can touch, compared by identity (`is`), lists by content."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def snapshot(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        for record in _all_records(self.provider):
            for change in record.changes:
                state.update(_state_of(change))
        return state

    @staticmethod
    def assert_same(before: dict[str, Any], after: dict[str, Any]) -> None:
        assert before.keys() == after.keys()
        for key, value in before.items():
            if isinstance(value, tuple):
                assert after[key] == value, key
            else:
                assert after[key] is value, key


@pytest.fixture
def torch_state(fake_provider: Any) -> TorchState:
    return TorchState(fake_provider)


def _in_eight_threads(work: Callable[[], Any]) -> list[Any]:
    """Run ``work`` in 8 threads released together; return their results, or raise the first error."""
    barrier = threading.Barrier(8)
    results: list[Any] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            results.append(work())
        except BaseException as err:  # reported to the test below
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def in_eight_threads() -> Callable[[Callable[[], Any]], list[Any]]:
    return _in_eight_threads
