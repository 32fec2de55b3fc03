"""The session core (``client.session``): one home for a session's notes and approvals, the REST/stream
merge, and the typed change each input reports. Pure: events and server answers are built here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from client.errors import NotFound
from client.events import Event, event_from_dict
from client.models import Approval, Note, Session
from client.session import ApprovalLeft, SessionCore, SessionOver
from client.status import Ended, Live, Skipped
from client.steering import AlreadySettled, Decided, Decisions, Sent, TooLate, Withdrawn

SID = "3f2a9c1e-7b4d-4e8a-9c2f-0d1e2f3a4b5c"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class Feed:
    """Stream events for one session, numbered in order."""

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, kind: str, seconds: float = 0, **body: Any) -> Event:
        self.seq += 1
        at = (T0 + timedelta(seconds=seconds)).isoformat()
        return event_from_dict({"seq": self.seq, "type": kind, "session_id": SID, "at": at, **body})


def note(note_id: str, state: str = "pending", text: str = "run the tests") -> dict[str, Any]:
    return {"note_id": note_id, "state": state, "text": text, "runtime_session_id": SID}


def approval(approval_id: str, status: str = "pending", **more: Any) -> dict[str, Any]:
    return {"id": approval_id, "tool_name": "Bash", "status": status, "runtime_session_id": SID, **more}


A1 = "00000000-0000-4000-8000-000000000001"
A2 = "00000000-0000-4000-8000-000000000002"


def test_a_list_that_answers_after_the_stream_does_not_undo_what_the_stream_said() -> None:
    """The lists asked for on attach answer late: a note the stream already saw delivered and an approval
    it saw decided keep the stream's state; what only the lists know is added."""
    feed, core = Feed(), SessionCore(SID)
    core.apply_events(
        [
            feed("note.created", note=note("n1")),
            feed("note.delivered", 1, note=note("n1", "delivered")),
            feed("approval.requested", 2, approval=approval(A1)),
            feed("approval.decided", 3, approval=approval(A1, "approved")),
        ]
    )
    change = core.lists_loaded(
        [Note.model_validate(note("n1")), Note.model_validate(note("n2", text="only listed"))],
        [Approval.model_validate(approval(A1)), Approval.model_validate(approval(A2))],
    )
    assert {k: n.state for k, n in core.notes.items()} == {"n1": "delivered", "n2": "pending"}
    assert change.notes == ("n2",)
    assert list(core.pending) == [A2]
    assert [a.id for a in change.approvals_added] == [A2] and change.approvals_left == ()


def test_the_answer_to_an_action_here_is_newest_and_a_finished_note_never_moves_back() -> None:
    feed, core = Feed(), SessionCore(SID)
    core.apply_events([feed("note.created", note=note("n1"))])
    change = core.record(Withdrawn(Note.model_validate(note("n1", "cancelled"))))
    assert core.notes["n1"].state == "cancelled" and change.notes == ("n1",)
    core.lists_loaded([Note.model_validate(note("n1"))], [])  # a stale copy
    core.apply_events([feed("note.created", note=note("n1"))])  # a replayed event
    assert core.notes["n1"].state == "cancelled"
    core.record(TooLate(Note.model_validate(note("n1", "cancelled"))))
    sent = core.record(Sent(Note.model_validate(note("n3"))))
    assert sent.notes == ("n3",) and "n3" in core.sent_here


def test_an_approval_that_leaves_says_whether_it_was_decided_here_and_when() -> None:
    """One record of the approvals decided in this process (shared with the inbox): a decision from here
    and its echo are "here"; another operator's is news only if it is recent, not replayed history."""
    decisions = Decisions()
    feed, core = Feed(), SessionCore(SID, decisions=decisions, clock=lambda: T0 + timedelta(minutes=5))
    core.apply_events(
        [feed("approval.requested", approval=approval(A1)), feed("approval.requested", approval=approval(A2))]
    )
    decisions.start(A1)
    mine = core.apply_events([feed("approval.decided", 270, approval=approval(A1, "approved"))])
    (left,) = mine.approvals_left
    assert left == ApprovalLeft(left.approval, here=True, at=T0 + timedelta(seconds=270))
    assert not core.is_news(left)
    theirs = core.apply_events([feed("approval.decided", 295, approval=approval(A2, "declined"))])
    assert theirs.approvals_left[0].here is False and core.is_news(theirs.approvals_left[0])
    assert core.pending == {} and theirs.approvals_updated


def test_a_lost_race_is_recorded_with_the_row_that_won() -> None:
    core = SessionCore(SID)
    core.lists_loaded([], [Approval.model_validate(approval(A1))])
    won = Approval.model_validate(approval(A1, "approved", approver_comment="ship it"))
    change = core.record(AlreadySettled(won, "decline"))
    (left,) = change.approvals_left
    assert left.approval.approver_comment == "ship it" and not left.here
    later = core.record(Decided(Approval.model_validate(approval(A2, "approved")), "approve"))
    assert later.approvals_left == ()  # it was never shown as pending


