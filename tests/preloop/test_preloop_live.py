"""Following a session on a (fake) Preloop server through the real client, websocket and REST polling."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from client.backends import connect
from client.backends.preloop import PreloopBackend
from client.backends.preloop.feed import follow
from client.config import Settings
from client.connection import Connection
from client.events import BaseEvent, NoteEvent, SessionEnded, ToolCompleted, ToolStarted
from client.status import Connecting, Ended, Live, LoginNeeded, Missed, Reconnecting, Refused, Skipped
from client.streaming.policy import login_reason
from tests.conftest import until
from tests.fake_preloop import MAIN_SESSION, TOKEN, FakePreloop
from tests.fake_preloop.app import RawText
from tests.preloop.conftest import FAST, Watch

WatchFactory = Callable[[Any], Watch]
UNKNOWN_SESSION = "00000000-0000-0000-0000-000000000000"


def _contiguous(w: Watch) -> bool:
    seqs = [e.seq for e in w.events]
    return seqs == list(range(1, len(seqs) + 1))


def _tool_names(w: Watch) -> list[str]:
    return [e.name for e in w.events if isinstance(e, ToolCompleted)]


async def test_replay_then_live_tool_calls(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    # The recorded history: session start, a warning, Bash and Read, oldest first.
    assert [e.type for e in w.events] == [
        "session.started",
        "preloop.session_warning",
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
    ]
    assert isinstance(w.items[0], Connecting)
    fake.tool_call("Grep", duration_ms=42, arg_sizes={"pattern": 5})
    await w.until(lambda w: "Grep" in _tool_names(w))
    grep_started = next(e for e in w.events if isinstance(e, ToolStarted) and e.name == "Grep")
    grep_done = next(e for e in w.events if isinstance(e, ToolCompleted) and e.name == "Grep")
    assert grep_done.call_id == grep_started.call_id
    assert (grep_done.status, grep_done.duration_ms) == ("ok", 42)
    assert grep_started.args_summary == "pattern (5 chars)"
    assert _tool_names(w) == ["Bash", "Read", "Grep"]
    assert _contiguous(w)


async def test_recorded_frames_after_replay_are_not_shown_twice(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    """The recorded conversation's first two tool calls are already in the replayed activity list."""
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    for phase in (
        "permission_check_pre_tool_use_allow",
        "permission_check_client_allow",
        "notes_pending_pull_deliver",
        "permission_check_carries_note",
    ):
        fake.play(phase)
    await w.until(lambda w: len(w.of_type("note.delivered")) == 3 and len(_tool_names(w)) == 3)
    assert _tool_names(w) == ["Bash", "Read", "Bash"]
    assert [n.note.text for n in w.of_type("note.delivered")] == [
        "Please run the unit tests before committing.",
        "Note addressed to the agent, not a session.",
        "Use the staging database, not prod.",
    ]
    fake.play("session_end_operator_patch")
    await w.done()
    assert isinstance(w.items[-1], Ended)
    assert isinstance(w.events[-1], SessionEnded)
    assert _contiguous(w)


