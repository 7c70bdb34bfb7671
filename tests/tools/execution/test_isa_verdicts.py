"""Inductor's CPU vector-ISA probe verdicts kept per machine (isa_verdicts.py): a later process reads a "yes" instead of
probing again, a changed compiler, torch or program probes afresh, and a "no" is never kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npu_inductor_compat.patching import Journal
from npu_inductor_compat.tools.simulated.execution import isa_verdicts


@pytest.fixture
def probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Inductor's probe replaced by one that says "yes" unless the program contains "no", and lists each call; the
    record applied over it, verdicts kept in ``tmp_path``."""
    from torch._inductor import cpu_vec_isa

    calls: list[tuple[str, str]] = []

    def probe(self: Any, code: str) -> bool:
        calls.append((type(self).__name__, code))
        return "no" not in code

    monkeypatch.setattr(cpu_vec_isa.VecISA, "check_build", probe)
    monkeypatch.setenv(isa_verdicts.FOLDER_ENV, str(tmp_path / "verdicts"))
    journal = Journal()
    journal.apply([isa_verdicts.ISA_VERDICTS_RECORD])
    yield calls
    journal.undo()
    assert cpu_vec_isa.VecISA.check_build is probe


def test_a_yes_is_probed_once_per_machine_and_read_by_every_later_instance(probes: list[tuple[str, str]]) -> None:
    from torch._inductor import cpu_vec_isa

    assert cpu_vec_isa.VecAVX2().check_build("int main;") is True
    assert cpu_vec_isa.VecAVX2().check_build("int main;") is True  # a fresh instance: as in another process
    assert probes == [("VecAVX2", "int main;")]
    assert cpu_vec_isa.VecAVX512().check_build("int main;") is True  # another ISA: its own flags, its own probe
    assert cpu_vec_isa.VecAVX2().check_build("int other;") is True  # another program
    assert [name for name, _ in probes] == ["VecAVX2", "VecAVX512", "VecAVX2"]


def test_a_no_is_never_kept(probes: list[tuple[str, str]]) -> None:
    from torch._inductor import cpu_vec_isa

    assert cpu_vec_isa.VecAVX2().check_build("no vector") is False
    assert cpu_vec_isa.VecAVX2().check_build("no vector") is False
    assert len(probes) == 2


def test_another_compiler_or_torch_probes_again(probes: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The key holds torch's own fingerprint for the probe's program (compiler version, flags, torch version)."""
    from torch._inductor import cpu_vec_isa

    assert cpu_vec_isa.VecAVX2().check_build("int main;") is True
    monkeypatch.setattr(cpu_vec_isa, "_get_isa_dry_compile_fingerprint", lambda flags: f"g++ 99={flags}=9.9")
    assert cpu_vec_isa.VecAVX2().check_build("int main;") is True
    assert len(probes) == 2


def test_the_folder_defaults_to_the_tools_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(isa_verdicts.FOLDER_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert isa_verdicts.verdict_folder() == tmp_path / "npu-inductor-compat" / "isa_verdicts"


def test_a_folder_that_is_a_link_is_neither_read_nor_written(
    probes: list[tuple[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch._inductor import cpu_vec_isa

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    monkeypatch.setenv(isa_verdicts.FOLDER_ENV, str(tmp_path / "link"))
    assert cpu_vec_isa.VecAVX2().check_build("int main;") is True
    assert cpu_vec_isa.VecAVX2().check_build("int main;") is True
    assert len(probes) == 2 and not any(elsewhere.iterdir())