def test_the_end_the_row_and_the_status_come_as_typed_changes() -> None:
    feed, core = Feed(), SessionCore(SID)
    row = core.row_loaded(Session(id=SID, agent_name="builder"))
    assert row.session is not None and row.session.agent_name == "builder" and row.ended is None
    assert core.apply_status(Live(last_seq=0)).status == Live(last_seq=0)
    ended = core.apply_events(
        [feed("session.ended", reason="finished its shift", session={"id": SID, "ended_at": T0.isoformat()})]
    )
    assert ended.ended == SessionOver("finished its shift") and ended.timeline and core.ended
    assert ended.session is not None and ended.session.ended_at is not None
    assert core.apply_status(Ended()).ended is None  # already said, with its reason


def test_what_the_agent_did_after_reading_a_note_is_a_note_change() -> None:
    feed, core = Feed(), SessionCore(SID)
    core.apply_events(
        [feed("note.created", note=note("n1")), feed("note.delivered", note=note("n1", "delivered"))]
    )
    change = core.apply_events([feed("tool.started", call_id="c1", name="Bash", args_summary="make test")])
    assert change.notes == ("n1",) and core.thens["n1"] == "tool Bash: make test"
    entry, _ = core.then_of("n1")
    assert entry is not None and entry.name == "Bash"
    assert core.then_of(None)[0] is entry  # no note highlighted: the newest read one


def test_a_backlog_is_replaying_until_the_newest_stored_event_is_in_even_with_nothing_read_ahead() -> None:
    """Where the server says what it had stored when the stream opened (``Live.stored_through``), the core
    is replaying until that event is in, also between reads (nothing read and not applied): a front end
    paints a backlog at its own pace until then, and live events as they come after."""
    feed, core = Feed(), SessionCore(SID)
    core.apply_status(Live())
    assert not core.replaying  # a server that does not say: only what was read and not applied counts
    core.apply_status(Live(stored_through=3))
    core.apply_events(
        [feed("run.started", run_id="r1", task="t"), feed("model.delta", run_id="r1", iteration=1, text="a")]
    )
    assert core.behind == 0 and core.replaying
    core.apply_events([feed("model.delta", run_id="r1", iteration=1, text="b")])
    assert core.timeline.last_seq == 3 and not core.replaying
    core.apply_status(Live(stored_through=9))  # (a reconnect: the replay up to 9 is a backlog again)
    assert core.replaying
    core.apply_status(Skipped("bad frame", 1))  # maybe the last stored one: no waiting for it for ever
    assert not core.replaying


async def test_a_refused_row_is_the_refusal_and_the_stream_need_not_say_it_again() -> None:
    core = SessionCore(SID)
    assert await core.refusal_is_news()  # nothing asked: a refused stream is news
    change = core.row_loaded(NotFound(404, "Runtime session not found"))
    assert change.refused is not None and core.refused is change.refused
    assert not await core.refusal_is_news()


class Stream:
    """A backend whose stream yields ``items`` (an exception is raised where it stands), then waits."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.closed = False

    async def follow(self, session_id: str, *, tail: int | None = None) -> Any:
        import asyncio

        try:
            for item in self.items:
                if isinstance(item, Exception):
                    raise item
                yield item
            await asyncio.Event().wait()  # a live stream: nothing more for now
        finally:
            self.closed = True


async def test_follow_applies_what_arrived_together_and_keeps_statuses_in_their_place() -> None:
    """A backlog read at once is applied in batches (not one change per event), each status yielded where
    it came; closing the follow closes the stream."""
    feed = Feed()
    backlog = [
        feed("tool.started", call_id=f"c{n}", name="Bash", args_summary=f"echo {n}") for n in range(300)
    ]
    stream = Stream([Live(), *backlog, feed("session.ended", session={"id": SID})])
    core = SessionCore(SID)
    changes = []
    follow = core.follow(stream)  # type: ignore[arg-type]
    async for change in follow:
        changes.append(change)
        if change.ended is not None:
            break
    await follow.aclose()  # type: ignore[attr-defined]
    assert isinstance(changes[0].status, Live)
    applied = [c.timeline.applied for c in changes if c.timeline is not None]
    assert sum(applied) == 301 and len(applied) < 301 / 10
    assert core.ended and len(core.timeline) == 301 and core.behind == 0
    assert stream.closed


async def test_a_stream_that_fails_ends_in_one_refused_status_after_what_came_before() -> None:
    feed = Feed()
    stream = Stream([Live(), feed("run.started", run_id="r1", task="fix"), NotFound(404, "no such session")])
    core = SessionCore(SID)
    changes = [change async for change in core.follow(stream)]  # type: ignore[arg-type]
    assert isinstance(changes[0].status, Live)
    assert changes[1].timeline is not None and changes[1].timeline.applied == 1
    assert [type(c.status).__name__ for c in changes[2:]] == ["Refused"]
    assert "no such session" in str(changes[2].status)