async def test_note_delivery_is_shown_from_the_pushed_event(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    """Note polling is slowed to 30 s here, so the delivery can only come from the websocket."""
    slow_notes = replace(FAST, note_poll=30.0, note_idle_poll=30.0)
    w = watch(follow(client, MAIN_SESSION, timing=slow_notes))
    await w.until(lambda w: bool(w.statuses(Live)))
    note = await client.send_note("Please run the unit tests before committing.", session_id=MAIN_SESSION)
    assert fake.deliver_notes() == [note.note_id]
    await w.until(lambda w: bool(w.of_type("note.delivered")))
    (delivered,) = w.of_type("note.delivered")
    assert delivered.note.note_id == note.note_id
    assert delivered.note.text == "Please run the unit tests before committing."
    assert delivered.note.author.display == "Alice Operator"
    # The push has no sent time and no delivery event; the note is shown whole all the same (it showed
    # "sent -" and "hook" without "(pre_tool_use)" until re-attached, as the poll saw no state change).
    assert delivered.note.created_at == note.created_at is not None
    assert (delivered.note.delivery_channel, delivered.note.delivery_event) == ("hook", "pre_tool_use")
    # Attached afterwards, the replay (the activity list knows as little as the push) shows it whole too.
    again = watch(follow(client, MAIN_SESSION, timing=slow_notes))
    await again.until(lambda w: bool(w.statuses(Live)))
    (replayed,) = again.of_type("note.delivered")
    assert replayed.note.created_at == note.created_at
    assert replayed.note.delivery_event == "pre_tool_use"


async def test_a_note_sent_is_delivered_and_another_withdrawn(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    keep = await client.send_note("Run the unit tests first.", session_id=MAIN_SESSION)
    drop = await client.send_note("Actually, stop touching the migrations.", session_id=MAIN_SESSION)
    await w.until(lambda w: len(w.of_type("note.created")) == 2)
    withdrawn = await client.withdraw_note(drop.note_id)
    assert withdrawn.state == "cancelled"
    await w.until(lambda w: bool(w.of_type("note.cancelled")))
    fake.deliver_notes()
    await w.until(lambda w: bool(w.of_type("note.delivered")))
    by_note = {(e.type, e.note.note_id) for e in w.events if isinstance(e, NoteEvent)}
    assert by_note == {
        ("note.created", keep.note_id),
        ("note.created", drop.note_id),
        ("note.cancelled", drop.note_id),
        ("note.delivered", keep.note_id),
    }

    # Pushed and then polled again: still one delivery, and the cancelled note was never delivered.
    # (A third note-list request has begun only once the second one's answer was taken in.)
    def note_polls() -> int:
        return fake.requests.count(("GET", "/api/v1/operator-notes"))

    polled = note_polls()
    async with asyncio.timeout(30):
        while note_polls() < polled + 3:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    assert len(w.of_type("note.delivered")) == 1
    assert _contiguous(w)


async def test_an_expired_note_is_seen_by_polling(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    note = await client.send_note("This one will expire.", session_id=MAIN_SESSION, expires_in_seconds=60)
    await w.until(lambda w: bool(w.of_type("note.created")))
    fake.expire_note(note.note_id)
    await w.until(lambda w: bool(w.of_type("note.expired")))
    assert w.of_type("note.expired")[0].note.note_id == note.note_id


async def test_an_approval_appears_by_polling_and_is_approved(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    approval_id = fake.request_approval("git push origin main")
    await w.until(lambda w: bool(w.of_type("approval.requested")))
    (requested,) = w.of_type("approval.requested")
    assert requested.approval.id == approval_id
    assert requested.approval.tool_args["command"] == "git push origin main"
    decided = await client.approve(approval_id, "ok, go ahead")
    assert decided.status == "approved"
    client.nudge(MAIN_SESSION)  # harmless twice: the backend already nudges after a decision
    await w.until(lambda w: bool(w.of_type("approval.decided")))
    (event,) = w.of_type("approval.decided")
    assert (event.approval.status, event.approval.approver_comment) == ("approved", "ok, go ahead")
    # The tool call that waited is pushed once it runs.
    await w.until(
        lambda w: any(e.result_summary == "ok, go ahead" for e in w.events if isinstance(e, ToolCompleted))
    )
    assert _contiguous(w)


async def test_a_declined_approval_is_shown_declined(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    approval_id = fake.request_approval("rm -rf build/")
    await w.until(lambda w: bool(w.of_type("approval.requested")))
    await client.decline(approval_id, "no, keep the build dir")
    await w.until(lambda w: bool(w.of_type("approval.decided")))
    assert w.of_type("approval.decided")[0].approval.status == "declined"
    await w.until(lambda w: any(e.status == "denied" for e in w.events if isinstance(e, ToolCompleted)))


async def test_session_end_is_the_last_event_and_pending_notes_turn_undeliverable(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    note = await client.send_note("Left pending until the session ends.", session_id=MAIN_SESSION)
    await w.until(lambda w: bool(w.of_type("note.created")))
    await client.end_session(MAIN_SESSION)
    await w.done()
    assert isinstance(w.items[-1], Ended)
    assert w.items[-1].last_seq == w.events[-1].seq
    assert isinstance(w.events[-1], SessionEnded)
    assert w.events[-1].session.ended_at is not None
    (undeliverable,) = w.of_type("note.undeliverable")
    assert undeliverable.note.note_id == note.note_id
    assert undeliverable.note.undeliverable_reason == "session_ended"
    assert len(w.of_type("session.ended")) == 1
    assert _contiguous(w)


async def test_session_end_by_idle_sweep_is_found_by_polling(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    fake.end_session(push=False)  # Preloop's idle sweep pushes nothing
    await w.done()
    assert isinstance(w.items[-1], Ended)
    assert isinstance(w.events[-1], SessionEnded)


async def test_attaching_to_an_ended_session_replays_and_ends(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    fake.end_session(push=False)
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.done()
    assert not w.statuses(Live)
    assert isinstance(w.items[-1], Ended)
    assert [e.type for e in w.events][-1] == "session.ended"
    assert len(w.of_type("session.ended")) == 1


async def test_unknown_session_is_refused_4404_without_retry(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, UNKNOWN_SESSION, timing=FAST))
    await w.done()
    assert w.items == [Connecting(1), Refused("Runtime session not found", 4404)]
    assert fake.ws_attaches == 0


async def test_a_token_refused_4401_is_waited_out_and_read_again_before_each_attach(
    base_url: str, fake: FakePreloop, watch: WatchFactory
) -> None:
    """The websocket's 4401 is not a refusal: the follower waits, reads the token again before the next
    attach (the upgrade is not an httpx request), and follows once the token is good."""
    tokens = ["wrong-token"]
    async with PreloopBackend(Connection(base_url, "wrong-token", token_source=lambda: tokens[0])) as bad:
        w = watch(follow(bad, MAIN_SESSION, timing=FAST))
        await w.until(lambda w: len(w.statuses(LoginNeeded)) >= 2)
        assert w.items[:2] == [
            Connecting(1),
            LoginNeeded(1, w.items[1].delay, login_reason(4401)),  # type: ignore[union-attr]
        ]
        assert not w.statuses(Refused)
        tokens[0] = TOKEN  # `preloop login` in another terminal
        await w.until(lambda w: bool(w.statuses(Live)))
        assert [auth for _, auth in fake.ws_upgrades][-1] == f"Bearer {TOKEN}"
        await w.close()  # before its backend closes: a poll after that would meet a closed client


async def test_a_non_uuid_session_id_never_reaches_the_server(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, "not-a-uuid", timing=FAST))
    await w.done()
    assert len(w.items) == 1 and isinstance(w.items[0], Refused)
    assert "not a session id" in w.items[0].reason
    assert fake.requests == []


async def test_reconnect_counts_the_events_missed_while_away(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    fake.hold_connections()
    fake.drop_sockets()
    await w.until(lambda w: bool(w.statuses(Reconnecting)))
    fake.tool_call("Edit")
    fake.tool_call("Write")
    fake.hold_connections(False)
    await w.until(lambda w: bool(w.statuses(Missed)))
    assert w.statuses(Missed) == [Missed(4)]
    await w.until(lambda w: len(w.statuses(Live)) == 2)
    assert _tool_names(w) == ["Bash", "Read", "Edit", "Write"]
    missed_at = w.items.index(Missed(4))
    assert isinstance(w.items[missed_at + 1], Live)
    assert w.statuses(Reconnecting)[0].reason == "connection closed (1012)"
    # Live again: pushes flow as before.
    fake.tool_call("Glob")
    await w.until(lambda w: "Glob" in _tool_names(w))
    assert _contiguous(w)


async def test_a_silent_connection_is_declared_dead_and_replaced(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=replace(FAST, dead_after=1.0)))
    await w.until(lambda w: bool(w.statuses(Live)))
    # what the fake received, not what the follower yielded: Watch.until would look again only after 20 s
    await until(None, lambda: any(m == {"type": "ping"} for m in fake.ws_received), "the client's first ping")
    fake.muted = True  # no pong, no push: the connection is alive but says nothing
    await w.until(lambda w: bool(w.statuses(Reconnecting)), within=20.0)
    assert "no message for" in w.statuses(Reconnecting)[0].reason
    fake.muted = False
    await w.until(lambda w: len(w.statuses(Live)) == 2, within=20.0)
    assert fake.ws_attaches >= 2


async def test_model_calls_become_steps(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    fake.model_call("Let me look at the failing test.", tool_calls=1)
    fake.model_call("The fix is in; all tests pass.")
    await w.until(lambda w: len(w.of_type("model.step")) == 2)
    first, second = w.of_type("model.step")
    assert (first.phase, first.iteration, first.text) == ("commentary", 1, "Let me look at the failing test.")
    assert (second.phase, second.iteration) == ("final_answer", 2)
    assert [d.text for d in w.of_type("model.delta")] == [
        "Let me look at the failing test.",
        "The fix is in; all tests pass.",
    ]


async def test_after_hides_what_was_already_seen(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, after=4, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    assert [e.seq for e in w.events] == [5, 6]


async def test_client_follow_detects_preloop_and_uses_the_websocket(
    base_url: str, fake: FakePreloop, watch: WatchFactory
) -> None:
    async with await connect(Settings(base_url, TOKEN)) as detecting:
        w = watch(detecting.follow(UNKNOWN_SESSION))
        await w.done()
        assert detecting.server_kind == "preloop"
    assert w.items[-1] == Refused("Runtime session not found", 4404)
    assert all(not isinstance(item, BaseEvent) for item in w.items)


async def test_unreadable_frames_are_skipped_and_counted(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    fake.push(MAIN_SESSION, RawText("{not json"))
    fake.push(
        MAIN_SESSION,
        {
            "type": "runtime_session_ended",
            "payload": {"id": MAIN_SESSION, "started_at": "garbage"},
            "runtime_session_id": MAIN_SESSION,
            "timestamp": "2026-11-30T11:37:04Z",
        },
    )
    fake.tool_call("Grep")
    await w.until(lambda w: "Grep" in _tool_names(w))
    assert [s.total for s in w.statuses(Skipped)] == [1, 2]
    assert not w.of_type("session.ended")  # the unreadable end frame did not end the stream
    assert _contiguous(w)


def test_nothing_above_the_client_layer_knows_about_preloop() -> None:
    """The TUI and the CLI use the same client interface for both kinds of server."""
    root = Path(__file__).resolve().parents[2]
    offenders = [
        str(path.relative_to(root))
        for layer in ("tui", "widgets")
        for path in (root / layer).rglob("*.py")
        if re.search(r"preloop_(live|map)", path.read_text())
    ]
    assert offenders == []


async def test_the_token_travels_in_the_header_only(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    w = watch(follow(client, MAIN_SESSION, timing=FAST))
    await w.until(lambda w: bool(w.statuses(Live)))
    assert fake.ws_upgrades == [("", f"Bearer {TOKEN}")]


async def test_changes_made_through_the_client_show_at_once_not_at_the_next_poll(
    client: PreloopBackend, fake: FakePreloop, watch: WatchFactory
) -> None:
    """Preloop pushes neither new notes, withdrawals nor decisions: the Backend makes the follower poll now.

    The poll timers here are a minute long, so only the Backend's own nudge can make these appear in time
    (within 20 s: generous for a loaded machine, still a third of a poll).
    """
    slow = replace(FAST, note_poll=60.0, note_idle_poll=60.0, approval_poll=60.0)
    w = watch(follow(client, MAIN_SESSION, timing=slow))
    await w.until(lambda w: bool(w.statuses(Live)))
    note = await client.send_note("Use the staging database.", session_id=MAIN_SESSION)
    await w.until(lambda w: bool(w.of_type("note.created")), within=20.0)
    await client.withdraw_note(note.note_id)
    await w.until(lambda w: bool(w.of_type("note.cancelled")), within=20.0)
    approval_id = fake.request_approval("git push origin main")
    client.nudge(MAIN_SESSION)  # stands in for the approval timer, so the follower knows it is pending
    await w.until(lambda w: bool(w.of_type("approval.requested")), within=20.0)
    await client.approve(approval_id)
    await w.until(lambda w: bool(w.of_type("approval.decided")), within=20.0)
    assert w.of_type("approval.decided")[0].approval.id == approval_id
