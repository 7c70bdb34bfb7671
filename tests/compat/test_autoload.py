"""Zero-touch activation through torch's `torch.backends` autoload entry point, in fresh interpreters of this nox
session's torch (the editable install registers the entry point)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pytest

pytestmark = pytest.mark.subprocess

IMPORT_ONLY = """
import json, sys
import torch
print(json.dumps({
    "inductor": sorted(m for m in sys.modules if m.startswith("torch._inductor")),
    "armed": "npu_inductor_compat.autoload" in sys.modules and sys.modules["npu_inductor_compat.autoload"].armed(),
}))
"""

# The same script twice: once as is (zero-touch), once with an explicit activate() first. Codegen-only capture,
# because nothing can be launched on the simulated NPU.
SCRIPT = """
import json, torch
import npu_inductor_compat
from npu_inductor_compat.tools.simulated.npu import device
from npu_inductor_compat.tools.simulated.codegen.capture import capturing

device.setup()
{before}
active_before_npu = npu_inductor_compat.status()["active"]
with capturing() as capture:
    try:
        torch.compile(lambda t: t.sin() + 1)(torch.ones(4).to("npu"))
    except Exception as err:
        error = repr(err)
    else:
        error = None
print(json.dumps({{
    "active_before_npu": active_before_npu,
    "applied": sorted(item["id"] for item in npu_inductor_compat.status()["applied"]),
    "graphs": [graph.summary() for graph in capture.graphs],
    "error": error,
}}))
"""


def last_json(done: Any) -> Any:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_entry_point_is_registered_for_torch() -> None:
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="torch.backends") if ep.name == "npu_inductor_compat"]
    assert [ep.value for ep in found] == ["npu_inductor_compat.autoload:autoload"]


def test_import_torch_arms_activation_and_imports_no_inductor_module_because_of_it(run_python: Any) -> None:
    with_autoload = last_json(run_python(IMPORT_ONLY))
    without = last_json(run_python(IMPORT_ONLY, env={"NPU_INDUCTOR_COMPAT_AUTOLOAD": "0"}))
    assert with_autoload["armed"] is True and without["armed"] is False
    assert with_autoload["inductor"] == without["inductor"]
    torch_off = last_json(run_python(IMPORT_ONLY, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}))
    assert torch_off["armed"] is False


# A CPU graph must not activate anything (views only: no C++ kernel to build for it)
CPU_GRAPH = "torch.compile(lambda t: t.view(3, 1).t())(torch.ones(3))"


def test_zero_touch_gets_the_same_records_as_explicit_activation(run_python: Any) -> None:
    zero_touch = last_json(run_python(SCRIPT.format(before=CPU_GRAPH)))
    explicit = last_json(run_python(SCRIPT.format(before="npu_inductor_compat.activate()")))
    assert zero_touch["active_before_npu"] is False and explicit["active_before_npu"] is True
    assert zero_touch["error"] is None, zero_touch["error"]
    assert zero_touch["applied"] == explicit["applied"]
    assert {"npu-device-interface", "triton-register-npu-backend", "simulated-kernel-params"} <= set(
        zero_touch["applied"]
    )
    assert [(g["kind"], g["error"]) for g in zero_touch["graphs"]] == [("inference", None)]


def test_opting_out_leaves_torch_untouched(run_python: Any) -> None:
    done = run_python(textwrap.dedent(SCRIPT.format(before="")), env={"NPU_INDUCTOR_COMPAT_AUTOLOAD": "0"})
    found = last_json(done)
    assert found["applied"] == [] and found["active_before_npu"] is False
    assert found["error"] is not None  # without the glue Inductor cannot generate code for "npu"


PROVIDER_FIRST = """
import json, sys, torch
import npu_inductor_compat
from importlib.metadata import entry_points
from npu_inductor_compat.tools.simulated.codegen.capture import capturing

names = [ep.name for ep in entry_points(group="torch.backends")]
assert hasattr(torch, "npu"), "the stand-in provider's autoload did not run"
with capturing():
    torch.compile(lambda t: t.sin() + 1)(torch.ones(4).to("npu"))
