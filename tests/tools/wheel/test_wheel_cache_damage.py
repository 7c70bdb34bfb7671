"""A damaged wheel cache (an include folder an unpack left incomplete, a truncated wheel) is repaired or named, never
blamed on the generated code; on crafted cache folders, without a network."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from npu_inductor_compat.tools import wheel_cache
from npu_inductor_compat.tools.simulated.codegen import headers
from npu_inductor_compat.tools.simulated.wheel import wheel_release

pytestmark = pytest.mark.once
VERSION = "2.9.0.post9"  # exact (a post release): a cached wheel is used without asking the index
HEADER = "torch_npu/include/torch_npu/csrc/core/npu/NPUStream.h"


def cached_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    wheels = tmp_path / "torch_npu_wheels"
    wheels.mkdir()
    monkeypatch.setenv(wheel_cache.WHEEL_CACHE_ENV, str(wheels))
    wheel = wheels / f"torch_npu-{VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(HEADER, "#pragma once\n" + "// padding\n" * 2000)
        archive.writestr("torch_npu/__init__.py", "")
    return wheel


def test_an_include_folder_an_unpack_left_incomplete_is_unpacked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached_wheel(tmp_path, monkeypatch)
    incomplete = tmp_path / "torch_npu_include" / VERSION
    (incomplete / "torch_npu").mkdir(parents=True)  # the folder, without the header
    found = headers._wheel_headers(VERSION)
    assert found.include == incomplete
    assert (incomplete / HEADER.removeprefix("torch_npu/include/")).is_file()
    # no scratch folder left, only the entry and its lock
    assert sorted(path.name for path in incomplete.parent.iterdir()) == [VERSION, f"{VERSION}.lock"]
    assert headers._wheel_headers(VERSION).include == incomplete  # complete now: used as it is


def test_a_truncated_wheel_is_an_error_naming_the_file_to_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = cached_wheel(tmp_path, monkeypatch)
    wheel.write_bytes(wheel.read_bytes()[: wheel.stat().st_size // 2])
    with pytest.raises(headers.HeaderCheckUnavailable) as refused:
        headers._wheel_headers(VERSION)
    assert f"the cached wheel {wheel} is damaged (BadZipFile: " in str(refused.value)
    assert "delete it, and it is downloaded again" in str(refused.value)
    assert not (tmp_path / "torch_npu_include" / VERSION).exists()
    with pytest.raises(wheel_release.WheelUnavailable, match=f"the cached wheel {wheel} is damaged .*delete it"):
        wheel_release.unpacked(VERSION, announce=lambda message: None)


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_fifo_or_link_under_a_wheels_name_is_refused_at_once_naming_it(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #44: a FIFO where the wheel should be (and no unpacked tree) blocked the zip reader forever, silently."""
    import os

    real = cached_wheel(tmp_path, monkeypatch)
    odd = real.with_name(real.name.replace("manylinux_2_28", "manylinux_2_17"))  # another file of the same release
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to(real)
    with pytest.raises(wheel_release.WheelUnavailable, match=f"{odd} is not a regular file .*remove it"):
        wheel_release.unpacked(VERSION, announce=lambda message: None)


def test_a_truncated_file_of_the_triton_ascend_install_is_named_against_pips_record(tmp_path: Path) -> None:
    """Issue #44: a truncated cached libtriton.so killed every worker with SIGBUS ("failed (exit -7):", nothing
    after the colon). The install is checked against the sizes pip's RECORD lists before each use."""
    from npu_inductor_compat.tools.simulated.kernels import triton_ascend_site

    root = tmp_path / "triton_ascend" / "3.2.0"
    library = root / "triton" / "_C" / "libtriton.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"x" * 64)
    info = root / "triton_ascend-3.2.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text(
        "triton/_C/libtriton.so,sha256=abc,64\n../../bin/a-script,sha256=def,9\ntriton_ascend-3.2.0.dist-info/RECORD,,\n"
    )
    assert triton_ascend_site.installed_damage(root) is None
    library.write_bytes(b"x" * 10)
    assert triton_ascend_site.installed_damage(root) == "triton/_C/libtriton.so is 10 bytes, its RECORD says 64"
    library.unlink()
    assert "triton/_C/libtriton.so is missing" in str(triton_ascend_site.installed_damage(root))
