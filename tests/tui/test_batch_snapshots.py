"""Snapshots of many approvals decided at once in the inbox (issue 25 §1), at 80x24 and 120x32: the marked
inbox (● before each marked row, the count in the title), the one dialog for the marked set (how many,
which tools and sessions, the highest risk, every risky call by name; approve and decline), and each
row's result under the table after the decision (decided, already decided by someone, expired, refused).

Data comes from the scripted ``FakeBackend`` (its ``decide_batch`` answers as configured), the clock is
frozen at ``fakes.NOW`` and the zone is UTC; behaviour against the real servers is in
``test_inbox_batch.py`` and ``tests/preloop/test_batch_on_preloop.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from textual.pilot import Pilot

from client.errors import PermissionDenied
from client.models import AttentionSnapshot
from client.status import Live
from tests.tui import data
from tests.tui.fakes import NOW, FakeBackend
from tests.tui.test_inbox_snapshots import _open_inbox, approval
from tests.tui.test_tui_snapshots import _app, _settle
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.inbox import InboxScreen

SIZES = [(80, 24), (120, 32)]
IDS = ["80x24", "120x32"]


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _approvals() -> list[Any]:
    return [approval(n) for n in range(6)]


def _backend() -> FakeBackend:
    rows = _approvals()
    backend = FakeBackend(
        sessions=data.sessions(),
        approvals=rows,
        attention=[Live(), AttentionSnapshot(at=NOW, approvals=rows)],
    )
    taken = rows[1].model_copy(
        update={
            "status": "approved",
            "approver_comment": "looks fine",
            "decided_by_human": True,
            "resolved_at": NOW - timedelta(seconds=20),
        }
    )
    backend.settled_first[taken.id] = taken
    backend.settled_first[rows[4].id] = rows[4].model_copy(
        update={"status": "expired", "resolved_at": NOW - timedelta(seconds=5)}
    )
    backend.refused[rows[3].id] = PermissionDenied(
        403,
        "Insufficient permissions. Required: decide_approvals",
        "Insufficient permissions. Required: decide_approvals: ask an owner of this server for access",
    )
    return backend


async def _mark(pilot: Pilot[Any]) -> None:
    """Open the inbox and mark rows 1, 2, 3, 4 and 5 (space on each), leaving the first unmarked."""
    await _open_inbox(pilot)
    for _ in range(5):
        await pilot.press("down", "space")
    await pilot.press("up", "up")
    await _settle(pilot)


async def _approve_dialog(pilot: Pilot[Any]) -> None:
    await _mark(pilot)
    await pilot.press("a")
    await _settle(pilot)
    assert isinstance(pilot.app.screen, ConfirmScreen)
    await pilot.pause(0.1)


async def _decline_dialog(pilot: Pilot[Any]) -> None:
    await _mark(pilot)
    await pilot.press("d")
    await _settle(pilot)
    assert isinstance(pilot.app.screen, DeclineCommentScreen)
    await pilot.press(*"wait for the release")
    await pilot.pause(0.1)


async def _decided(pilot: Pilot[Any]) -> None:
    await _approve_dialog(pilot)
    await pilot.press("y")
    await _settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, InboxScreen) and screen.last_batch is not None
    await pilot.pause(0.1)
    await _settle(pilot)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_marked_inbox(snap_compare: Any, size: tuple[int, int]) -> None:
    """Six approvals, five marked: ● before each marked row's waiting time, "· 5 marked" in the title."""
    assert snap_compare(_app(_backend()), run_before=_mark, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_batch_approve_dialog(snap_compare: Any, size: tuple[int, int]) -> None:
    """``a`` with five marked: how many, in how many sessions, the highest risk, the tools, the sessions,
    and each high- or danger-risk call by name (the medium and unrated ones are counted only)."""
    assert snap_compare(_app(_backend()), run_before=_approve_dialog, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_batch_decline_dialog(snap_compare: Any, size: tuple[int, int]) -> None:
    """``d`` with five marked: the same names, and one comment for all of them being typed."""
    assert snap_compare(_app(_backend()), run_before=_decline_dialog, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_batch_results(snap_compare: Any, size: tuple[int, int]) -> None:
    """After ``y``: two approved, one already approved by an operator (when, with its comment), one
    expired, one refused (403, still waiting and still marked); the unmarked first row untouched."""
    assert snap_compare(_app(_backend()), run_before=_decided, terminal_size=size)
