"""The digest and the shift handoff (``client.digest``) computed from a session core fed with events: what
an operator coming back, or taking over a shift, reads first. Pure: events and rows are built here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from client.digest import Handoff, Since, digest_lines, digest_markdown, handoff_lines, session_digest
from client.events import Event, event_from_dict
from client.models import Session
from client.session import SessionCore

SID = "3f2a9c1e-7b4d-4e8a-9c2f-0d1e2f3a4b5c"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


class Feed:
    """Stream events for one session, numbered in order, ``seconds`` after T0."""

    def __init__(self, session_id: str = SID) -> None:
        self.seq = 0
        self.session_id = session_id

    def __call__(self, kind: str, seconds: float = 0, **body: Any) -> Event:
        self.seq += 1
        at = (T0 + timedelta(seconds=seconds)).isoformat()
        return event_from_dict(
            {"seq": self.seq, "type": kind, "session_id": self.session_id, "at": at, **body}
        )


def _approval(approval_id: str, status: str, seconds: float, **more: Any) -> dict[str, Any]:
    resolved = None if status == "pending" else (T0 + timedelta(seconds=seconds)).isoformat()
    return {"id": approval_id, "tool_name": "Bash", "status": status, "resolved_at": resolved, **more}


def _ask(feed: Feed, approval_id: str, status: str, seconds: float, **more: Any) -> list[Event]:
    return [
        feed("approval.requested", seconds, approval=_approval(approval_id, "pending", seconds)),
        feed("approval.decided", seconds + 1, approval=_approval(approval_id, status, seconds + 1, **more)),
    ]


def _trial_core() -> SessionCore:
    """The trial's session: four approvals expired while nobody was there, then the operator declined one
    (with a comment) and approved another; a run failed, two notes never arrived, an error event."""
    feed, core = Feed(), SessionCore(SID)
    core.row_loaded(Session(id=SID, agent_name="builder", title="Fix the build", started_at=T0))
    events: list[Event] = [feed("run.started", 1, run_id="r1", task="fix the build")]
    for n in range(4):
        events += _ask(feed, f"a{n}", "expired", 10 + 10 * n)
    events += _ask(feed, "d1", "declined", 60, decided_by_human=True, approver_comment="not on prod")
    events += _ask(feed, "d2", "approved", 70, decided_by_human=True)
    for n, text in enumerate(("use staging", "stop the deploy")):
        note = {"note_id": f"n{n}", "state": "pending", "text": text}
        events += [
            feed("note.created", 80 + n, note=note),
            feed("note.undeliverable", 81 + n, note={**note, "state": "undeliverable"}),
        ]
    events += [
        feed("agent.warning_error", 90, message="quota nearly spent"),
        feed("run.failed", 95, run_id="r1", error="context window exceeded"),
    ]
    core.apply_events(events)
    return core


def test_the_text_digest_names_the_decisions_first_and_hides_none_of_them() -> None:
    """The trial: four expiries came first in time, so "+3 more" hid the operator's own decline."""
    digest = session_digest(_trial_core(), Since(T0), T0 + timedelta(minutes=5))
    lines = digest_lines(digest)
    [approvals] = [line for line in lines if line.startswith("Approvals:")]
    declined = approvals.index("✗ Bash declined by an operator: “not on prod”")
    approved = approvals.index("✓ Bash approved by an operator")
    expired = approvals.index("4 expired")
    assert declined < expired and approved < expired
    assert "more" not in approvals


def test_the_text_digest_drops_no_problem_silently() -> None:
    """Every problem the Markdown digest lists is on a text line, or counted there."""
    digest = session_digest(_trial_core(), Since(T0), T0 + timedelta(minutes=5))
    text = "\n".join(digest_lines(digest))
    markdown = digest_markdown(digest)
    for words in ("context window exceeded", "use staging", "stop the deploy", "quota nearly spent"):
        assert words in markdown
        assert words in text, words
    assert 3 <= len(digest_lines(digest)) <= 6


