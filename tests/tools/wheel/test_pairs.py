"""The pairs table (tools/simulated/wheel/pairs.py): its shape, the tables derived from it, each row against the
recorded PyPI releases (no network) and its wheel's METADATA (slow tier: downloads)."""

from __future__ import annotations

import re
import zipfile

import pytest
from npu_compat_test_paths import ROOT
from packaging.requirements import Requirement
from packaging.version import Version

from npu_inductor_compat.tools import wheel_cache
from npu_inductor_compat.tools.simulated.codegen import headers
from npu_inductor_compat.tools.simulated.wheel import pairs, pypi_releases, wheel_release, wheel_targets


def _unlabelled(pin: str) -> Requirement:
    """The pin with the +cpu label dropped (PyPI's torch of that release is the same release)."""
    return Requirement(pin.replace(pairs.CPU_LABEL, ""))


def test_the_table_has_one_row_per_release_each_naming_a_torch_its_pin_allows() -> None:
    releases = [row.torch_npu for row in pairs.PAIRS]
    assert len(releases) == len(set(releases)) and releases == sorted(releases, key=Version), releases
    assert len({row.line for row in pairs.PAIRS}) == len(pairs.PAIRS)  # the newest build of each line, once
    for row in pairs.PAIRS:
        requirement = _unlabelled(row.pin)
        assert requirement.name == "torch" and requirement.specifier.contains(row.torch), row
        assert re.fullmatch(r"\d+\.\d+\.\d+", row.torch) and row.note, row
        assert (pairs.CPU_LABEL in row.pin) == (row.note.startswith("+cpu is PyTorch's CPU-build label")), row
    assert pairs.pair("2.12.0.post3").torch == "2.12.0" and pairs.pair("2.9.0.post9").torch == "2.9.0"
    with pytest.raises(ValueError, match=r"torch_npu 2\.9\.0\.post8 is not in the pairs table .*: 2\.7\.1\.post11, "):
        pairs.pair("2.9.0.post8")


def test_the_provider_and_the_header_check_read_their_pairs_from_the_table() -> None:
    assert (
        wheel_release.PAIRED
        == {pairs.pair(release).torch: release for release in wheel_release.STUBBED}
        == {row.torch: row.torch_npu for row in pairs.PAIRS}  # every release of the table is stubbed
    )
    assert wheel_release.PAIRED["2.9.1"] == "2.9.1" and wheel_release.PAIRED["2.9.0"] == "2.9.0.post9"
    assert set(wheel_release.STUBBED) == set(wheel_targets.RELEASES)
    # headers: by minor, the newest release of the table that ships the ACL launch API
    expected = {
        pairs.minor(row.torch): row.torch_npu for row in pairs.PAIRS if row.torch_npu not in headers.NO_LAUNCH_API
    }
    assert headers.PAIRED_TORCH_NPU == expected
    assert headers.PAIRED_TORCH_NPU["2.9"] == "2.9.0.post9" and headers.PAIRED_TORCH_NPU["2.14"] == "2.14.0"
    assert set(headers.UNPAIRED) == {"2.8"}
    assert set(headers.PAIRED_TORCH_NPU.values()) | set(headers.NO_LAUNCH_API) == {row.torch_npu for row in pairs.PAIRS}


def test_the_survey_docs_show_the_table_as_it_is() -> None:
    docs = (ROOT / "docs" / "torch-npu-survey.md").read_text()
    assert pairs.markdown() in docs, "docs/torch-npu-survey.md: paste pairs.markdown() over its pairs table"


def test_requires_torch_reads_the_pin_as_written() -> None:
    metadata = "Name: torch_npu\nVersion: 2.9.0.post9\nRequires-Dist: pyyaml\nRequires-Dist: torch ==2.9.0+cpu\n\n"
    assert pairs.requires_torch(metadata) == "torch ==2.9.0+cpu"
    assert pairs.requires_torch(metadata.replace("torch ==2.9.0+cpu", "torch==2.13.0.*")) == "torch==2.13.0.*"
    with pytest.raises(ValueError, match=r"torch_npu 2\.9\.0\.post9: expected one torch requirement: \[\]"):
        pairs.requires_torch("Name: torch_npu\nVersion: 2.9.0.post9\nRequires-Dist: torchvision\n\n")


def test_the_table_covers_every_torch_npu_line_pypi_had_and_its_torch_is_the_newest_allowed() -> None:
    """Against the recorded PyPI lists (pypi_releases.json; `nox -s pypi_releases` asks PyPI again, outside CI):
    every torch_npu line from the oldest the table covers has its newest build in the table (a new line or a new
    postN build fails here once recorded), and each row's torch is the newest torch release its pin allows."""
    record = pypi_releases.recorded()
    newest: dict[tuple[int, ...], Version] = {}
    for version in map(Version, record["torch-npu"]):
        if not version.is_prerelease and version.release >= Version(pairs.OLDEST_LINE).release:
            newest[version.release] = max(version, newest.get(version.release, version))
    assert sorted(map(str, newest.values()), key=Version) == [row.torch_npu for row in pairs.PAIRS]
    torches = [Version(torch) for torch in record["torch"]]
    for row in pairs.PAIRS:
        allowed = [torch for torch in torches if _unlabelled(row.pin).specifier.contains(torch)]
        assert allowed and str(max(allowed)) == row.torch, (row, sorted(allowed))


@pytest.mark.download
@pytest.mark.once
def test_every_row_is_its_wheels_metadata() -> None:
    """Each row's pin is its wheel's Requires-Dist as written (the wheel downloaded into the wheel cache, or
    reused)."""
    for row in pairs.PAIRS:
        try:
            wheel = wheel_cache.fetch(row.torch_npu, wheel_cache.default_cache_dir())
        except wheel_cache.SurveyError as err:
            pytest.skip(f"torch_npu {row.torch_npu}'s wheel cannot be downloaded here: {err}")
        with zipfile.ZipFile(wheel) as archive:
            (metadata,) = [name for name in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", name)]
            assert pairs.requires_torch(archive.read(metadata).decode("utf-8")) == row.pin, row
