"""The session timeline as a pure model: feed it events, read entries the UI renders.

No I/O and no UI import, so the TUI, the plain CLI, benchmarks and tests all read the same model.

Usage (what the attach screen does)::

    from client.timeline import Timeline

    timeline = Timeline(max_entries=5_000, max_chars=2_000_000)
    changes = timeline.apply(event)   # one event (a duplicate by seq is ignored: changes.applied == 0)
    changes = timeline.apply_many(events)  # a batch: what it changed, as one TimelineChanges

    changes.appended / changes.updated    # entry ids made / changed in place by that call (the view)
    changes.notes / changes.approvals     # note / approval ids it changed (the session core)

    for entry in timeline:            # entries in the order they happened (oldest retained first)
        ...                           # TextEntry | ToolEntry | ApprovalEntry | NoteEntry | RunEntry
                                      # | SessionEntry | UnknownEntry | DroppedEntry
    timeline.pending_approvals        # list[Approval], oldest request first, still pending
    timeline.notes                    # dict note_id -> NoteRecord (latest Note + when each state was seen)
    timeline.then_entry(note_id)      # what the agent did first after the note was delivered, or None
    timeline.session                  # latest Session row from session.* events, or None
    timeline.run_status               # RunStatus of the latest run (or None before any run)

Every call that applies events returns what it changed (:class:`TimelineChanges`): nothing is kept for a
later reader to collect, so any number of readers may look at the model; a front end that paints less
often than events arrive joins the changes of a frame with :meth:`TimelineChanges.join`.

Model text is bucketed per ``(run_id, iteration)`` in one :class:`TextEntry`, whose ``phase`` moves:

* ``STREAMING`` while ``model.delta`` chunks arrive (provisional: the UI shows it as such);
* ``COMMENTARY`` when ``model.step`` says ``phase="commentary"`` (the step went on to call tools), or when a
  tool call of the same iteration starts before the step event arrives;
* ``FINAL`` when ``model.step`` says ``phase="final_answer"``; ``run.completed`` then replaces the text with
  the run's reported answer (never the concatenated deltas) and marks the entry final;
* ``INTERRUPTED`` when the run fails, is cancelled or the session ends while the text was still streaming.

Entries are mutable and updated in place (a streaming text grows, a tool call completes). Every change
bumps the entry's ``revision`` (from one model-wide counter) and is listed in the changes the call
returns, so a view re-renders only what changed. Entry ids are stable and increase
in timeline order.

"Did it listen?": when a note is delivered (or acknowledged, whichever is seen first) its record remembers
that event's entry, and the next text or tool-call entry appended after it becomes the note's
``then_entry_id``: the first thing the agent did once it had read the note. :func:`then_line` says it in
one short line (the notes panel's "then: ..." line), :meth:`Timeline.then_entry` finds it (the view jumps
there).

Memory is bounded: past ``max_entries`` entries or ``max_chars`` characters of retained text the oldest
entries are dropped, and one :class:`DroppedEntry` (id 0, always first) says how many. A single text larger
than ``max_chars`` keeps its tail and counts the characters it lost (``TextEntry.dropped_chars``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple

from client.events import (
    ApprovalDecided,
    ApprovalRequested,
    Event,
    ModelDelta,
    ModelStep,
    NoteEvent,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunStarted,
    SessionEnded,
    SessionStarted,
    SessionUpdated,
    ToolCompleted,
    ToolStarted,
    UnknownEvent,
)
from client.models import Approval, CallUsage, Note, Session

__all__ = [
    "ApprovalEntry",
    "DroppedEntry",
    "Entry",
    "NoteEntry",
    "NoteRecord",
    "Place",
    "RunEntry",
    "RunStatus",
    "SessionEntry",
    "TextEntry",
    "TextPhase",
    "Timeline",
    "TimelineChanges",
    "TimelineEntry",
    "ToolEntry",
    "ToolState",
    "UnknownEntry",
    "then_line",
]


class TextPhase(StrEnum):
    """What a bucket of model text turned out to be."""

    STREAMING = "streaming"
    COMMENTARY = "commentary"
    FINAL = "final"
    INTERRUPTED = "interrupted"


class ToolState(StrEnum):
    """Where a tool call is; ``RUNNING`` covers requested-and-running (one event starts both)."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    DENIED = "denied"


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Place:
    """Where an event stands on the server it came from: what a mark of "where you last looked"
    remembers, so that a later follow (another process, after a restart) finds the place again.

    ``id`` is the server's own identity of the event (our server's seq, a Dendrux sequence index, the
    stable key of a Preloop fact: see ``client.events.BaseEvent``), ``at`` its time, ``number`` its place
    in the server's own numbering where it has one (our seq, the Dendrux index; None on Preloop, where
    only the time orders places)."""

    id: str
    at: datetime
    number: int | None = None

    @staticmethod
    def of(seq: int, at: datetime, origin: str | int | None) -> Place:
        """The place of an event with this stream ``seq``, time and ``origin`` (``BaseEvent.origin``: None
        on our server, where the seq is the server's own number)."""
        if origin is None:
            return Place(str(seq), at, seq)
        return Place(str(origin), at, origin if isinstance(origin, int) else None)

    def before(self, other: Place) -> bool:
        """Whether this place comes before ``other``: by number when both have one, else by time (equal
        times: not before, so an entry of the very instant a mark names counts as seen)."""
        if self.number is not None and other.number is not None:
            return self.number < other.number
        return self.at < other.at


