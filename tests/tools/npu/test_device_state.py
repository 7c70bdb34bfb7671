"""The simulated NPU's API modules set the device up on first use through device_state, pointed at device.setup.

In this process with a fake setup and extension: the real one builds C++ (tests/tools/wheel/test_standin.py)."""

from __future__ import annotations

from typing import Any

import pytest

from npu_inductor_compat.tools.simulated.npu import device, device_api, device_state

pytestmark = pytest.mark.once  # the wiring of this package's modules: nothing here depends on torch's Inductor


class _Extension:
    """The calls device_api makes of the C++ extension (device_ext.cpp), answered from Python."""

    def __init__(self) -> None:
        self.device = 0

    def current_device(self) -> int:
        return self.device

    def set_device(self, index: int) -> None:
        self.device = index


@pytest.fixture
def unset(monkeypatch: pytest.MonkeyPatch) -> list[device_state.SimulatedNpu]:
    """No device set up, and a fake setup registered; the list holds what each call of it set up."""
    made: list[device_state.SimulatedNpu] = []

    def fake_setup() -> device_state.SimulatedNpu:
        instance = device_state.SimulatedNpu("fake", 0.0, True, _Extension(), "nowhere")
        made.append(instance)
        monkeypatch.setattr(device_state, "_instance", instance)
        return instance

    monkeypatch.setattr(device_state, "_instance", None)
    monkeypatch.setattr(device_state, "_setup", fake_setup)
    return made


def test_importing_device_points_ensure_at_its_setup() -> None:
    assert device_state._setup is device.setup


def test_the_first_use_sets_the_device_up_once(unset: list[Any]) -> None:
    assert not device_api.is_initialized()
    device_api.set_device("npu:1")
    assert device_api.current_device() == 1 and device_api.index_of(None) == 1
    assert len(unset) == 1 and device_api.is_initialized()
    assert device_state.ensure() is unset[0]


def test_without_a_setup_to_call_ensure_says_which_module_sets_it_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_state, "_instance", None)
    monkeypatch.setattr(device_state, "_setup", None)
    with pytest.raises(RuntimeError, match=r"not set up.*npu_inductor_compat\.tools\.simulated\.npu\.device"):
        device_api.current_device()