print(json.dumps({"order": names, "applied": sorted(a["id"] for a in npu_inductor_compat.status()["applied"])}))
"""


def test_a_provider_with_its_own_autoload_entry_point_is_picked_up_at_the_first_npu_graph(
    run_python: Any, tmp_path: Any
) -> None:
    """torch_npu registers its own `torch.backends` entry point; here a stand-in distribution whose entry point sets
    the simulated NPU up plays its part. torch runs both during `import torch`, in an order we do not control;
    activation waits for the first npu graph, so it sees the provider either way and applies what an explicit
    activate() applies."""
    dist = tmp_path / "standin_provider-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: standin-provider\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[torch.backends]\nstandin_provider = standin_provider:autoload\n")
    (tmp_path / "standin_provider.py").write_text(
        "def autoload():\n    from npu_inductor_compat.tools.simulated.npu import device\n    device.setup()\n"
    )
    found = last_json(run_python(PROVIDER_FIRST, env={"PYTHONPATH": str(tmp_path)}))
    assert {"standin_provider", "npu_inductor_compat"} <= set(found["order"])
    explicit = last_json(run_python(SCRIPT.format(before="npu_inductor_compat.activate()")))
    assert found["applied"] == explicit["applied"]


def test_the_npu_backend_option_is_accepted_by_the_first_torch_compile_zero_touch(run_python: Any) -> None:
    """The seed use case: torch.compile(fn, options={"npu_backend": ...}) before anything activated the package."""
    code = """
import json, torch
import npu_inductor_compat
torch.compile(lambda t: t + 1, backend="inductor", options={"npu_backend": "triton"})
try:
    torch.compile(lambda t: t + 1, backend="inductor", options={"npu_backend": "tirton"})
except ValueError as err:
    rejected = str(err)
print(json.dumps({"active": npu_inductor_compat.status()["active"], "rejected": rejected}))
"""
    found = last_json(run_python(code))
    assert found["active"] is True
    assert "unknown NPU backend 'tirton'" in found["rejected"]
    opted_out = run_python(code, env={"NPU_INDUCTOR_COMPAT_AUTOLOAD": "0"})
    assert opted_out.returncode != 0 and "Unexpected optimization option" in opted_out.stderr


@pytest.mark.parametrize(("value", "armed"), [("", True), ("1", True), ("on", True), ("0", False), ("OFF", False)])
def test_the_autoload_switch_reads_like_every_other_switch(
    monkeypatch: pytest.MonkeyPatch, value: str, armed: bool
) -> None:
    from npu_inductor_compat import autoload

    monkeypatch.setenv(autoload.AUTOLOAD_ENV, value)
    assert autoload.autoload_enabled() is armed


@pytest.mark.parametrize("typo", ["O", "nope", "disable", "2"])
def test_a_typo_in_the_autoload_switch_is_reported_and_arms_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, typo: str
) -> None:
    """Raising here would break `import torch` for every user of the machine: a warning naming the variable and the
    valid values, and activation stays unarmed (whoever set it most likely meant off)."""
    from npu_inductor_compat import autoload

    monkeypatch.setenv(autoload.AUTOLOAD_ENV, typo)
    with caplog.at_level("WARNING", logger="npu_inductor_compat"):
        assert autoload.autoload_enabled() is False
    assert f"NPU_INDUCTOR_COMPAT_AUTOLOAD={typo!r}: expected 1/0" in caplog.text


ENTRY_POINT_MODULES = """
import json, sys
import torch  # with TORCH_DEVICE_BACKEND_AUTOLOAD=0: nothing of ours yet
before = set(sys.modules)
from importlib.metadata import entry_points
(entry,) = [ep for ep in entry_points(group="torch.backends") if ep.name == "npu_inductor_compat"]
loader = set(sys.modules)  # what torch's own autoload also imports to find entry points
entry.load()()
after = set(sys.modules)
print(json.dumps({
    "ours": sorted(m for m in after - before if m.startswith("npu_inductor_compat")),
    "others": sorted(m for m in after - loader if not m.startswith("npu_inductor_compat")),
    "armed": sys.modules["npu_inductor_compat.autoload"].armed(),
}))
"""

# What `import torch` may cost: the package's (empty) __init__, the hook, its env-switch reader, its npu-graph test and
# the list of deactivate() callbacks it registers its disarm in. A module
# added to the entry point's imports fails this (issue #46: the journal, its dataclasses and targets were ~6 ms).
ENTRY_POINT_IMPORTS = [
    "npu_inductor_compat",
    "npu_inductor_compat.autoload",
    "npu_inductor_compat.envflags",
    "npu_inductor_compat.hooks",
    "npu_inductor_compat.npu_graph",
]


def test_the_entry_point_imports_exactly_its_hook_and_nothing_torch_had_not(run_python: Any) -> None:
    """In a fresh interpreter after `import torch`: the exact set of package modules loading the entry point and
    arming imports, and no module beyond those (third-party or standard) that torch had not imported already."""
    found = last_json(run_python(ENTRY_POINT_MODULES, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}))
    assert found == {"ours": ENTRY_POINT_IMPORTS, "others": [], "armed": True}