@dataclass(slots=True, eq=False)
class Entry:
    """Fields every timeline entry has. ``id`` is stable; ``revision`` grows each time the entry changes.

    ``seq`` / ``at`` / ``origin`` are those of the event that made the entry, ``last_seq`` / ``last_at`` /
    ``last_origin`` those of the last event applied to it (a tool call's completion, a text's latest
    chunk); :attr:`first_place` and :attr:`place` read them as :class:`Place` (the server's identity and
    time, which a mark keeps: ``client.marks``)."""

    id: int
    seq: int
    at: datetime | None
    revision: int = 0
    origin: str | int | None = None
    last_seq: int = 0
    last_at: datetime | None = None
    last_origin: str | int | None = None

    @property
    def first_place(self) -> Place | None:
        """The place of the event that made this entry (None for the dropped-entries marker)."""
        return None if self.at is None else Place.of(self.seq, self.at, self.origin)

    @property
    def place(self) -> Place | None:
        """The place of the last event applied to this entry."""
        if self.last_at is None:
            return self.first_place
        return Place.of(self.last_seq, self.last_at, self.last_origin)

    @property
    def chars(self) -> int:
        """Characters this entry retains, for the memory cap."""
        return 0


@dataclass(slots=True, eq=False)
class TextEntry(Entry):
    """Model text of one ``(run_id, iteration)``; see the module docstring for how ``phase`` moves."""

    run_id: str | None = None
    iteration: int = 0
    phase: TextPhase = TextPhase.STREAMING
    dropped_chars: int = 0
    _parts: list[str] = field(default_factory=list)
    _len: int = 0

    @property
    def text(self) -> str:
        """The text so far (joined lazily so a delta append stays O(1))."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def chars(self) -> int:
        """Characters held, counted towards the model's memory cap (kept up to date, never re-summed)."""
        return self._len

    def _append(self, chunk: str) -> None:
        self._parts.append(chunk)
        self._len += len(chunk)

    def _replace(self, text: str) -> None:
        self._parts[:] = [text] if text else []
        self._len = len(text)
        self.dropped_chars = 0

    def _keep_tail(self, keep: int) -> int:
        text = self.text
        cut = max(len(text) - keep, 0)
        if cut:
            self._parts[:] = [text[cut:]]
            self._len -= cut
            self.dropped_chars += cut
        return cut


@dataclass(slots=True, eq=False)
class ToolEntry(Entry):
    """One tool call, updated in place from started to its outcome."""

    call_id: str = ""
    run_id: str | None = None
    iteration: int | None = None
    name: str = ""
    args_summary: str = ""
    state: ToolState = ToolState.RUNNING
    started_at: datetime | None = None
    duration_ms: int | None = None
    result_summary: str = ""

    @property
    def chars(self) -> int:
        return len(self.name) + len(self.args_summary) + len(self.result_summary)


@dataclass(slots=True, eq=False)
class ApprovalEntry(Entry):
    """An approval request or decision at the point it happened; ``approval`` is the snapshot then.

    ``status`` of a request entry follows the approval's latest status (so the line can say it was decided).
    """

    approval: Approval | None = None
    decided: bool = False
    status: str = "pending"

    @property
    def chars(self) -> int:
        a = self.approval
        if a is None:
            return 0
        return len(a.summary or "") + len(a.tool_name or "") + len(a.approver_comment or "") + 64


@dataclass(slots=True, eq=False)
class NoteEntry(Entry):
    """A note state change (sent, delivered, expired, ...) at the point it happened."""

    note: Note | None = None
    state: str = ""

    @property
    def chars(self) -> int:
        return len(self.note.text) if self.note is not None else 0


