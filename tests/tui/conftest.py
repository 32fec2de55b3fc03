"""TUI test set-up: snapshot SVGs go to the top-level ``snapshots/`` folder, not ``__snapshots__``.

pytest-textual-snapshot looks its SVG extension class up by name (``SVGImageExtension``) each time a
``snap_compare`` runs, so swapping in a subclass whose ``dirname`` points under ``snapshots/`` moves the
files while keeping the plugin's comparison, report and ``--snapshot-update`` pruning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_DIR = ROOT / "snapshots"


class TopLevelSVGExtension(pytest_textual_snapshot.SVGImageExtension):  # type: ignore[misc]
    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(SNAPSHOT_DIR / Path(test_location.filepath).stem)


@pytest.fixture(autouse=True)
def _snapshots_at_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_textual_snapshot, "SVGImageExtension", TopLevelSVGExtension)
