"""The timeline's batch path (``apply_many``, what the view feeds per frame) gives exactly the model that
applying the same events one by one gives: same entries, text, revisions, changes, side tables.

``apply_many`` handles runs of deltas to a streaming text inline (for the ingest rate); these sequences are
built to hit every edge of that: caps reached in the middle of a run of deltas, late deltas to settled text,
deltas without a run id, interleaved iterations, duplicates, and events of every other kind in between.
"""

from __future__ import annotations

import random
from dataclasses import fields
from typing import Any

import pytest

from client.events import Event, ModelDelta, event_from_dict
from client.timeline import TextEntry, TextPhase, Timeline, TimelineChanges

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"


def recorded(seed: int, n: int = 600) -> list[Event]:
    """A random but plausible session: runs, interleaved iterations, tools, notes, approvals, oddities."""
    rng = random.Random(seed)
    out: list[Event] = []
    seq = 0

    def emit(kind: str, **body: Any) -> None:
        nonlocal seq
        seq += 1
        at = f"2026-03-01T10:{seq // 60 % 60:02d}:{seq % 60:02d}Z"
        out.append(event_from_dict({"seq": seq, "type": kind, "session_id": SID, "at": at, **body}))

    emit("session.started", session={"id": SID, "title": "t"})
    run, iteration, calls = "r1", 1, 0
    emit("run.started", run_id=run, task="fix")
    while seq < n:
        roll = rng.random()
        run_id = rng.choice([run, run, None])  # deltas may leave the run id out
        it = iteration if rng.random() < 0.85 else max(iteration - 1, 1)  # a late or interleaved chunk
        if roll < 0.6:
            emit("model.delta", run_id=run_id, iteration=it, text="x" * rng.randint(1, 40) + " ")
        elif roll < 0.68:
            phase = rng.choice(["commentary", "final_answer"])
            text = rng.choice(["", "the step's own text"])
            emit("model.step", run_id=run, iteration=iteration, phase=phase, text=text)
            iteration += 1
        elif roll < 0.76:
            calls += 1
            emit(
                "tool.started",
                run_id=run,
                call_id=f"c{calls}",
                iteration=iteration,
                name="Bash",
                args={"a": 1},
            )
        elif roll < 0.82 and calls:
            call = f"c{rng.randint(1, calls)}"
            emit("tool.completed", run_id=run, call_id=call, name="Bash", status=rng.choice(["ok", "error"]))
        elif roll < 0.86:
            state = rng.choice(["created", "delivered", "acknowledged"])
            note = {"note_id": f"n{rng.randint(1, 3)}", "state": "pending", "text": "stop"}
            emit(f"note.{state}", note=note)
        elif roll < 0.89:
            decided = rng.random() < 0.5
            status = "approved" if decided else "pending"
            appr = {"id": f"a{rng.randint(1, 3)}", "tool_name": "Bash", "summary": "rm", "status": status}
            emit("approval.decided" if decided else "approval.requested", approval=appr)
        elif roll < 0.92:
            emit(rng.choice(["run.completed", "run.failed", "run.cancelled"]), run_id=run, answer="done")
            run = f"r{int(run[1:]) + 1}"
            emit("run.started", run_id=run, task="next")
        elif roll < 0.94:
            emit("agent.thought", mood="curious")  # unknown to this client
        elif roll < 0.96:
            emit("session.updated", session={"id": SID, "title": f"t{seq}"})
        else:
            emit("model.delta", run_id=run, iteration=iteration, text="y" * rng.randint(100, 400))
    emit("session.ended", session={"id": SID}, reason="done")
    # The stream may replay a few events after a reconnect: the model must ignore them.
    replay = out[rng.randint(0, len(out) - 5) :][:4]
    cut = rng.randint(0, len(out))
    return out[:cut] + replay + out[cut:]