@dataclass(slots=True, eq=False)
class RunEntry(Entry):
    """A run started, completed, failed or was cancelled; ``detail`` is the task, error or reason."""

    run_id: str | None = None
    status: RunStatus = RunStatus.RUNNING
    detail: str = ""

    @property
    def chars(self) -> int:
        return len(self.detail)


@dataclass(slots=True, eq=False)
class SessionEntry(Entry):
    """The session started or ended (``session.updated`` changes :attr:`Timeline.session` only)."""

    ended: bool = False
    reason: str = ""

    @property
    def chars(self) -> int:
        return len(self.reason)


@dataclass(slots=True, eq=False)
class UnknownEntry(Entry):
    """An event this client does not know: shown (type and a short body), never an exception."""

    event_type: str = ""
    summary: str = ""

    @property
    def chars(self) -> int:
        return len(self.summary)


@dataclass(slots=True, eq=False)
class DroppedEntry(Entry):
    """Always first when present: ``count`` earlier entries were dropped to bound memory."""

    count: int = 0


TimelineEntry = (
    TextEntry | ToolEntry | ApprovalEntry | NoteEntry | RunEntry | SessionEntry | UnknownEntry | DroppedEntry
)


@dataclass(slots=True)
class NoteRecord:
    """The latest view of one note plus when (event time) each state was first seen."""

    note: Note
    state: str
    state_times: dict[str, datetime] = field(default_factory=dict)
    updated_seq: int = 0
    delivered_entry_id: int | None = None
    """The note's delivered (or acknowledged) entry: from here on the agent had read it."""
    then_entry_id: int | None = None
    """The first text or tool call after delivery: what the agent did next (None until it did something)."""


class TimelineChanges(NamedTuple):
    """What one call that applied events changed (:meth:`Timeline.apply_many`).

    ``applied`` is how many events were new (duplicates by seq are not); ``appended`` ids are new entries
    (in order, all after every id made before the call); ``updated`` ids already existed and changed in
    place; ``first_id`` is the oldest retained non-marker id after the call (entries below it are gone);
    ``dropped`` is how many entries the call dropped to bound memory. The marker (id 0) is never listed:
    read :attr:`Timeline.dropped_count` instead. ``notes`` / ``approvals`` are the ids of the notes and
    approvals the call's events changed. Falsy when no entry, note or approval changed. (A named tuple: one
    is made for every event the app applies.)
    """

    applied: int = 0
    appended: tuple[int, ...] = ()
    updated: tuple[int, ...] = ()
    first_id: int = 1
    dropped: int = 0
    notes: frozenset[str] = frozenset()
    approvals: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.appended or self.updated or self.dropped or self.notes or self.approvals)

    @staticmethod
    def join(changes: Sequence[TimelineChanges]) -> TimelineChanges:
        """The changes of several calls, in the order they were made, as if one call had made them (for a
        front end that paints once per frame what arrived meanwhile)."""
        if len(changes) == 1:
            return changes[0]
        if not changes:
            return TimelineChanges()
        first = max(c.first_id for c in changes)
        appended: list[int] = []
        updated: dict[int, None] = {}
        for change in changes:
            appended += change.appended
            updated.update(dict.fromkeys(change.updated))
        made = set(appended)
        return TimelineChanges(
            applied=sum(c.applied for c in changes),
            appended=tuple(i for i in appended if i >= first),
            updated=tuple(i for i in updated if i >= first and i not in made),
            first_id=first,
            dropped=sum(c.dropped for c in changes),
            notes=frozenset().union(*(c.notes for c in changes)),
            approvals=frozenset().union(*(c.approvals for c in changes)),
        )


_NONE: frozenset[str] = frozenset()
_SUMMARY_LIMIT = 200
_READ_STATES = frozenset({"delivered", "acknowledged"})
_TOOL_OUTCOME = {"ok": ToolState.COMPLETED, "error": ToolState.FAILED, "denied": ToolState.DENIED}


def _finished(note: Note) -> bool:
    state = note.note_state
    return state is not None and state.terminal


def _backwards(known: Note, new: Note) -> bool:
    """Whether ``new`` would move a finished note back (a late, replayed or stale copy)."""
    return _finished(known) and not _finished(new)


def _short(value: Any, limit: int = _SUMMARY_LIMIT) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def then_line(entry: TextEntry | ToolEntry, limit: int = 80) -> str:
    """What the agent did next, in one line ("tool Bash: ls -la", "commentary: I will ..."): raw text,
    not yet made terminal- or Markdown-safe (each caller escapes for its medium)."""
    if isinstance(entry, ToolEntry):
        line = f"tool {entry.name}"
        if entry.args_summary:
            line += f": {entry.args_summary}"
    else:
        label = {
            TextPhase.FINAL: "final answer",
            TextPhase.COMMENTARY: "commentary",
            TextPhase.INTERRUPTED: "text (interrupted)",
        }.get(entry.phase, "text")
        line = f"{label}: {' '.join(entry.text.split())}"
    return _short(" ".join(line.split()), limit)


