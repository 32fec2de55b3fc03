""" "Did it listen?": a delivered note links to what the agent did first after reading it."""

from __future__ import annotations

from client.timeline import TextEntry, TextPhase, Timeline, ToolEntry, then_line
from tests.client.test_timeline import Feed, note


def test_delivered_note_links_to_the_first_tool_call_after_it() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("run.started", run_id="r1"))
    timeline.apply(ev("note.created", note=note("n1", "pending")))
    # Work the agent does before it reads the note is not its answer to the note.
    timeline.apply(ev("tool.started", run_id="r1", call_id="c1", name="Read", args_summary="a.py"))
    assert timeline.then_entry("n1") is None
    timeline.apply(ev("note.delivered", note=note("n1", "delivered")))
    assert timeline.then_entry("n1") is None  # delivered, nothing done yet
    timeline.apply(ev("tool.completed", run_id="r1", call_id="c1", name="Read"))  # an update, not new work
    assert timeline.then_entry("n1") is None
    timeline.apply(ev("tool.started", run_id="r1", call_id="c2", name="Bash", args_summary="pytest -x"))
    then = timeline.then_entry("n1")
    assert isinstance(then, ToolEntry) and then.call_id == "c2"
    assert then_line(then) == "tool Bash: pytest -x"
    # Later work does not move the link.
    timeline.apply(ev("tool.started", run_id="r1", call_id="c3", name="Edit"))
    assert timeline.then_entry("n1") is then


def test_then_is_commentary_when_the_agent_speaks_first_and_follows_its_text() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("run.started", run_id="r1"))
    timeline.apply(ev("note.created", note=note("n1", "pending")))
    timeline.apply(ev("note.created", note=note("n2", "pending")))
    timeline.apply(ev("note.delivered", note=note("n1", "delivered")))
    timeline.apply(ev("note.acknowledged", note=note("n2", "acknowledged")))  # read without a delivered
    timeline.apply(ev("model.delta", run_id="r1", iteration=2, text="Understood, running\nthe tests "))
    timeline.apply(ev("model.delta", run_id="r1", iteration=2, text="first."))
    timeline.apply(ev("model.step", run_id="r1", iteration=2, phase="commentary", tool_calls=1))
    first = timeline.then_entry("n1")
    assert isinstance(first, TextEntry) and first.phase is TextPhase.COMMENTARY
    assert timeline.then_entry("n2") is first  # both were read at the same boundary
    assert then_line(first) == "commentary: Understood, running the tests first."
    assert then_line(first, limit=20) == "commentary: Underst…"


def test_undelivered_notes_have_no_then() -> None:
    ev, timeline = Feed(), Timeline()
    timeline.apply(ev("run.started", run_id="r1"))
    timeline.apply(ev("note.created", note=note("n1", "pending")))
    timeline.apply(ev("note.cancelled", note=note("n1", "cancelled")))
    timeline.apply(ev("note.created", note=note("n2", "pending")))
    timeline.apply(ev("note.expired", note=note("n2", "expired")))
    timeline.apply(ev("tool.started", run_id="r1", call_id="c1", name="Bash"))
    assert timeline.then_entry("n1") is None and timeline.then_entry("n2") is None
    assert timeline.then_entry("unknown") is None


def test_then_of_a_dropped_entry_is_none_not_an_error() -> None:
    ev, timeline = Feed(), Timeline(max_entries=4)
    timeline.apply(ev("note.created", note=note("n1", "pending")))
    timeline.apply(ev("note.delivered", note=note("n1", "delivered")))
    timeline.apply(ev("tool.started", call_id="c1", name="Bash"))
    assert timeline.then_entry("n1") is not None
    for i in range(5):
        timeline.apply(ev("tool.started", call_id=f"d{i}", name="Read"))
    assert timeline.then_entry("n1") is None
    assert timeline.notes["n1"].then_entry_id is not None  # the link is remembered, the entry is gone