LATE = Session(id=SID, agent_name="migrator", started_at=T0 + timedelta(hours=7))


def _ended_core() -> SessionCore:
    """A session that started late in the window, had an approval expire and a denied call, and ended with
    nothing waiting (the demo's migrator finishing its shift)."""
    feed, core = Feed(), SessionCore(SID)
    start = T0 + timedelta(hours=7)
    core.row_loaded(LATE)
    events = [feed("run.started", 7 * 3600, run_id="r1", task="add an index")]
    events += _ask(feed, "x1", "expired", 7 * 3600 + 10)
    events += [
        feed("tool.started", 7 * 3600 + 12, run_id="r1", call_id="c1", name="Bash", args_summary="migrate"),
        feed("tool.completed", 7 * 3600 + 12, run_id="r1", call_id="c1", name="Bash", status="denied"),
        feed(
            "session.ended",
            7 * 3600 + 30,
            reason="finished its shift",
            session={"id": SID, "ended_at": (start + timedelta(seconds=30)).isoformat()},
        ),
    ]
    core.apply_events(events)
    return core


def test_the_handoff_puts_first_only_what_waits_or_went_wrong_in_a_live_session() -> None:
    now = T0 + timedelta(hours=8)
    ended = session_digest(_ended_core(), Since(T0), now)
    assert not ended.needs_human  # it ended and nothing waits: nobody can act on it any more
    handoff = Handoff(since=T0, until=now, digests=(ended,))
    text = "\n".join(handoff_lines(handoff))
    assert "Needs a human first" not in text and "Other sessions with activity" in text


def test_each_session_of_the_handoff_says_since_its_own_start_within_the_window() -> None:
    """A session that started 7 h into an 8 h window was "Since 12:00 (8 h 00 min)" like all the others."""
    now = T0 + timedelta(hours=8)
    digest = session_digest(_ended_core(), Since.within(T0, LATE), now)
    head = digest_lines(digest)[0]
    start = (T0 + timedelta(hours=7)).astimezone().strftime("%H:%M")
    assert head.startswith(f"Since {start} (1 h 00 min)"), head
    early = Session(id=SID, started_at=T0 - timedelta(days=1))
    assert Since.within(T0, early).at == T0  # started before the window: the window's start


def test_the_handoff_lists_the_decisions_before_the_expiries() -> None:
    now = T0 + timedelta(minutes=5)
    digest = session_digest(_trial_core(), Since(T0), now)
    text = "\n".join(handoff_lines(Handoff(since=T0, until=now, digests=(digest,))))
    decided = text.partition("Decided in this window:")[2]
    made, _, lapsed = decided.partition("Expired or cancelled, nobody decided:")
    assert "✗ Bash declined by an operator: “not on prod”" in made and "expired" not in made
    assert lapsed.count("⌛ Bash expired") == 4


def test_the_markdown_digest_shows_untrusted_text_as_written() -> None:
    """The digest escaped fewer characters than the export: an agent's "~~" struck text through and an
    entity such as "&amp;" showed as "&" once pasted. Both documents escape the same complete set."""
    from markdown_it import MarkdownIt

    feed, core = Feed(), SessionCore(SID)
    core.row_loaded(Session(id=SID, agent_name="b*t", title="Q&amp;A ~~old~~ # 1", started_at=T0))
    core.apply_events([feed("run.failed", 5, run_id="r1", error="see <b>x</b> ~~here~~ &lt;3 [l](u)")])
    markdown = digest_markdown(session_digest(core, Since(T0), T0 + timedelta(minutes=5)))
    html = MarkdownIt("commonmark").enable("strikethrough").render(markdown)
    for shown in ("Q&amp;amp;A ~~old~~ # 1", "b*t", "see &lt;b&gt;x&lt;/b&gt; ~~here~~ &amp;lt;3 [l](u)"):
        assert shown in html, html
    assert "<s>" not in html and "<a " not in html and "<b>" not in html
