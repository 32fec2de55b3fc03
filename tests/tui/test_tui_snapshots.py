"""Snapshot tests: every screen and state that matters, at a fixed size and a frozen clock.

The SVGs live in the top-level ``snapshots/test_snapshots/`` (see ``conftest.py``). The data comes from a
scripted in-memory backend (``fakes.py``) so the pictures are deterministic; behaviour against the real
server is covered by ``test_pilot.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.pilot import Pilot

from client.errors import ServerUnreachable
from client.models import AttentionSnapshot, Session
from client.status import Ended, Live, Reconnecting
from tests.tui import data
from tests.tui.fakes import NOW, FakeBackend, frozen_clock
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from widgets.composer import Composer
from widgets.keys_line import KeysLine


def _app(backend: FakeBackend, **kwargs: Any) -> PreloopApp:
    return PreloopApp(backend, clock=frozen_clock, refresh_interval=0, **kwargs)


def _quiet(app: PreloopApp) -> bool:
    """Nothing left that would still change the picture: loads done, the script taken and applied, and no
    deferred key re-check waiting (the stream worker itself never finishes: it waits for more)."""
    if any(
        w.group not in ("attach-stream", "attention", "standing") and not w.is_finished for w in app.workers
    ):
        return False
    if app.key_pace.holding:  # a letter command still waits for its quiet window
        return False
    fake = app.backend
    if isinstance(fake, FakeBackend) and app.attention and not fake.attention_consumed:
        return False
    screen = app.screen
    if not isinstance(screen, AttachScreen):
        return True
    following = any(w.group == "attach-stream" and not w.is_finished for w in app.workers)
    backend = screen.backend
    streamed = not following or not isinstance(backend, FakeBackend) or backend.script_consumed
    return (
        streamed
        and screen.caught_up  # painted, the keys line mounted (once the backlog is in), the view placed
        and not any(keys.checking for keys in screen.query(KeysLine))
    )


async def _wait_quiet(pilot: Pilot[Any]) -> None:
    """Wait on the condition, not on the clock: under CPU load the workers and timers run late (text
    cursors are made steady for every snapshot, see ``tests/tui/conftest.py``)."""
    async with asyncio.timeout(60):
        while not _quiet(pilot.app):
            await pilot.pause(0.02)
    await pilot.pause()


async def _settle(pilot: Pilot[Any]) -> None:
    """Let the load and stream workers run, then paint the timeline now."""
    await _wait_quiet(pilot)
    await pilot.pause()


def _attach_app(script: list[Any], **kwargs: Any) -> PreloopApp:
    session = kwargs.pop("session", data.session())
    backend = FakeBackend(
        sessions=[session],
        notes=kwargs.pop("notes", []),
        approvals=kwargs.pop("approvals", []),
        script=script,
    )
    return _app(backend, start_session_id=data.SID, **kwargs)


# ------------------------------------------------------------------ sessions screen


def _waiting(sessions: list[Session]) -> list[AttentionSnapshot]:
    """The attention feed of a server whose rows say what waits: one pending approval per row that counts
    one (the PENDING column follows the live inbox, as the header's count does)."""
    pending = [
        data.approval(id=f"ap-{row.id[:8]}", runtime_session_id=row.id)
        for row in sessions
        if row.pending_approval_count
    ]
    return [AttentionSnapshot(at=NOW, approvals=pending)]


def _listing(sessions: list[Session]) -> FakeBackend:
    return FakeBackend(sessions=sessions, attention=_waiting(sessions))


def test_sessions_list_with_data(snap_compare: Any) -> None:
    """Three sessions: live with a pending approval (highlighted), idle with a fallback title, ended."""
    assert snap_compare(_app(_listing(data.sessions())), run_before=_settle)


def test_sessions_list_wide(snap_compare: Any) -> None:
    """The same list at 200×50."""
    app = _app(_listing(data.sessions()))
    assert snap_compare(app, run_before=_settle, terminal_size=(200, 50))


def _demo_like_sessions() -> list[Session]:
    """What `preloop demo` shows after a while: three titles that differ only at their end."""
    base = "Add an index for invoice lookups"
    rows = [
        Session(
            id=f"{n}d0e0a00-0000-4000-8000-00000000000{n}",
            agent_name="migrator",
            agent_kind="claude_code",
            title=base if n == 1 else f"{base} (shift {n})",
            started_at=data.ago(minutes=30 - 10 * n),
            last_activity_at=data.ago(minutes=29 - 10 * n) if n < 3 else data.ago(seconds=8),
            ended_at=data.ago(minutes=29 - 10 * n) if n < 3 else None,
            tool_call_count=5 * n,
            latest_model_alias="claude-sonnet-4",
            pending_approval_count=1 if n == 3 else 0,
        )
        for n in (1, 2, 3)
    ]
    return [*rows, *data.sessions()[:2]]


def test_sessions_list_at_80_columns_keeps_what_tells_titles_apart(snap_compare: Any) -> None:
    """80×24: model and tool columns give way first; "(shift 2)" / "(shift 3)" stay in view; j moves."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("j", "j")
        await pilot.pause()

    app = _app(_listing(_demo_like_sessions()))
    assert snap_compare(app, run_before=run_before, terminal_size=(80, 24))


def test_sessions_list_at_60_columns(snap_compare: Any) -> None:
    """60×20: the same rows, still one line each, the distinguishing ends kept."""
    app = _app(_listing(_demo_like_sessions()))
    assert snap_compare(app, run_before=_settle, terminal_size=(60, 20))


def test_sessions_list_empty(snap_compare: Any) -> None:
    """No sessions: an explanation and what to do, not an empty grid."""
    assert snap_compare(_app(FakeBackend()), run_before=_settle)


def test_sessions_server_down(snap_compare: Any) -> None:
    """Server down: a banner with the client error's sentence and the retry key."""
    fail = ServerUnreachable("could not connect to http://127.0.0.1:8765: is `preloop serve` running?")
    assert snap_compare(_app(FakeBackend(fail=fail)), run_before=_settle)


# ------------------------------------------------------------------ attach screen


def test_attach_streaming_commentary(snap_compare: Any) -> None:
    """Narration (dim), tool calls with status and duration, and provisional streaming text."""
    app = _attach_app([Live(), *data.streaming_script()])
    assert snap_compare(app, run_before=_settle)


def test_attach_final_answer(snap_compare: Any) -> None:
    """The run's answer stands out and renders as Markdown."""
    app = _attach_app([Live(), *data.final_script()])
    assert snap_compare(app, run_before=_settle)


def test_attach_pending_approval(snap_compare: Any) -> None:
    """A pending approval: tool, summary, risk, the command it runs (with its cwd and timeout), and the
    approve/decline buttons."""
    app = _attach_app([Live(), *data.streaming_script()], approvals=[data.approval()])
    assert snap_compare(app, run_before=_settle)


def test_attach_notes_all_states(snap_compare: Any) -> None:
    """Every one of the eight note states with its icon and word, times, channel and turn (wide)."""
    app = _attach_app([Live()], notes=data.notes_all_states())
    assert snap_compare(app, run_before=_settle, terminal_size=(200, 50))


def test_attach_reconnecting(snap_compare: Any) -> None:
    """The connection dropped: header and banner say reconnecting in Ns, attempt n."""
    app = _attach_app(
        [Live(), *data.final_script()[:3], Reconnecting(attempt=3, delay=4.0, reason="connection reset")]
    )
    assert snap_compare(app, run_before=_settle)


def test_attach_ended_session(snap_compare: Any) -> None:
    """An ended session: the banner says so and the composer is gone."""
    ended = data.session(ended_at=data.NOW)
    app = _attach_app([*data.final_script(), Ended(last_seq=8)], session=ended)
    assert snap_compare(app, run_before=_settle)


def test_attach_read_only(snap_compare: Any) -> None:
    """Read-only: no composer, approvals shown without buttons, the header says read-only."""
    app = _attach_app([Live(), *data.streaming_script()], approvals=[data.approval()], read_only=True)
    assert snap_compare(app, run_before=_settle)


def test_attach_multiline_draft(snap_compare: Any) -> None:
    """A three-line draft typed with Ctrl+J (the composer grows, the counter counts)."""

    async def _type(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        pilot.app.screen.query_one(Composer).focus()
        await pilot.press(*"stop", "ctrl+j", *"use", "ctrl+j", *"staging")
        await _wait_quiet(pilot)

    app = _attach_app([Live(), *data.streaming_script()])
    assert snap_compare(app, run_before=_type)


def test_attach_hostile_text(snap_compare: Any) -> None:
    """Markup, OSC/CSI escapes and bidi overrides in agent text, notes and tool args show literally."""
    note = data.notes_all_states()[0].model_copy(update={"text": data.HOSTILE})
    hostile_approval = data.approval(
        summary=data.HOSTILE, tool_args={"cmd": data.HOSTILE}, tool_name="[b]x[/b]"
    )
    app = _attach_app(
        [Live(), *data.hostile_script()],
        notes=[note],
        approvals=[hostile_approval],
        session=data.session(title=data.HOSTILE),
    )
    assert snap_compare(app, run_before=_settle)


def test_help_screen(snap_compare: Any) -> None:
    """The ``?`` screen lists every key."""

    async def _help(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("question_mark")
        await _wait_quiet(pilot)

    assert snap_compare(_app(FakeBackend(sessions=data.sessions())), run_before=_help)


def test_attach_no_color(snap_compare: Any, monkeypatch: Any) -> None:
    """NO_COLOR: no colours at all, yet every state still reads from its icon and word."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = _attach_app(
        [Live(), *data.streaming_script()], approvals=[data.approval()], notes=data.notes_all_states()[:4]
    )
    assert snap_compare(app, run_before=_settle)


def test_attach_keys_at_80_columns(snap_compare: Any) -> None:
    """Out of the note box with an approval and a pending note: every key, ``? Help`` too, fits at 80."""

    async def _leave_box(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape")
        await _wait_quiet(pilot)  # key availability is re-checked a moment after a change

    app = _attach_app(
        [Live(), *data.streaming_script()], approvals=[data.approval()], notes=data.notes_all_states()[:1]
    )
    assert snap_compare(app, run_before=_leave_box)


def test_attach_unknown_session(snap_compare: Any) -> None:
    """An id the server does not know: one error banner with the way back, no note box, no stream."""
    app = _app(FakeBackend(sessions=data.sessions()), start_session_id="00000000-0000-4000-8000-000000000000")
    assert snap_compare(app, run_before=_settle)


def test_decline_comment_dialog(snap_compare: Any) -> None:
    """d opens the comment dialog: what is being declined, the optional comment, buttons for the mouse."""

    async def _decline(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "d")
        await pilot.pause()
        await pilot.press(*"not on prod")
        await _wait_quiet(pilot)

    app = _attach_app([Live(), *data.streaming_script()], approvals=[data.approval()])
    assert snap_compare(app, run_before=_decline)


def test_attach_expanded_arguments(snap_compare: Any) -> None:
    """x shows the whole call (the card shows its first lines): the session, tool, risk and summary, then
    every line of the command and its fields, a long one scrolling sideways; nothing is decided there."""

    async def _expand(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "x")
        await _wait_quiet(pilot)

    args = {"command": "alembic upgrade head", "cwd": "/srv/repos/payments", "env": {"DB": "staging"}}
    app = _attach_app(
        [Live(), *data.streaming_script()],
        approvals=[data.approval(tool_args={**args, "why": "the index speeds up invoice lookups " * 4})],
    )
    assert snap_compare(app, run_before=_expand)