USAGE_KEPT = 100_000
"""At most this many model calls' usage are kept per timeline (the oldest go first)."""


class Timeline:
    """The timeline of one session. Feed it events in seq order; read entries and side tables."""

    def __init__(self, *, max_entries: int = 5_000, max_chars: int = 2_000_000) -> None:
        """``max_entries`` / ``max_chars`` bound retained entries and text; the oldest go first."""
        if max_entries < 2 or max_chars < 1:
            raise ValueError("max_entries must be >= 2 and max_chars >= 1")
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._entries: deque[TimelineEntry] = deque()
        self._by_id: dict[int, TimelineEntry] = {}
        self._next_id = 1
        self._revision = 0
        self._chars = 0
        self._marker: DroppedEntry | None = None
        self._texts: dict[tuple[str | None, int], TextEntry] = {}
        self._tools: dict[str, ToolEntry] = {}
        self._approval_requests: dict[str, ApprovalEntry] = {}
        # What the call being made changed (reset by each apply_many, returned as TimelineChanges).
        self._appended: list[int] = []
        self._updated: dict[int, None] = {}
        self._dropped = 0
        self.last_seq = 0
        self.events_not_loaded = 0
        """Events before the first one received (a long session opened at its newest events only)."""
        self.duplicates = 0
        self.session: Session | None = None
        self.approvals: dict[str, Approval] = {}
        self.notes: dict[str, NoteRecord] = {}
        self.runs: dict[str, RunStatus] = {}
        self.current_run_id: str | None = None
        self.run_status: RunStatus | None = None
        self.final_answer: str | None = None
        self.unknown_events = 0
        self.end_seq = 0
        """The seq of the latest ``session.ended`` event (0: none seen)."""
        self.end_reason: str | None = None
        """Why the session ended, as its ``session.ended`` event said."""
        self._awaiting_then: dict[str, NoteRecord] = {}
        self._touched_notes: set[str] = set()
        self._touched_approvals: set[str] = set()
        self._current: Event | None = None
        """The event being applied (``_append`` / ``_touch`` stamp entries with its place)."""
        self._last_event: Event | None = None
        self._entry_seq = 0  # the seq of the newest event that made or changed an entry
        self.usage: dict[tuple[str | None, int], tuple[Place, CallUsage]] = {}
        """What each model step's call used (``model.step``'s ``usage``), by (run, iteration), with the
        step's place: a window's cost adds these up (``client.costs``). A step reported twice (a Dendrux
        step, then the same step with its text) counts once; the newest :data:`USAGE_KEPT` are kept."""

    # ------------------------------------------------------------------ reading

    def __iter__(self) -> Iterator[TimelineEntry]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __reversed__(self) -> Iterator[TimelineEntry]:
        """Newest first (what "new since" reads: only as far back as it must)."""
        return reversed(self._entries)

    def get(self, entry_id: int) -> TimelineEntry | None:
        """The entry with this id, or None once it was dropped (the view asks by id)."""
        return self._by_id.get(entry_id)

    @property
    def revision(self) -> int:
        """Model-wide change counter: equal revisions mean nothing changed."""
        return self._revision

    @property
    def retained_chars(self) -> int:
        """Characters held in all entries: what the memory cap is measured against (benchmarks print it)."""
        return self._chars

    @property
    def last_place(self) -> Place | None:
        """The place of the newest event applied (None before any)."""
        event = self._last_event
        return None if event is None else Place.of(event.seq, event.at, event.origin)

    @property
    def last_entry_seq(self) -> int:
        """The seq of the newest event that made or changed an entry (0 before any): the events after it
        changed nothing shown (a session's counters, say), so whoever sees the newest entry saw them."""
        return self._entry_seq

    @property
    def dropped_count(self) -> int:
        """How many entries were dropped to bound memory."""
        return self._marker.count if self._marker is not None else 0

    @property
    def first_id(self) -> int:
        """The oldest retained non-marker entry id (``next id`` when empty)."""
        entries = self._entries
        index = 0 if self._marker is None else 1
        return entries[index].id if len(entries) > index else self._next_id

    def then_entry(self, note_id: str) -> TextEntry | ToolEntry | None:
        """What the agent did first after reading this note, while that entry is still retained."""
        record = self.notes.get(note_id)
        if record is None or record.then_entry_id is None:
            return None
        entry = self._by_id.get(record.then_entry_id)
        return entry if isinstance(entry, TextEntry | ToolEntry) else None

    @property
    def pending_approvals(self) -> list[Approval]:
        """Approvals still waiting for a decision, oldest request first: the approvals panel's rows."""
        return [a for a in self.approvals.values() if a.pending]

    # ------------------------------------------------------------------ feeding

    def apply_many(self, events: Iterable[Event]) -> TimelineChanges:
        """Apply a batch; returns what it changed (``applied``: how many events were new).

        Model deltas are joined into their step's text here, and only here (most of a live stream: the
        plain printer, the digest and the export read the joined text); every other event goes through a
        handler looked up by its exact type. Same result as :meth:`apply` one by one: the caps are enforced
        after each event.
        """
        applied = 0
        updated = self._updated  # (emptied when the previous call returned)
        self._dropped = 0
        if self._touched_notes:
            self._touched_notes = set()
        if self._touched_approvals:
            self._touched_approvals = set()
        texts = self._texts
        entries = self._entries
        handlers = _HANDLERS
        streaming = TextPhase.STREAMING
        max_chars = self.max_chars
        # The streaming text the previous delta went to, valid only while nothing but such deltas ran.
        bucket: TextEntry | None = None
        bucket_run: str | None = None
        bucket_iteration = 0
        # The last delta joined into ``bucket`` whose place is not written on it yet: a run of deltas to the
        # same text writes it once, when the run ends (before anything else could read it).
        pending: ModelDelta | None = None
        last: Event | None = None
        for event in events:
            seq = event.seq
            if seq <= self.last_seq:
                self.duplicates += 1
                continue
            if self.last_seq == 0 and seq > 1:
                self.events_not_loaded = seq - 1  # history starts here: the feed sent a tail
            self.last_seq = seq
            applied += 1
            last = event
            if isinstance(event, ModelDelta):  # the one place deltas are joined into a step's text
                if bucket is not None and event.iteration == bucket_iteration and event.run_id == bucket_run:
                    same_text = True
                else:
                    if pending is not None:
                        self._stamp_text(bucket, pending)  # type: ignore[arg-type]  # (set with pending)
                        pending = None
                    same_text = False
                    run_id = event.run_id
                    if run_id is None:
                        run_id = self.current_run_id
                    key = (run_id, event.iteration)
                    bucket = texts.get(key)
                    if bucket is None:  # a new text
                        self._current = event
                        bucket = self._text_bucket(run_id, event.iteration, event)
                    elif bucket.phase is not streaming:
                        # the step already settled this text; a late chunk must not change it
                        bucket = None
                        if (
                            self._chars > max_chars
                            or len(entries) - (self._marker is not None) >= self.max_entries
                        ):
                            self._current = event
                            self._enforce_caps()
                        continue
                    bucket_run, bucket_iteration = event.run_id, event.iteration
                text: str = event.text
                size = len(text)
                bucket._parts.append(text)
                bucket._len += size
                self._chars += size
                self._revision += 1
                if same_text and self._chars <= max_chars:
                    pending = event  # its place is written when the run of deltas ends
                    continue  # the entry count did not change since the last check (which passed)
                pending = None
                self._stamp_text(bucket, event)
            else:
                if pending is not None:
                    self._stamp_text(bucket, pending)  # type: ignore[arg-type]  # (set with pending)
                    pending = None
                bucket = None
                kind = type(event)
                handler = handlers.get(kind)
                if handler is None:
                    handler = _resolve_handler(kind)
                self._current = event
                handler(self, event)
            # _enforce_caps' own early return, inlined: it is checked after every event.
            if self._chars > max_chars or len(entries) - (self._marker is not None) >= self.max_entries:
                bucket = None  # it may drop or cut texts
                self._current = event
                self._enforce_caps()
        if pending is not None:
            self._stamp_text(bucket, pending)  # type: ignore[arg-type]  # (set with pending)
        if last is not None:
            self._last_event = last
        self._current = None
        first = self.first_id
        if not applied:
            return TimelineChanges(first_id=first)
        appended = self._appended
        if appended and appended[0] < first:
            appended = [i for i in appended if i >= first]
        if appended or self._dropped:  # (else every id updated is retained and none is new)
            made = set(appended)
            changed = tuple(i for i in updated if i >= first and i not in made)
        else:
            changed = tuple(updated)
        notes, approvals = self._touched_notes, self._touched_approvals
        changes = TimelineChanges(
            applied,
            tuple(appended),
            changed,
            first,
            self._dropped,
            frozenset(notes) if notes else _NONE,
            frozenset(approvals) if approvals else _NONE,
        )
        self._appended, self._updated = [], {}  # nothing of the call is kept once it is told
        return changes

    def apply(self, event: Event) -> TimelineChanges:
        """Apply one event; an event whose seq was already seen changes nothing (``applied`` 0)."""
        return self.apply_many((event,))

    def remember_note(self, note: Note) -> bool:
        """A note as a server's answer gives it (a list, the answer to a send or a withdraw), kept in
        :attr:`notes` without a timeline entry; never moving a finished note back. True when it changed.
        Whether such an answer is newer than what the stream said is the caller's to judge
        (``client.session``)."""
        record = self.notes.get(note.note_id)
        if record is None:
            self.notes[note.note_id] = NoteRecord(note=note, state=note.state)
            return True
        if _backwards(record.note, note) or record.note == note:
            return False
        record.note = note
        record.state = note.state
        return True

    # ------------------------------------------------------------------ handlers

    def _run(self, run_id: str | None) -> str | None:
        return run_id if run_id is not None else self.current_run_id

    def _text_bucket(self, run_id: str | None, iteration: int, event: Event) -> TextEntry:
        key = (run_id, iteration)
        entry = self._texts.get(key)
        if entry is None:
            entry = TextEntry(0, event.seq, event.at, run_id=run_id, iteration=iteration)
            self._texts[key] = entry
            self._append(entry)
        return entry

    def _on_step(self, event: ModelStep) -> None:
        run_id = self._run(event.run_id)
        if event.usage is not None:
            usage = self.usage
            usage[(run_id, event.iteration)] = (Place.of(event.seq, event.at, event.origin), event.usage)
            if len(usage) > USAGE_KEPT:
                del usage[next(iter(usage))]
        entry = self._text_bucket(run_id, event.iteration, event)
        if event.text and event.text != entry.text:
            self._chars += len(event.text) - entry.chars
            entry._replace(event.text)
        if event.phase == "commentary":
            entry.phase = TextPhase.COMMENTARY
        else:
            entry.phase = TextPhase.FINAL
            self.final_answer = entry.text
        self._touch(entry)

    def _on_tool_started(self, event: ToolStarted) -> None:
        run_id = event.run_id
        if run_id is None:
            run_id = self.current_run_id
        iteration = event.iteration
        if iteration is not None:
            text = self._texts.get((run_id, iteration))
            if text is not None and text.phase is TextPhase.STREAMING:
                text.phase = TextPhase.COMMENTARY  # the step called a tool: its text was narration
                self._touch(text)
        summary = event.args_summary
        if not summary:
            summary = _short(event.args) if event.args else ""
        elif len(summary) > _SUMMARY_LIMIT:
            summary = _short(summary)
        call_id = event.call_id
        at = event.at
        entry = ToolEntry(
            0,
            event.seq,
            at,
            call_id=call_id,
            run_id=run_id,
            iteration=iteration,
            name=event.name,
            args_summary=summary,
            started_at=at,
        )
        self._tools.pop(call_id, None)  # a restarted call id moves to the end
        self._tools[call_id] = entry
        self._append(entry)

    def _on_tool_completed(self, event: ToolCompleted) -> None:
        entry = self._tools.pop(event.call_id, None)
        if entry is None:  # its start was dropped or never seen: still show the outcome
            entry = ToolEntry(0, event.seq, event.at, call_id=event.call_id, run_id=self._run(event.run_id))
            entry.name = event.name
            self._append(entry)
        entry.state = _TOOL_OUTCOME[event.status]
        if event.duration_ms is not None:
            entry.duration_ms = event.duration_ms
        elif entry.started_at is not None:
            entry.duration_ms = max(int((event.at - entry.started_at).total_seconds() * 1000), 0)
        result = event.result_summary
        if len(result) > _SUMMARY_LIMIT:
            result = _short(result)
        self._chars += len(result) - len(entry.result_summary)  # the only part of ``chars`` that changes
        entry.result_summary = result
        self._touch(entry)

    def _on_note(self, event: NoteEvent) -> None:
        note = event.note
        state = event.type.removeprefix("note.")
        if state == "created":
            state = note.state or "pending"
        record = self.notes.get(note.note_id)
        if record is None:
            record = NoteRecord(note=note, state=state)
            self.notes[note.note_id] = record
        if not _backwards(record.note, note):  # a late event never moves a finished note back
            record.note = note
            record.state = state
        record.state_times.setdefault(state, event.at)
        record.updated_seq = event.seq
        self._touched_notes.add(note.note_id)
        entry = NoteEntry(0, event.seq, event.at, note=note, state=state)
        self._append(entry)
        if state in _READ_STATES and record.delivered_entry_id is None:
            record.delivered_entry_id = entry.id
            self._awaiting_then[note.note_id] = record

    def _on_approval_requested(self, event: ApprovalRequested) -> None:
        self._on_approval(event.approval, event, decided=False)

    def _on_approval_decided(self, event: ApprovalDecided) -> None:
        self._on_approval(event.approval, event, decided=True)

    def _on_approval(self, approval: Approval, event: Event, *, decided: bool) -> None:
        self.approvals[approval.id] = approval
        self._touched_approvals.add(approval.id)
        request = self._approval_requests.get(approval.id)
        if decided and request is not None:
            request.status = approval.status
            self._touch(request)
            self._approval_requests.pop(approval.id, None)
        entry = ApprovalEntry(
            0, event.seq, event.at, approval=approval, decided=decided, status=approval.status
        )
        if not decided:
            self._approval_requests[approval.id] = entry
        self._append(entry)

    def _set_run_status(self, run_id: str | None, status: RunStatus) -> None:
        if run_id is not None:
            self.runs[run_id] = status
        if run_id is None or run_id == self.current_run_id:
            self.run_status = status

    def _on_run_started(self, event: RunStarted) -> None:
        self.current_run_id = event.run_id
        self._set_run_status(event.run_id, RunStatus.RUNNING)
        self.final_answer = None
        self._append(RunEntry(0, event.seq, event.at, run_id=event.run_id, detail=_short(event.task)))

    def _on_run_completed(self, event: RunCompleted) -> None:
        run_id = self._run(event.run_id)
        target: TextEntry | None = None
        if event.iteration is not None:
            target = self._texts.get((run_id, event.iteration))
        else:
            # The run's last text bucket is its answer unless it was narration before a tool call.
            for (rid, _it), text in reversed(self._texts.items()):
                if rid == run_id:
                    if text.phase in (TextPhase.STREAMING, TextPhase.FINAL):
                        target = text
                    break
        answer = event.answer
        if target is None and answer:
            target = self._text_bucket(run_id, event.iteration or 0, event)
        if target is not None:
            if answer and answer != target.text:
                self._chars += len(answer) - target.chars
                target._replace(answer)
            target.phase = TextPhase.FINAL
            self.final_answer = target.text
            self._touch(target)
        for (rid, _it), text in self._texts.items():
            if rid == run_id and text.phase is TextPhase.STREAMING:
                text.phase = TextPhase.COMMENTARY
                self._touch(text)
        self._set_run_status(run_id, RunStatus.COMPLETED)
        self._append(RunEntry(0, event.seq, event.at, run_id=run_id, status=RunStatus.COMPLETED))

    def _on_run_stopped(self, event: RunFailed | RunCancelled) -> None:
        run_id = self._run(event.run_id)
        self._interrupt(run_id)
        if isinstance(event, RunFailed):
            status, detail = RunStatus.FAILED, event.error
        else:
            status, detail = RunStatus.CANCELLED, event.reason
        self._set_run_status(run_id, status)
        self._append(RunEntry(0, event.seq, event.at, run_id=run_id, status=status, detail=_short(detail)))

    def _interrupt(self, run_id: str | None, *, all_runs: bool = False) -> None:
        for (rid, _it), text in self._texts.items():
            if (all_runs or rid == run_id) and text.phase is TextPhase.STREAMING:
                text.phase = TextPhase.INTERRUPTED
                self._touch(text)

    def _on_session_started(self, event: SessionStarted) -> None:
        self.session = event.session
        self._append(SessionEntry(0, event.seq, event.at))

    def _on_session_updated(self, event: SessionUpdated) -> None:
        self.session = event.session

    def _on_session_ended(self, event: SessionEnded) -> None:
        self.session = event.session
        self.end_seq = event.seq
        self.end_reason = event.reason
        self._interrupt(None, all_runs=True)
        if self.run_status is RunStatus.RUNNING:
            self._set_run_status(self.current_run_id, RunStatus.CANCELLED)
        self._append(SessionEntry(0, event.seq, event.at, ended=True, reason=event.reason or ""))

    def _on_unknown(self, event: Event) -> None:
        self.unknown_events += 1
        raw: dict[str, Any] = event.raw if isinstance(event, UnknownEvent) else {}
        said = event.said if isinstance(event, UnknownEvent) else None
        body = {k: v for k, v in raw.items() if k not in ("seq", "type", "session_id", "at")}
        summary = _short(said) if said else _short(json.dumps(body, ensure_ascii=False, default=str))
        self._append(UnknownEntry(0, event.seq, event.at, event_type=event.type, summary=summary))

    # ------------------------------------------------------------------ bookkeeping

    def _stamp_text(self, text: TextEntry, delta: ModelDelta) -> None:
        """The delta last joined into ``text`` (its revision is the timeline's own, as nothing else ran)."""
        text.revision = self._revision
        text.last_seq = self._entry_seq = delta.seq
        text.last_at = delta.at
        text.last_origin = delta.server_seq if delta.server_seq is not None else delta.server_id
        self._updated[text.id] = None

    def _stamp(self, entry: TimelineEntry) -> None:
        """Remember the event being applied as the entry's last (its place: ``Entry.place``)."""
        event = self._current
        if event is not None:
            entry.last_seq = self._entry_seq = event.seq
            entry.last_at = event.at
            entry.last_origin = event.origin

    def _touch(self, entry: TimelineEntry) -> None:
        self._revision += 1
        entry.revision = self._revision
        self._updated[entry.id] = None
        if entry is not self._marker:
            self._stamp(entry)

    def _append(self, entry: TimelineEntry) -> None:
        entry.id = self._next_id
        self._next_id += 1
        self._revision += 1
        entry.revision = self._revision
        event = self._current
        if event is not None:
            entry.origin = event.origin
            self._stamp(entry)
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        self._chars += entry.chars
        self._appended.append(entry.id)
        if self._awaiting_then and isinstance(entry, TextEntry | ToolEntry):
            for note_id, record in self._awaiting_then.items():
                record.then_entry_id = entry.id
                self._touched_notes.add(note_id)  # its "then" is known now
            self._awaiting_then.clear()

    def _enforce_caps(self) -> None:
        entries = self._entries
        real = len(entries) - (self._marker is not None)
        max_real = self.max_entries - 1
        max_chars = self.max_chars
        if real <= max_real and self._chars <= max_chars:
            return
        dropped = 0
        index = 1 if self._marker is not None else 0
        # Keep room for the marker inside max_entries; never drop the newest entry.
        while real > 1 and (real > max_real or self._chars > max_chars):
            victim = entries[index]
            del entries[index]
            self._by_id.pop(victim.id, None)
            self._chars -= victim.chars
            self._forget(victim)
            real -= 1
            dropped += 1
        if self._chars > self.max_chars:
            last = self._entries[-1]
            if isinstance(last, TextEntry):
                self._chars -= last._keep_tail(max(self.max_chars - (self._chars - last.chars), 0))
                self._touch(last)
        if dropped:
            if self._marker is None:
                self._marker = DroppedEntry(0, 0, None)
                self._entries.appendleft(self._marker)
                self._by_id[0] = self._marker
            self._marker.count += dropped
            self._dropped += dropped
            self._touch(self._marker)

    def _forget(self, victim: TimelineEntry) -> None:
        if isinstance(victim, TextEntry):
            key = (victim.run_id, victim.iteration)
            if self._texts.get(key) is victim:
                del self._texts[key]
        elif isinstance(victim, ToolEntry):
            if self._tools.get(victim.call_id) is victim:
                del self._tools[victim.call_id]
        elif (
            isinstance(victim, ApprovalEntry)
            and victim.approval is not None
            and self._approval_requests.get(victim.approval.id) is victim
        ):
            del self._approval_requests[victim.approval.id]
        self._updated.pop(victim.id, None)


