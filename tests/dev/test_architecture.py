"""The README's architecture picture is the import test's graph, folder by folder (dev/architecture.py)."""

from __future__ import annotations

from pathlib import Path

import architecture
import import_graph
import pytest
from npu_compat_test_paths import ROOT

pytestmark = pytest.mark.once  # the source read as text: nothing here depends on torch's Inductor


def test_the_readme_picture_is_the_import_graph_of_this_tree() -> None:
    picture = architecture.picture_of(ROOT)
    readme = architecture.embedded((ROOT / "README.md").read_text())
    assert readme == picture, "README's picture is out of date: python dev/architecture.py --write README.md"


def test_a_new_import_changes_the_picture_and_a_back_edge_is_dashed(tmp_path: Path) -> None:
    files = {
        "compat/__init__.py": "",
        "common/__init__.py": "",
        "common/a.py": "from npu_inductor_compat import b\n",
        "compat/b.py": "",
        "v2_9/__init__.py": "from npu_inductor_compat.common import a\n",
        "v2_12/__init__.py": "from npu_inductor_compat.common import a\n",
    }
    before = architecture.picture_of(import_graph.planted_tree(tmp_path, files))
    assert before.splitlines()[2:-1] == ['    lines["v*/"] --> common["common/"]', '    common --> compat["compat/"]']
    files["v2_12/__init__.py"] += "from npu_inductor_compat import b\n"
    both = architecture.picture_of(import_graph.planted_tree(tmp_path, files))
    assert both.splitlines()[2] == '    lines["v*/"] --> common["common/"] & compat["compat/"]'
    (tmp_path / "common/a.py").write_text("def f():\n    from npu_inductor_compat.v2_9 import c\n")
    (tmp_path / "v2_9/c.py").write_text("")
    after = architecture.picture_of(tmp_path)
    assert after != before
    assert "    common -. back edge .-> lines" in after.splitlines()


def test_sub_packages_are_rooms_of_their_own(tmp_path: Path) -> None:
    """common/'s and tools/'s sub-packages (two levels deep at most) are nodes of their own; a module at a folder's
    top stays in the folder's room."""
    files = {
        "compat/__init__.py": "",
        "common/__init__.py": "",
        "common/flex.py": "",
        "common/device/__init__.py": "",
        "common/device/launch.py": "from npu_inductor_compat.common import flex\n",
        "tools/__init__.py": "",
        "tools/simulated/__init__.py": "",
        "tools/simulated/npu/__init__.py": "",
        "tools/simulated/npu/device.py": "from npu_inductor_compat.common.device import launch\n",
    }
    lines = architecture.picture_of(import_graph.planted_tree(tmp_path, files)).splitlines()[2:-1]
    assert lines == [
        '    tools_simulated_npu["tools/simulated/npu/"] --> common_device["common/device/"]',
        '    common_device --> common["common/"]',
    ]


def test_the_readme_copy_is_replaced_between_its_markers_only() -> None:
    readme = f"top\n{architecture.START}\nold\n{architecture.END}\nbottom\n"
    assert architecture.with_picture(readme, "new") == f"top\n{architecture.START}\nnew\n{architecture.END}\nbottom\n"
    with pytest.raises(ValueError, match="no <!-- architecture:start -->"):
        architecture.embedded("no markers")
