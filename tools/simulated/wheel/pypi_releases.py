"""The torch and torch_npu releases PyPI had when pypi_releases.json was recorded: what test_pairs checks the pairs
table against, without a network. `nox -s pypi_releases` (not in CI) asks PyPI again: exit 1 naming what changed."""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import urllib.request
from pathlib import Path

RECORD = Path(__file__).with_name("pypi_releases.json")
# the torch_npu wheels the tools read: one platform's (wheel_cache.WHEEL_PLATFORM)
PLATFORM_WHEEL = re.compile(r"-cp311-cp311-manylinux[^-]*x86_64\.whl$")
PROJECTS = {"torch-npu": PLATFORM_WHEEL, "torch": None}


def published(project: str, timeout: float = 60) -> list[str]:
    """Versions of ``project`` with an unyanked wheel on PyPI (for torch_npu, a wheel of PLATFORM_WHEEL; for torch,
    no local label such as +cpu), oldest first. OSError when PyPI cannot be asked."""
    from packaging.version import InvalidVersion, Version

    accept = {"Accept": "application/vnd.pypi.simple.v1+json"}
    request = urllib.request.Request(f"https://pypi.org/simple/{project}/", headers=accept)
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        files = json.load(answer)["files"]
    wheel = PROJECTS[project]
    found: set[Version] = set()
    for item in files:
        name = str(item.get("filename", ""))
        if item.get("yanked") or not name.endswith(".whl") or (wheel is not None and not wheel.search(name)):
            continue
        try:
            version = Version(name.split("-")[1])
        except InvalidVersion:
            continue
        if version.local is None:
            found.add(version)
    return [str(version) for version in sorted(found)]


def recorded() -> dict[str, list[str]]:
    """The recorded versions per project (``recorded`` holds the date)."""
    found: dict[str, list[str]] = json.loads(RECORD.read_text())["projects"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--update", action="store_true", help="write what PyPI has now into the record")
    args = parser.parse_args(argv)
    now = {project: published(project) for project in PROJECTS}
    if args.update:
        record = {"recorded": datetime.date.today().isoformat(), "projects": now}
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"pypi_releases: wrote {RECORD}")
        return 0
    before = recorded()
    changed = False
    for project, versions in now.items():
        added = sorted(set(versions) - set(before.get(project, [])), key=versions.index)
        gone = sorted(set(before.get(project, [])) - set(versions))
        if added or gone:
            changed = True
            print(f"{project}: new on PyPI {added or 'none'}; gone {gone or 'none'}")
    if changed:
        print("pypi_releases: PyPI changed since the record; update pairs.py if a pair changed, then --update")
        return 1
    print("pypi_releases: the record is what PyPI has")
    return 0


if __name__ == "__main__":
    sys.exit(main())