def state(timeline: Timeline) -> dict[str, Any]:
    """Everything a view or the UI reads, in comparable form."""
    entries = []
    for entry in timeline:
        row: dict[str, Any] = {"kind": type(entry).__name__}
        for f in fields(entry):
            if f.name != "_parts":
                row[f.name] = getattr(entry, f.name)
        if isinstance(entry, TextEntry):
            row["text"] = entry.text
        entries.append(row)
    return {
        "entries": entries,
        "revision": timeline.revision,
        "retained_chars": timeline.retained_chars,
        "dropped": timeline.dropped_count,
        "first_id": timeline.first_id,
        "last_seq": timeline.last_seq,
        "duplicates": timeline.duplicates,
        "session": timeline.session,
        "approvals": timeline.approvals,
        "pending": timeline.pending_approvals,
        "notes": timeline.notes,
        "runs": timeline.runs,
        "run_status": timeline.run_status,
        "final_answer": timeline.final_answer,
        "unknown": timeline.unknown_events,
    }


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("max_entries", "max_chars"), [(5_000, 2_000_000), (9, 600), (4, 150)])
def test_batches_give_the_same_model_as_one_by_one(seed: int, max_entries: int, max_chars: int) -> None:
    events = recorded(seed)
    rng = random.Random(seed)
    single, batched = (
        Timeline(max_entries=max_entries, max_chars=max_chars),
        Timeline(max_entries=max_entries, max_chars=max_chars),
    )
    pos = 0
    single_changes: list[TimelineChanges] = []
    batched_changes: list[TimelineChanges] = []
    single_applied = batched_applied = 0
    while pos < len(events):
        batch = events[pos : pos + rng.randint(1, 80)]  # frames of any size, as chunks arrive
        pos += len(batch)
        one_by_one = [single.apply(e) for e in batch]
        single_applied += sum(c.applied for c in one_by_one)
        changes = batched.apply_many(iter(batch))  # any iterable, not only lists
        batched_applied += changes.applied
        single_changes.append(TimelineChanges.join(one_by_one))
        batched_changes.append(changes)
        assert state(batched) == state(single)
    assert batched_changes == single_changes
    assert batched_applied == single_applied == len(events) - batched.duplicates
    assert batched.duplicates >= 1


def test_caps_hit_in_the_middle_of_a_run_of_deltas() -> None:
    """The char cap is checked after every delta of a batch, so the tail kept is the same as one by one."""
    at = "2026-03-01T10:00:00Z"
    head = {"session_id": SID, "at": at}
    events = [
        event_from_dict({**head, "seq": 1, "type": "session.started", "session": {"id": SID}}),
        event_from_dict({**head, "seq": 2, "type": "run.started", "run_id": "r1", "task": "fix"}),
    ]
    for i in range(30):
        body = {"type": "model.delta", "run_id": "r1", "iteration": 1, "text": f"{i:02d}-------- "}
        events.append(event_from_dict({**head, "seq": 3 + i, **body}))
    batched = Timeline(max_entries=10, max_chars=100)
    batched.apply_many(events)
    [text] = [e for e in batched if isinstance(e, TextEntry)]
    assert text.text.endswith("29-------- ") and len(text.text) == 100 and text.dropped_chars == 230
    assert text.phase is TextPhase.STREAMING and batched.dropped_count == 2  # the session and run entries
    single = Timeline(max_entries=10, max_chars=100)
    for event in events:
        single.apply(event)
    assert state(batched) == state(single)  # same revisions too: the text was cut after each delta


def test_an_event_subclass_is_handled_as_its_base() -> None:
    """A subclass of a known event (a wrapper some integration adds) still renders as that event."""

    class TaggedDelta(ModelDelta):
        tag: str = ""

    timeline = Timeline()
    base = {"session_id": SID, "at": "2026-03-01T10:00:00Z", "run_id": "r1", "iteration": 1, "tag": "x"}
    timeline.apply_many(
        [
            TaggedDelta.model_validate({**base, "seq": 1, "text": "hello "}),
            TaggedDelta.model_validate({**base, "seq": 2, "text": "world"}),
        ]
    )
    [text] = list(timeline)
    assert isinstance(text, TextEntry) and text.text == "hello world" and timeline.unknown_events == 0


def test_a_delta_to_a_streaming_text_is_reported_as_an_update() -> None:
    """The view re-renders a growing text only if the model says it changed."""
    timeline = Timeline()
    at = "2026-03-01T10:00:00Z"
    base = {"type": "model.delta", "session_id": SID, "at": at, "run_id": "r1", "iteration": 1}
    first = timeline.apply_many([event_from_dict({**base, "seq": 1, "text": "Let "})])
    [text] = list(timeline)
    assert first.appended == (text.id,)
    before = text.revision
    changes = timeline.apply_many([event_from_dict({**base, "seq": s, "text": "go "}) for s in (2, 3)])
    assert (changes.appended, changes.updated) == ((), (text.id,))
    assert text.revision == before + 2 == timeline.revision and text.text == "Let go go "
    last = timeline.apply(event_from_dict({**base, "seq": 4, "text": "!"}))
    assert last.updated == (text.id,) and text.chars == len("Let go go !")