# One handler per event class but deltas (joined in apply_many itself), looked up by exact type (an
# isinstance chain cost ~10 % of the ingest); a subclass of any of these resolves like isinstance did.
_HANDLERS: dict[type, Callable[[Timeline, Any], None]] = {
    ModelStep: Timeline._on_step,
    ToolStarted: Timeline._on_tool_started,
    ToolCompleted: Timeline._on_tool_completed,
    NoteEvent: Timeline._on_note,
    ApprovalRequested: Timeline._on_approval_requested,
    ApprovalDecided: Timeline._on_approval_decided,
    RunStarted: Timeline._on_run_started,
    RunCompleted: Timeline._on_run_completed,
    RunFailed: Timeline._on_run_stopped,
    RunCancelled: Timeline._on_run_stopped,
    SessionStarted: Timeline._on_session_started,
    SessionUpdated: Timeline._on_session_updated,
    SessionEnded: Timeline._on_session_ended,
}
_BY_CLASS = tuple(_HANDLERS.items())


def _resolve_handler(kind: type) -> Callable[[Timeline, Any], None]:
    """The handler for a type not in the table: the first base it is an instance of, else unknown."""
    handler: Callable[[Timeline, Any], None] = Timeline._on_unknown
    for base, candidate in _BY_CLASS:
        if issubclass(kind, base):
            handler = candidate
            break
    _HANDLERS[kind] = handler
    return handler
