"""Every SVG under ``snapshots/`` belongs to a snapshot test, as syrupy checks in a one-process run.

Syrupy fails a run that leaves a snapshot unused (a test renamed, a size dropped) so stale pictures do not
pile up, but it skips that check in parallel workers; this test does it from the collection
(tests/tui/conftest.py), for every snapshot module the run collected whole.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

_INDEX = re.compile(r"\.\d+(?=\.svg$)")
"""A second ``snap_compare`` in one test writes ``name.1.svg``."""


def test_every_snapshot_file_belongs_to_a_test(
    request: pytest.FixtureRequest, snapshot_files: tuple[Path, dict[Path, set[str]]]
) -> None:
    if request.config.getoption("update_snapshots", False):
        pytest.skip("--snapshot-update deletes unused snapshots itself, at the end of the run")
    snapshot_dir, expected = snapshot_files
    unused = sorted(
        f"{folder.name}/{svg.name}"
        for folder, names in expected.items()
        for svg in folder.glob("*.svg")
        if _INDEX.sub("", svg.name) not in names
    )
    assert not unused, f"snapshots no test uses (`pytest --snapshot-update` deletes them): {unused}"
    tests_of = {folder.name for folder in expected}
    orphans = sorted(
        folder.name
        for folder in snapshot_dir.iterdir()
        if folder.is_dir()
        and folder.name not in tests_of
        and not any(snapshot_dir.parent.glob(f"tests/**/{folder.name}.py"))
    )
    assert not orphans, f"snapshot folders whose test module is gone: {orphans}"
