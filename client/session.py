"""One followed session as plain state: the core every front end renders (no I/O policy, no UI).

A :class:`SessionCore` holds, for one session, everything an operator is shown about it, each in one
place:

* the :class:`client.timeline.Timeline` fed by the live stream;
* the notes table: the timeline's note records (``timeline.notes``), read as :attr:`SessionCore.notes`;
  the servers' answers (the list on attach, the answer to a send or a withdrawal) go into the same records;
* the pending approvals (:attr:`SessionCore.pending`, oldest request first), an index over the timeline's
  approvals, which the servers' answers join too;
* the session row, the stream status, whether the session ended (and why) or was refused outright;
* whether the notes and pending approvals asked for on attach have answered (:attr:`SessionCore.lists`):
  until they have, a front end says they are loading, never "no approvals pending".

The REST/stream merge is here. The lists asked for on attach may answer after stream events about the same
note or approval: the stream is newer, so a note or approval the stream already reported keeps the
stream's version; an answer to our own action (a sent note, a withdrawal, a decision) is the newest of all.
A finished note never moves back to pending, and a settled approval never comes back as pending from a
stale copy.

Every input returns one :class:`SessionChange` (a frozen dataclass: what the timeline's entries did, which
notes changed, approvals added and left, the new row, the end and its reason, the status, a refusal), so a
front end renders what changed without walking the events again. :meth:`SessionCore.follow` takes the
stream and applies each event and status as it arrives, yielding what it changed: data flows one way, from
the wire through the core to the screen. How often a front end paints (once per frame: it joins the
changes meanwhile with :meth:`SessionChange.join`) and what it paints first stay the front end's; what the
events mean is decided here.

Usage::

    core = SessionCore(session_id, decisions=decisions)
    loading = core.load(backend)          # the row and both lists are requested at once
    render(await loading.row())           # the row (or a refusal)
    render(await loading.lists())         # notes and pending approvals, merged under the stream
    async for change in core.follow(backend):
        render(change)                    # each stream event or status, applied
    render(core.apply_events(batch))      # events read another way (a history, a test)
    render(core.record(outcome))          # what steering (client.steering) did from here
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from client.costs import Cost, row_cost
from client.errors import ApiError, ClientError, NotFound, PermissionDenied
from client.events import BaseEvent
from client.models import Approval, Note, Session
from client.present import describe_session
from client.status import Ended, Live, Refused, Skipped, StreamStatus
from client.steering import (
    AlreadySettled,
    Decided,
    Decisions,
    Sent,
    SteeringOutcome,
    TooLate,
    Withdrawn,
)
from client.textsafe import safe_line
from client.timeline import TextEntry, Timeline, TimelineChanges, ToolEntry, then_line

if TYPE_CHECKING:
    from client.backends.base import Backend
    from client.events import Event

__all__ = [
    "STALE_NOTICE_WINDOW",
    "ApprovalLeft",
    "ListsState",
    "Loading",
    "SessionChange",
    "SessionCore",
    "SessionOver",
]

STALE_NOTICE_WINDOW = timedelta(seconds=10)
"""An approval settled elsewhere is news only if it was settled this recently before attaching (older ones
are history being replayed)."""

EXPORT_AGAIN_WITHIN = timedelta(seconds=10)
"""An export made this soon after the last one rewrites that file (the name holds the first one's time)."""

THEN_WIDTH = 80
"""The "then: ..." line of a read note is kept this long."""

READ_BATCH = 100
"""While a backlog streams in, the loop runs (the screen paints) after this many items are read."""

_STREAM_OVER = BaseException("the stream is over")


ListsState = Literal["loading", "loaded", "failed"]
"""The notes and pending approvals asked for on attach: not answered yet, answered, or refused/failed
(the stream still brings what happens from now on)."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ApprovalLeft:
    """A pending approval stopped waiting: ``approval`` is its final record, ``here`` whether this process
    decided it, ``at`` when (the event's time, or when the answer came)."""

    approval: Approval
    here: bool
    at: datetime


@dataclass(frozen=True, slots=True)
class SessionOver:
    """The session ended (``reason`` when the server gave one)."""

    reason: str | None


@dataclass(frozen=True, slots=True)
class SessionChange:
    """What one input changed; empty (falsy) when nothing did."""

    timeline: TimelineChanges | None = None
    """What events did to the timeline's entries (the view shows it); None when no event was applied."""
    notes: tuple[str, ...] = ()
    """Ids of the notes whose state or "then" line changed."""
    approvals_added: tuple[Approval, ...] = ()
    approvals_left: tuple[ApprovalLeft, ...] = ()
    approvals_updated: bool = False
    """The pending table changed (an approval added, left, or a pending one's record replaced)."""
    session: Session | None = None
    """The session row, when a new one came."""
    ended: SessionOver | None = None
    status: StreamStatus | None = None
    refused: ApiError | None = None
    """The session cannot be watched at all (no such id, no access): no stream, no note box."""
    failed: ClientError | None = None
    """Loading failed for a reason the stream may outlive (server down, token refused)."""
    lists: bool = False
    """The lists asked for on attach answered (or failed): :attr:`SessionCore.lists` says which."""

    def __bool__(self) -> bool:
        return any(
            (
                self.lists,
                self.timeline is not None,
                self.notes,
                self.approvals_updated,
                self.session is not None,
                self.ended is not None,
                self.status is not None,
                self.refused is not None,
                self.failed is not None,
            )
        )

    @staticmethod
    def join(changes: Sequence[SessionChange]) -> SessionChange:
        """Several changes, in the order they came, as one (a front end that paints once per frame)."""
        if len(changes) == 1:
            return changes[0]
        timelines = [c.timeline for c in changes if c.timeline is not None]

        def last(values: Iterable[Any]) -> Any:
            return next((v for v in reversed(list(values)) if v is not None), None)

        return SessionChange(
            timeline=TimelineChanges.join(timelines) if timelines else None,
            notes=tuple(sorted({n for c in changes for n in c.notes})),
            approvals_added=tuple(a for c in changes for a in c.approvals_added),
            approvals_left=tuple(a for c in changes for a in c.approvals_left),
            approvals_updated=any(c.approvals_updated for c in changes),
            session=last(c.session for c in changes),
            ended=last(c.ended for c in changes),
            status=last(c.status for c in changes),
            refused=last(c.refused for c in changes),
            failed=last(c.failed for c in changes),
            lists=any(c.lists for c in changes),
        )


class _Notes(Mapping[str, Note]):
    """The notes table read as notes: a live view of the timeline's note records (no copy)."""

    def __init__(self, timeline: Timeline) -> None:
        self._records = timeline.notes

    def __getitem__(self, note_id: str) -> Note:
        return self._records[note_id].note

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)


class SessionCore:
    """One followed session (see the module docstring)."""

    def __init__(
        self,
        session_id: str,
        *,
        decisions: Decisions | None = None,
        clock: Callable[[], datetime] = _utcnow,
        timeline: Timeline | None = None,
    ) -> None:
        self.session_id = session_id
        self.decisions = decisions if decisions is not None else Decisions()
        self._clock = clock
        self.started = clock()
        """When the core began following (approvals settled long before are history, not news)."""
        self.timeline = timeline if timeline is not None else Timeline()
        self.notes: Mapping[str, Note] = _Notes(self.timeline)
        """Every note of the session, by id (one home: the timeline's note records)."""
        self.thens: dict[str, str] = {}
        """note id -> what the agent did first after reading it, in one line (raw text)."""
        self._pending: dict[str, Approval] = {}
        self.pending: Mapping[str, Approval] = MappingProxyType(self._pending)
        """Approvals waiting for a decision, by id, oldest request first (read-only: the core keeps it)."""
        self.sent_here: set[str] = set()
        """Ids of the notes sent from this process."""
        self.session: Session | None = None
        self.status: StreamStatus | None = None
        self.ended = False
        self.end_reason: str | None = None
        self.refused: ApiError | None = None
        self.lists: ListsState = "loading"
        """Whether the notes and pending approvals asked for on attach have answered: until they have,
        an empty table means "not known yet", not "none"."""
        self._read: set[str] = set()
        """Ids of the notes the agent has read: their "then" lines follow what it does next."""
        self._streamed: set[str] = set()
        """Approval ids the stream reported (a list's copy of those is older)."""
        self.deciders_recorded = True
        """False on a server that keeps no record of who decided (``Capabilities.names_decider``)."""
        self._end_seq = 0
        self._row_settled: asyncio.Event | None = None
        self._last_export: tuple[Path, datetime] | None = None
        self._behind = 0
        self.stored_through: int | None = None
        """The newest stored event when the stream last opened, where the server says
        (``Live.stored_through``): until it is in, the stream is replaying a backlog (:attr:`replaying`)."""

    # ------------------------------------------------------------------ loading

    def load(self, backend: Backend) -> Loading:
        """Ask for the row and both lists at once (see :class:`Loading`)."""
        self._row_settled = asyncio.Event()
        return Loading(self, backend)

    async def refusal_is_news(self) -> bool:
        """The stream was refused: whether to say so. Not when the row's own refusal already did (a
        session that does not exist refuses both); the row's answer is awaited first when it was asked."""
        if self._row_settled is not None:
            await self._row_settled.wait()
        return self.refused is None

    def row_loaded(self, row: Session | ClientError) -> SessionChange:
        """The session row's answer: the row, a refusal (404/403: nothing to watch) or a failure the
        stream may outlive."""
        try:
            if isinstance(row, ClientError):
                return self.load_failed(row)
            return self._set_session(row)
        finally:
            if self._row_settled is not None:
                self._row_settled.set()

    def load_failed(self, error: ClientError) -> SessionChange:
        """A request of the attach failed: 404/403 mean the session cannot be watched at all."""
        if isinstance(error, NotFound | PermissionDenied):
            self.refused = error
            self.lists = "failed"  # nothing of it will load
            return SessionChange(refused=error, lists=True)
        return SessionChange(failed=error)

    def lists_failed(self, error: ClientError) -> SessionChange:
        """The lists asked for on attach failed: they are not known (the stream brings what comes next)."""
        self.lists = "failed"
        return replace(self.load_failed(error), lists=True)

    def lists_loaded(self, notes: Sequence[Note], approvals: Sequence[Approval]) -> SessionChange:
        """The notes and pending approvals listed on attach, merged under what the stream said."""
        changed = [n.note_id for n in notes if self._merge_note(n, newer=False)]
        for approval in approvals:
            self._merge_approval(approval, newer=False)
        self.lists = "loaded"
        change = self._settle(notes=changed, approvals=[a.id for a in approvals], at=self._clock())
        return replace(change, lists=True)

    # ------------------------------------------------------------------ the stream

    async def follow(self, backend: Backend, *, tail: int | None = None) -> AsyncIterator[SessionChange]:
        """Take the session's live stream and apply what arrives: the events that arrived since the last
        change was taken are applied together (:meth:`apply_events`; a backlog in batches, a live event on
        its own; the very first event alone), each status on its own (:meth:`apply_status`), in the order
        they came, and what each changed is yielded. A refusal the row already told is left out; a stream
        that stops with an error ends in one ``Refused`` status."""
        arrived: list[Event | StreamStatus | BaseException] = []
        news = asyncio.Event()

        async def take() -> None:
            """Read the stream into ``arrived`` (letting the loop run every ``READ_BATCH`` items)."""
            items = backend.follow(self.session_id, tail=tail)
            append, wake = arrived.append, news.set  # (once per item of every live stream: bound once)
            try:
                until_pause = READ_BATCH
                async for item in items:
                    append(item)
                    self._behind += 1
                    wake()
                    until_pause -= 1
                    if not until_pause:
                        until_pause = READ_BATCH
                        await asyncio.sleep(0)  # a backlog is read faster than it is shown
            except Exception as exc:
                arrived.append(exc)
            finally:
                arrived.append(_STREAM_OVER)
                news.set()
                close = getattr(items, "aclose", None)  # closed here, not whenever GC gets to it
                if close is not None:
                    await close()

        reader = asyncio.ensure_future(take())
        first = True
        try:
            while True:
                await news.wait()
                news.clear()
                take_now = len(arrived)
                if first and arrived:  # the first event alone: the session is shown, then it catches up
                    events_at = [n for n, item in enumerate(arrived) if isinstance(item, BaseEvent)]
                    if events_at:
                        first, take_now = False, events_at[0] + 1
                        if take_now < len(arrived):
                            news.set()  # the rest at the next turn
                batch = arrived[:take_now]
                del arrived[:take_now]
                events: list[Event] = []
                for item in batch:
                    if isinstance(item, BaseEvent):
                        events.append(item)
                        continue
                    if events:
                        yield self._applied(events)
                        events = []
                    if item is _STREAM_OVER:
                        return
                    if isinstance(item, BaseException):
                        why = (
                            str(item)
                            if isinstance(item, ClientError)
                            else f"the event stream stopped unexpectedly ({type(item).__name__}: {item})"
                        )  # (a bug below must not take the operator's screen down with it)
                        if await self.refusal_is_news():
                            yield self.apply_status(Refused(why))
                        return
                    assert not isinstance(item, BaseEvent)
                    self._behind -= 1
                    if isinstance(item, Refused) and not await self.refusal_is_news():
                        return
                    yield self.apply_status(item)
                if events:
                    yield self._applied(events)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            self._behind = 0

    @property
    def behind(self) -> int:
        """Stream items :meth:`follow` has read and not applied yet (0: the core holds all that came)."""
        return self._behind

    @property
    def replaying(self) -> bool:
        """The stream is still bringing what was stored before it opened: items read and not applied
        (:attr:`behind`), or events up to where the server said its store ended (``stored_through``) not
        in yet (a backlog read faster than the network brings it leaves ``behind`` at 0 between reads)."""
        if self._behind:
            return True
        through = self.stored_through
        return through is not None and self.timeline.last_seq < through

    def _applied(self, events: list[Event]) -> SessionChange:
        self._behind -= len(events)
        return self.apply_events(events)

    def apply_events(self, events: Sequence[Event]) -> SessionChange:
        """Stream events (one as it arrives, or a batch read another way): applied, and what changed."""
        if not events:
            return SessionChange()
        timeline = self.timeline
        changes = timeline.apply_many(events)
        if not changes.applied:
            return SessionChange()
        approvals = changes.approvals
        if approvals:
            self._streamed |= approvals
        row: Session | None = None
        over: SessionOver | None = None
        if timeline.end_seq != self._end_seq:
            self._end_seq = timeline.end_seq
            over = self._end(timeline.end_reason, force=True)
        if timeline.session is not None and timeline.session is not self.session:
            row = timeline.session
            self.session = row
            if row.ended_at is not None and over is None:
                over = self._end(None)
        if not (changes.notes or approvals or row or over or self._read):
            return SessionChange(timeline=changes)  # most events: nothing but entries changed
        at = events[-1].at
        return self._settle(
            notes=changes.notes, approvals=approvals, at=at, timeline=changes, row=row, over=over
        )

    def apply_status(self, status: StreamStatus) -> SessionChange:
        """A stream status (connecting, live, reconnecting, ended, refused...)."""
        self.status = status
        if isinstance(status, Live) and status.stored_through is not None:
            self.stored_through = status.stored_through
        elif isinstance(status, Skipped):
            self.stored_through = None  # (its seq is not told: it may have been the last stored one)
        over = self._end(None) if isinstance(status, Ended) else None
        return SessionChange(status=status, ended=over)

    # ------------------------------------------------------------------ steering from here

    def record(self, outcome: SteeringOutcome) -> SessionChange:
        """What steering from here did: the server's answer is the newest word on that note or approval."""
        if isinstance(outcome, Sent):
            self.sent_here.add(outcome.note.note_id)
        if isinstance(outcome, Sent | Withdrawn | TooLate):
            note = outcome.note
            return self._settle(notes=[note.note_id] if self._merge_note(note, newer=True) else [])
        if isinstance(outcome, Decided | AlreadySettled):
            self._merge_approval(outcome.approval, newer=True)
            return self._settle(approvals=[outcome.approval.id], at=self._clock())
        return SessionChange()

    # ------------------------------------------------------------------ reading

    def is_news(self, left: ApprovalLeft) -> bool:
        """Whether an approval that left is worth telling: settled elsewhere, and not replayed history."""
        return not left.here and left.at >= self.started - STALE_NOTICE_WINDOW

    def then_of(self, note_id: str | None) -> tuple[TextEntry | ToolEntry | None, str]:
        """ "Did it listen?": what the agent did first after reading this note (or, for no note or one the
        timeline does not know, the newest read note), and the sentence to say when it cannot be shown."""
        notes = self.timeline.notes
        record = notes.get(note_id) if note_id is not None else None
        if record is None or not record.updated_seq:  # only listed, never in the timeline
            read = [r for r in notes.values() if r.then_entry_id is not None]
            if not read:
                return None, "No note has been read by the agent yet."
            record = read[-1]
        if record.delivered_entry_id is None:
            why = f"This note is {safe_line(record.note.state, 20)}: the agent has not read it."
        elif record.then_entry_id is None:
            why = "The agent read this note and has not done anything since."
        else:
            why = "What the agent did next is no longer in the timeline (older entries were dropped)."
        return self.timeline.then_entry(record.note.note_id), why

    @property
    def cost(self) -> Cost | None:
        """What the session has cost so far, as far as the server says: its row's tokens and cost, plus
        the model calls reported after that row was made (so a header between two rows still moves);
        None when nothing says anything."""
        row = self.session
        since = (row.last_request_at or row.last_activity_at) if row is not None else None
        later = []
        for place, usage in reversed(self.timeline.usage.values()):  # newest first: stop at the row's time
            if since is not None and place.at <= since:
                break
            later.append(usage)
        base = row_cost(row)
        extra = Cost.of_calls(later)
        if extra is None:
            return base
        return extra if base is None else base + extra

    def describe(self) -> str:
        """The session named in one line for notices and dialogs ("a1b2c3d4 (agent)")."""
        return describe_session(self.session_id, self.session.agent_label if self.session else None)

    async def export_markdown(self, directory: Path, exported_at: datetime) -> Path:
        """Write what this core holds as the Markdown export into ``directory`` (off the event loop);
        returns the file (OSError when it cannot be written). Exported again within
        :data:`EXPORT_AGAIN_WITHIN`, the same file is written anew (one file, one notice, not one per key
        press)."""
        from client.export import save_export

        doc = self.export_document(exported_at)
        last = self._last_export
        named = last[1] if last is not None and exported_at - last[1] < EXPORT_AGAIN_WITHIN else exported_at
        path = await asyncio.to_thread(save_export, doc, self.session_id, named, directory)
        self._last_export = (path, named)
        return path

    def export_document(self, exported_at: datetime) -> dict[str, Any]:
        """The session as the export document (``client.export``), from what this core holds."""
        from client.export import build_export

        return build_export(
            self.session_id,
            self.timeline,
            session=self.session,
            exported_at=exported_at,
            by_you=self.decisions.by_you,
            deciders_recorded=self.deciders_recorded,
        )

    # ------------------------------------------------------------------ merging

    def _merge_note(self, note: Note, *, newer: bool) -> bool:
        record = self.timeline.notes.get(note.note_id)
        if record is not None and record.updated_seq and not newer:
            return False  # the stream already reported it: a list asked for before is older
        return self.timeline.remember_note(note)

    def _merge_approval(self, approval: Approval, *, newer: bool) -> None:
        known = self.timeline.approvals.get(approval.id)
        if known is not None and not known.pending and approval.pending:
            return  # a stale copy: a settled approval never comes back
        if known is not None and approval.id in self._streamed and not newer:
            return  # the stream already reported it: a list asked for before is older
        self.timeline.approvals[approval.id] = approval

    def _settle(
        self,
        *,
        notes: Iterable[str] = (),
        approvals: Iterable[str] = (),
        at: datetime | None = None,
        timeline: TimelineChanges | None = None,
        row: Session | None = None,
        over: SessionOver | None = None,
    ) -> SessionChange:
        """The change after a merge: the pending index and the "then" lines brought up to date for what
        was touched (so a batch costs what it changed, not what the session holds)."""
        changed_notes = set(notes)
        records = self.timeline.notes
        for note_id in changed_notes:
            record = records.get(note_id)
            if record is not None and record.delivered_entry_id is not None:
                self._read.add(note_id)
        entries: set[int] | None = None  # the entries the events made or changed
        if timeline is not None and self._read:
            entries = set(timeline.appended).union(timeline.updated)
        for note_id in self._read:  # a read note's "then" line grows with what the agent does next
            record = records.get(note_id)
            if (
                entries is not None
                and note_id not in changed_notes
                and (record is None or record.then_entry_id not in entries)
            ):
                continue  # its "then" entry did not change
            entry = self.timeline.then_entry(note_id)
            if entry is not None:
                line = then_line(entry, THEN_WIDTH)
                if self.thens.get(note_id) != line:
                    self.thens[note_id] = line
                    changed_notes.add(note_id)
        pending, known = self._pending, self.timeline.approvals
        added: list[Approval] = []
        left: list[ApprovalLeft] = []
        updated = False
        when = at or self._clock()
        for approval_id in approvals:
            approval = known.get(approval_id)
            if approval is not None and approval.pending:
                updated = updated or pending.get(approval_id) is not approval
                if approval_id not in pending:
                    added.append(approval)
                pending[approval_id] = approval  # (the panels read this very table)
            elif approval_id in pending:
                del pending[approval_id]
                left.append(ApprovalLeft(known[approval_id], self.decisions.here(approval_id), when))
                updated = True
        if added:  # oldest request first, as the timeline met them
            order = {approval_id: n for n, approval_id in enumerate(known)}
            ordered = sorted(pending.items(), key=lambda item: order.get(item[0], -1))
            pending.clear()
            pending.update(ordered)
        return SessionChange(
            timeline=timeline,
            notes=tuple(sorted(changed_notes)),
            approvals_added=tuple(added),
            approvals_left=tuple(left),
            approvals_updated=updated,
            session=row,
            ended=over,
        )

    def _set_session(self, row: Session) -> SessionChange:
        self.session = row
        return SessionChange(session=row, ended=self._end(None) if row.ended_at is not None else None)

    def _end(self, reason: str | None, *, force: bool = False) -> SessionOver | None:
        """Mark the session ended; a second end without a reason says nothing new."""
        if self.ended and reason is None and not force:
            return None
        self.ended = True
        if reason:
            self.end_reason = reason
        return SessionOver(reason)


class Loading:
    """The requests of an attach, sent together: the session row, its notes and pending approvals. The
    row is answered first (a refusal there makes the lists moot); :meth:`cancel` drops what is left."""

    def __init__(self, core: SessionCore, backend: Backend) -> None:
        self._core = core
        sid = core.session_id
        self._row = asyncio.ensure_future(backend.get_session(sid))
        self._lists = asyncio.gather(
            backend.list_notes(session_id=sid),
            backend.list_approvals(session_id=sid),
            return_exceptions=True,  # both finish before either failure is looked at
        )

    async def row(self) -> SessionChange:
        """The row's answer, merged (see :meth:`SessionCore.row_loaded`)."""
        try:
            row: Session | ClientError = await self._row
        except ClientError as exc:
            row = exc
        return self._core.row_loaded(row)

    async def lists(self) -> SessionChange:
        """Both lists' answers, merged; a failure of either is reported as one change."""
        notes, approvals = await self._lists
        for answer in (notes, approvals):
            if isinstance(answer, ClientError):
                return self._core.lists_failed(answer)
            if isinstance(answer, BaseException):
                raise answer
        assert not isinstance(notes, BaseException) and not isinstance(approvals, BaseException)
        return self._core.lists_loaded(notes.notes, approvals.items)

    def cancel(self) -> None:
        """Nothing left waiting (the row was refused, or the screen went away)."""
        self._row.cancel()
        self._lists.cancel()
