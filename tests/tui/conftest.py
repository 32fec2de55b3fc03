"""TUI test set-up: snapshot SVGs go to the top-level ``snapshots/`` folder, not ``__snapshots__``.

pytest-textual-snapshot looks its SVG extension class up by name (``SVGImageExtension``) each time a
``snap_compare`` runs, so swapping in a subclass whose ``dirname`` points under ``snapshots/`` moves the
files while keeping the plugin's comparison, report and ``--snapshot-update`` pruning.

Every snapshot is taken of a steady screen (``snap_compare`` below): text cursors stop blinking once the
test's ``run_before`` has brought the app to the state the picture shows, so when the picture is taken
(under load, any time within a blink) does not decide what it shows.

Under parallel workers syrupy no longer fails a run on a snapshot no test uses (each worker sees only its
share of the tests), so the collection is noted here (before ``-k`` deselects anything) and
``test_snapshot_files.py`` holds the files to it through the ``snapshot_files`` fixture.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot
from syrupy.location import PyTestLocation
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_DIR = ROOT / "snapshots"

SNAPSHOT_FILES = pytest.StashKey[dict[Path, set[str]]]()
"""Per snapshot folder of a test module collected whole: the file names its snapshot tests write."""


class TopLevelSVGExtension(pytest_textual_snapshot.SVGImageExtension):  # type: ignore[misc]
    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(SNAPSHOT_DIR / Path(test_location.filepath).stem)


@pytest.fixture(autouse=True)
def _snapshots_at_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_textual_snapshot, "SVGImageExtension", TopLevelSVGExtension)


def steady_cursors(app: App[Any]) -> None:
    """Text cursors on every screen of ``app`` drawn steadily: a blinking one is drawn or not depending on
    when, within its half-second blink, the picture is taken. A TextArea keeps the lines it drew in a
    cache whose key ignores the blink setting (a line drawn in the blink's dark half would come back
    without its cursor), so its lines are drawn again."""
    for screen in app.screen_stack:
        for field in screen.query("Input, TextArea"):
            if isinstance(field, Input | TextArea):
                field.cursor_blink = False
                field.notify_style_update()  # a TextArea's line cache goes with it
                field.refresh()


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool]) -> Callable[..., bool]:
    """The plugin's ``snap_compare``, its picture taken of a steady screen (:func:`steady_cursors`) once
    ``run_before`` is done (which waits for the state the picture shows, never for a fixed time)."""

    def compare(
        app: App[Any],
        press: Iterable[str] = (),
        terminal_size: tuple[int, int] = (80, 24),
        run_before: Callable[[Pilot[Any]], Awaitable[None] | None] | None = None,
    ) -> bool:
        async def steady(pilot: Pilot[Any]) -> None:
            if run_before is not None:
                ran = run_before(pilot)
                if inspect.isawaitable(ran):
                    await ran
            steady_cursors(pilot.app)
            await pilot.pause()

        return snap_compare(app, press=press, terminal_size=terminal_size, run_before=steady)

    return compare


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Note the snapshot names of every module collected whole (not named as ``file::test``), with the
    names syrupy gives them (the extension's own naming and folder)."""
    partial = {Path(arg.split("::")[0]).resolve() for arg in config.args if "::" in arg}
    found: dict[Path, set[str]] = {}
    for item in items:
        if "snap_compare" not in getattr(item, "fixturenames", ()) or item.path in partial:
            continue
        location = PyTestLocation(item)
        folder = Path(TopLevelSVGExtension.dirname(test_location=location))
        name = TopLevelSVGExtension.get_snapshot_name(test_location=location)
        found.setdefault(folder, set()).add(f"{name}.svg")
    config.stash[SNAPSHOT_FILES] = found


@pytest.fixture
def snapshot_files(request: pytest.FixtureRequest) -> tuple[Path, dict[Path, set[str]]]:
    """The snapshots folder, and the files this run's collection says the snapshot tests write."""
    return SNAPSHOT_DIR, request.config.stash[SNAPSHOT_FILES]
