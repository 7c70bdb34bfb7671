"""codegen's provider choice (tools/simulated/codegen/provider_choice.py): torch_npu's own codegen by default where its
wheel pairs with the installed torch, stock Inductor elsewhere with one line, and --provider over both."""

# The choice itself, one level below the command: tests/tools/codegen/test_codegen.py and
# tests/tools/wheel/test_torch_npu_wheel.py run it.

from __future__ import annotations

import argparse

import pytest

from npu_inductor_compat.tools.simulated.codegen import provider_choice
from npu_inductor_compat.tools.simulated.codegen.provider_choice import STOCK, TORCH_NPU, choose
from npu_inductor_compat.tools.simulated.wheel import wheel_release

pytestmark = pytest.mark.once  # tables and text: the installed torch's Inductor plays no part

# the stubbed releases as of torch_npu 2.12.0.post3 (the tests fix them: more may be stubbed later)
STUBBED = ("2.7.1.post11", "2.9.0.post9", "2.12.0.post3")
PAIRED = {"2.7.1": "2.7.1.post11", "2.9.0": "2.9.0.post9", "2.12.0": "2.12.0.post3"}


@pytest.fixture
def three_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wheel_release, "STUBBED", STUBBED)
    monkeypatch.setattr(wheel_release, "PAIRED", dict(PAIRED))
    monkeypatch.setattr(wheel_release, "NOT_YET", {})
    monkeypatch.setattr(provider_choice, "_importable", lambda module: True)  # pyyaml and psutil


@pytest.mark.parametrize("torch", ["2.7.1", "2.7.1+cpu", "2.9.0", "2.12.0+cu130"])
def test_the_default_on_a_paired_torch_is_torch_npus_codegen(torch: str, three_pairs: None) -> None:
    choice = choose(torch, None)
    assert (choice.provider, choice.release, choice.note) == (TORCH_NPU, PAIRED[torch.split("+")[0]], None)
    assert choice.to_json()["chosen_by"] == "default"
    assert choice.describe().startswith(f"torch_npu-wheel (torch_npu {choice.release}'s own codegen; the default on")


@pytest.mark.parametrize(
    ("torch", "why", "install"),
    [
        ("2.12.1", "no torch_npu release requires torch 2.12.1", "torch==2.12.0 (torch_npu 2.12.0.post3"),
        ("2.9.1", "torch_npu 2.9.1, made for torch 2.9.1, does not run here", "torch==2.9.0 (torch_npu 2.9.0.post9"),
        ("2.8.0", "torch_npu 2.8.0.post5, made for torch 2.8.0, does not", "torch==2.7.1 (torch_npu 2.7.1.post11"),
        ("2.15.0", "no torch_npu release requires torch 2.15.0", "torch==2.12.0 (torch_npu 2.12.0.post3"),
    ],
)
def test_the_default_on_an_unpaired_torch_is_stock_said_in_one_line(
    torch: str, why: str, install: str, three_pairs: None
) -> None:
    choice = choose(torch, None)
    assert (choice.provider, choice.release, choice.to_json()["chosen_by"]) == (STOCK, None, "default")
    note = choice.note
    assert note is not None and "\n" not in note
    assert note.startswith("npu_inductor_compat codegen: stock Inductor generates the kernels: ")
    assert why in note and f"for torch_npu's own codegen install {install}" in note


def test_a_stubbed_release_held_back_is_stock_naming_why(monkeypatch: pytest.MonkeyPatch, three_pairs: None) -> None:
    monkeypatch.setattr(wheel_release, "NOT_YET", {"2.9.0.post9": "its import needs libhccl"})
    choice = choose("2.9.0", None)
    assert choice.provider == STOCK and choice.note is not None
    assert "torch_npu 2.9.0.post9, made for torch 2.9.0, does not run here (its import needs libhccl)" in choice.note
    assert "install torch==2.7.1 (torch_npu 2.7.1.post11 requires it)" in choice.note  # not the held-back pair


@pytest.mark.parametrize("torch", ["2.7.1", "2.12.1"])
def test_provider_stock_is_stock_on_any_torch_without_a_note(torch: str, three_pairs: None) -> None:
    choice = choose(torch, STOCK)
    assert (choice.provider, choice.release, choice.note, choice.to_json()["chosen_by"]) == (
        STOCK,
        None,
        None,
        "--provider",
    )


def test_provider_torch_npu_wheel_without_a_pair_is_refused_naming_the_torch(three_pairs: None) -> None:
    assert choose("2.7.1", TORCH_NPU).release == "2.7.1.post11"
    with pytest.raises(provider_choice.ProviderUnavailable, match=r"install torch==2\.12\.0 to run it"):
        choose("2.12.1", TORCH_NPU)


def test_without_torch_npus_python_dependencies_the_default_is_stock_naming_them(
    monkeypatch: pytest.MonkeyPatch, three_pairs: None
) -> None:
    monkeypatch.setattr(provider_choice, "_importable", lambda module: module != "yaml")
    choice = choose("2.7.1", None)
    assert choice.provider == STOCK and choice.note is not None and "\n" not in choice.note
    said = "torch_npu 2.7.1.post11's codegen imports pyyaml, not installed here; pip install pyyaml for torch_npu's"
    assert said in choice.note
    with pytest.raises(provider_choice.ProviderUnavailable, match="imports pyyaml, not installed here: pip install"):
        choose("2.7.1", TORCH_NPU)


def test_the_real_tables_pair_the_core_line_2_7_1_and_not_2_12_1() -> None:
    """The core lines CI runs: 2.7.1 defaults to torch_npu's codegen; 2.12.1 (torch_npu 2.12.0.post3 pins 2.12.0)
    to stock."""
    assert choose("2.7.1", None).provider == TORCH_NPU
    assert choose("2.12.1", None).provider == STOCK


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("simulated-npu", "'simulated-npu' is now called 'stock'; valid: stock (stock Inductor), torch_npu-wheel"),
        ("torch_npu", "'torch_npu' is not a provider; valid: stock (stock Inductor), torch_npu-wheel"),
        ("", "'' is not a provider; valid: stock"),
    ],
)
def test_a_bad_provider_name_is_an_error_naming_the_valid_ones(value: str, said: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        provider_choice.parse(value)
    assert str(caught.value).startswith(said)
    assert [provider_choice.parse(name) for name in provider_choice.PROVIDERS] == [STOCK, TORCH_NPU]
