"""Snapshot tests of the attention inbox: empty, many, expiring, decided elsewhere, and the header count.

Data comes from the scripted ``FakeBackend`` (its ``watch_attention`` yields the given snapshot and
events, then waits), with the clock frozen at ``fakes.NOW``; behaviour against the real server is in
``test_inbox_pilot.py``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from textual.pilot import Pilot

from client.events import ApprovalDecided, NoteEvent
from client.models import Approval, AttentionSnapshot, Note
from client.status import Live
from tests.tui import data
from tests.tui.fakes import NOW, FakeBackend, ago
from tests.tui.test_tui_snapshots import _app, _settle
from tui.screens.inbox import InboxScreen

AGENTS = ["builder", "tester", "deployer", "reviewer", "migrator", "docs-bot", "triage", "release"]
TOOLS = [
    ("Bash", {"command": "git push origin main"}, "danger"),
    ("Write", {"file_path": "src/checkout.py", "content": "def total(cart): ..."}, "medium"),
    ("Bash", {"command": "rm -rf build/ dist/"}, "high"),
    ("WebFetch", {"url": "https://example.com/api"}, None),
]


def approval(n: int, **update: Any) -> Approval:
    tool, args, risk = TOOLS[n % len(TOOLS)]
    base = Approval(
        id=f"a{n:03d}0000-0000-4000-8000-000000000000",
        tool_name=tool,
        tool_args=args,
        summary=f"Allow {tool}?",
        status="pending",
        requested_at=ago(minutes=30 - 3 * n),
        expires_at=NOW + timedelta(minutes=5 + n),
        runtime_session_id=f"{n:02d}{n:02d}abcd-0000-4000-8000-000000000000",
        managed_agent_name=AGENTS[n % len(AGENTS)],
        risk_level=risk,
    )
    return base.model_copy(update=update)


def failed_note(n: int, state: str, **update: Any) -> Note:
    return Note(
        note_id=f"note{n}",
        state=state,
        text=["Run the unit tests before pushing.", "Use the staging database, not prod."][n % 2],
        runtime_session_id=f"{n:02d}{n:02d}abcd-0000-4000-8000-000000000000",
        created_at=ago(hours=2),
        expired_at=ago(minutes=40 + n) if state == "expired" else None,
        undeliverable_at=ago(minutes=10 + n) if state == "undeliverable" else None,
        undeliverable_reason="session_ended" if state == "undeliverable" else None,
        **update,
    )


async def _open_inbox(pilot: Pilot[Any]) -> None:
    await _settle(pilot)
    await pilot.press("i")
    assert isinstance(pilot.app.screen, InboxScreen)
    await _settle(pilot)


def _inbox_app(*attention: Any) -> Any:
    return _app(FakeBackend(sessions=data.sessions(), attention=[Live(), *attention]))


def test_inbox_empty(snap_compare: Any) -> None:
    """Nothing pending anywhere: a sentence saying so, an empty notes section, the feed live."""
    app = _inbox_app(AttentionSnapshot(at=NOW))
    assert snap_compare(app, run_before=_open_inbox)


def test_inbox_many(snap_compare: Any) -> None:
    """Eight approvals from eight sessions, oldest first, with session, tool, risk, countdown and
    arguments; three notes that never arrived below (wide terminal)."""
    snap = AttentionSnapshot(
        at=NOW,
        approvals=[approval(n) for n in range(8)],
        notes=[failed_note(1, "undeliverable"), failed_note(2, "expired"), failed_note(3, "failed")],
    )
    assert snap_compare(_inbox_app(snap), run_before=_open_inbox, terminal_size=(140, 34))


def test_inbox_expiring(snap_compare: Any) -> None:
    """Countdowns: one already due ("expiring"), one under a minute (red), one with minutes left."""
    snap = AttentionSnapshot(
        at=NOW,
        approvals=[
            approval(0, expires_at=NOW - timedelta(seconds=1)),
            approval(1, expires_at=NOW + timedelta(seconds=42)),
            approval(2, expires_at=NOW + timedelta(minutes=4, seconds=10)),
        ],
    )
    assert snap_compare(_inbox_app(snap), run_before=_open_inbox)


def test_inbox_decided_elsewhere(snap_compare: Any) -> None:
    """Two approvals, then another operator declines one with a comment and a note goes undeliverable:
    the approval leaves the table, a line says who settled it, and the note joins the list."""
    first, second = approval(0), approval(1)
    declined = second.model_copy(update={"status": "declined", "approver_comment": "not on a Friday"})
    note = failed_note(4, "undeliverable")
    app = _inbox_app(
        AttentionSnapshot(at=NOW, approvals=[first, second]),
        ApprovalDecided(seq=9, session_id=second.runtime_session_id or "", at=NOW, approval=declined),
        NoteEvent(type="note.undeliverable", seq=10, session_id="x", at=NOW, note=note),
    )
    assert snap_compare(app, run_before=_open_inbox)


def test_sessions_header_shows_the_inbox_count(snap_compare: Any) -> None:
    """The sessions list's header carries the count of what waits across all sessions."""
    snap = AttentionSnapshot(at=NOW, approvals=[approval(0), approval(1), approval(2)])
    assert snap_compare(_inbox_app(snap), run_before=_settle)


def test_attach_header_shows_the_inbox_count(snap_compare: Any) -> None:
    """An attach screen's header carries the same count, at its right."""
    backend = FakeBackend(
        sessions=[data.session()],
        script=[Live(), *data.streaming_script()],
        attention=[Live(), AttentionSnapshot(at=NOW, approvals=[approval(0), approval(1)])],
    )
    assert snap_compare(_app(backend, start_session_id=data.SID), run_before=_settle)
