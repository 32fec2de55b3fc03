"""The attention inbox as plain state: what waits for a human across every session (no I/O, no UI).

An on-call operator follows many sessions; the inbox holds, for all of them at once, every **pending
approval** (oldest first: the one waiting longest is the most urgent) and the **notes that never reached
their agent** (ended ``expired``, ``failed`` or ``undeliverable``) in a recent window. The TUI's inbox
screen and ``preloop approvals list --all-sessions --watch`` both read this model, fed by
``Backend.watch_attention()`` (a snapshot, then events; a poller sends snapshots only).

Every input returns the :data:`InboxChange` values it caused, so the caller can alert on what is *new*
(:mod:`client.alerts`) without diffing itself:

* :meth:`Inbox.reset` takes a whole :class:`~client.models.AttentionSnapshot` and diffs it against what was
  shown (a reconnect or a poll). The first snapshot reports nothing: what was already waiting when we
  looked is not news;
* :meth:`Inbox.apply` takes one session event (``approval.requested`` / ``approval.decided`` /
  ``note.expired`` / ``note.failed`` / ``note.undeliverable``; anything else is ignored);
* :meth:`Inbox.decided` drops an approval decided here at once, without waiting for its echo; whether an
  approval was decided here is the app's (or command's) one :class:`client.steering.Decisions`, shared with
  every screen that decides, so nothing decided in this process is reported as "decided elsewhere";
* :meth:`Inbox.resolved` replaces an approval that vanished without its final record (a poll or a
  reconnect only saw it go) by the record read afterwards, so it is told as approved, declined or expired;
* :meth:`Inbox.expiring` is asked on a clock tick: the approvals that will expire within a minute, each
  reported once (:class:`ApprovalExpiring`), so the operator hears of it before it is too late.

Applying the same fact twice is harmless (everything is keyed by id), and a decided approval is
remembered (a bounded set) so a late ``approval.requested`` cannot bring it back.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from client.events import ApprovalDecided, ApprovalRequested, Event, NoteEvent
from client.models import ENDED_BADLY, Approval, AttentionSnapshot, Note, note_ended_at
from client.steering import Decisions

__all__ = [
    "EXPIRY_WARNING",
    "ApprovalAdded",
    "ApprovalExpiring",
    "ApprovalGone",
    "Inbox",
    "InboxChange",
    "NoteFailed",
    "closing_feed",
]

EXPIRY_WARNING = timedelta(seconds=60)
"""An approval this close to expiring with nobody deciding it raises one alert."""

_REMEMBER_DECIDED = 2000
RECENTLY_GONE = 5
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ApprovalAdded:
    """A new approval waits for a human."""

    approval: Approval


@dataclass(frozen=True, slots=True)
class ApprovalGone:
    """An approval left the inbox: decided here, or settled ``elsewhere`` (another operator decided, it
    expired, its session ended).

    ``approval`` is the final record when the server said so, else the last pending one we had (a
    poller only sees it disappear; then ``status`` reads ``"pending"`` until :meth:`Inbox.resolved`).
    """

    approval: Approval
    elsewhere: bool


@dataclass(frozen=True, slots=True)
class NoteFailed:
    """A note ended without reaching its agent (expired, failed or undeliverable)."""

    note: Note


@dataclass(frozen=True, slots=True)
class ApprovalExpiring:
    """A pending approval will expire within :data:`EXPIRY_WARNING` (reported once per approval)."""

    approval: Approval
    left: timedelta


InboxChange = ApprovalAdded | ApprovalGone | NoteFailed


def _requested(approval: Approval) -> datetime:
    return approval.requested_at or _EPOCH


class Inbox:
    """Pending approvals and failed notes of every session, kept in order, with an unseen count."""

    def __init__(
        self, notes_window: timedelta = timedelta(hours=6), decisions: Decisions | None = None
    ) -> None:
        self.notes_window = notes_window
        self.decisions = decisions if decisions is not None else Decisions()
        """Which approvals this process decided (shared with every screen that decides)."""
        self.synced = False
        """True once a snapshot arrived (before that the inbox does not know, rather than knows "none")."""
        self.version = 0
        """Bumped on every change, so a view can skip redrawing when nothing moved."""
        self._approvals: dict[str, Approval] = {}
        self._notes: dict[str, Note] = {}
        self._seen_notes: set[str] = set()
        self._decided: OrderedDict[str, str] = OrderedDict()
        self._warned: set[str] = set()
        self._expiry_seen: set[str] = set()
        self.recently_gone: list[ApprovalGone] = []
        """The last few approvals settled elsewhere (another operator, expiry, the session ending), newest
        first: the inbox says why they vanished."""

    # ------------------------------------------------------------------------------------ reading

    @property
    def approvals(self) -> list[Approval]:
        """Pending approvals, the longest waiting first."""
        return sorted(self._approvals.values(), key=_requested)

    @property
    def notes(self) -> list[Note]:
        """Failed notes in the window, the most recent first."""
        return sorted(self._notes.values(), key=note_ended_at, reverse=True)

    @property
    def unseen_notes(self) -> int:
        """Failed notes the operator has not looked at yet (opening the inbox marks them seen)."""
        return sum(1 for note_id in self._notes if note_id not in self._seen_notes)

    @property
    def count(self) -> int:
        """What the header shows: approvals waiting plus failed notes not yet seen."""
        return len(self._approvals) + self.unseen_notes

    def pending_by_session(self) -> dict[str, int] | None:
        """How many approvals wait in each session (None before the first snapshot: not known yet)."""
        if not self.synced:
            return None
        counts: dict[str, int] = {}
        for approval in self._approvals.values():
            if approval.runtime_session_id:
                counts[approval.runtime_session_id] = counts.get(approval.runtime_session_id, 0) + 1
        return counts

    def get(self, approval_id: str) -> Approval | None:
        """The pending approval with this id, if it is still pending."""
        return self._approvals.get(approval_id)

    # ------------------------------------------------------------------------------------ changing

    def mark_seen(self) -> None:
        """The operator looked at the inbox: its failed notes stop counting in the header."""
        if self.unseen_notes:
            self._seen_notes.update(self._notes)
            self.version += 1

    def reset(self, snapshot: AttentionSnapshot) -> list[InboxChange]:
        """Replace the view with a server snapshot; returns what changed (nothing for the first one)."""
        first = not self.synced
        self.synced = True
        changes: list[InboxChange] = []
        fresh = {a.id: a for a in snapshot.approvals if a.pending and a.id not in self._decided}
        for approval_id, old in list(self._approvals.items()):
            if approval_id not in fresh:
                del self._approvals[approval_id]
                gone = ApprovalGone(old, elsewhere=not self.decisions.here(approval_id))
                self._remember(gone)
                changes.append(gone)
        for approval_id, approval in fresh.items():
            if approval_id not in self._approvals:
                changes.append(ApprovalAdded(approval))
            self._approvals[approval_id] = approval
        notes = {n.note_id: n for n in snapshot.notes if n.state in ENDED_BADLY}
        for note_id, note in notes.items():
            if note_id not in self._notes:
                changes.append(NoteFailed(note))
        self._notes = notes
        if first:
            self._seen_notes.update(notes)  # what had failed before we looked is not news either
        self._seen_notes &= set(notes)
        self.version += 1
        return [] if first else changes

    def apply(self, event: Event) -> list[InboxChange]:
        """One session event; anything but approvals and failed notes is ignored (returns ``[]``)."""
        if isinstance(event, ApprovalRequested):
            return self._add(event.approval)
        if isinstance(event, ApprovalDecided):
            return self._gone(event.approval)
        if isinstance(event, NoteEvent) and event.note.state in ENDED_BADLY:
            note = event.note
            if note.note_id in self._notes:
                return []
            self._notes[note.note_id] = note
            self.version += 1
            return [NoteFailed(note)]
        return []

    def decided(self, approval: Approval) -> list[InboxChange]:
        """The server answered a decision (made here, or lost to someone else): drop the approval now,
        without waiting for the echo."""
        return self._gone(approval)

    def resolved(self, approval: Approval) -> bool:
        """The final record of an approval that left without one (read afterwards): the line that says
        why it left tells its real status now. True when it changed something shown."""
        for i, gone in enumerate(self.recently_gone):
            if gone.approval.id == approval.id and gone.approval.pending and not approval.pending:
                self.recently_gone[i] = ApprovalGone(approval, gone.elsewhere)
                self.version += 1
                return True
        return False

    def expiring(self, now: datetime, within: timedelta = EXPIRY_WARNING) -> list[ApprovalExpiring]:
        """Pending approvals that came within ``within`` of expiring since the last call, each reported
        once. One that was already that close when first looked at is not reported: its arrival was the
        news (a second alert a second later would be noise); one past its expiry is the server's to settle.
        """
        pending = set(self._approvals)
        self._warned &= pending
        self._expiry_seen &= pending
        out: list[ApprovalExpiring] = []
        for approval in self.approvals:
            if approval.id in self._warned or approval.expires_at is None:
                continue
            left = approval.expires_at - now
            first_look = approval.id not in self._expiry_seen
            self._expiry_seen.add(approval.id)
            if left <= within:
                self._warned.add(approval.id)
                if not first_look and left > timedelta(0):
                    out.append(ApprovalExpiring(approval, left))
        return out

    def prune(self, now: datetime) -> bool:
        """Drop failed notes that left the window; True when something went."""
        cutoff = now - self.notes_window
        old = [note_id for note_id, note in self._notes.items() if note_ended_at(note) < cutoff]
        for note_id in old:
            del self._notes[note_id]
            self._seen_notes.discard(note_id)
        if old:
            self.version += 1
        return bool(old)

    # ------------------------------------------------------------------------------------ internals

    def _add(self, approval: Approval) -> list[InboxChange]:
        if not approval.pending or approval.id in self._decided:
            return []
        known = approval.id in self._approvals
        self._approvals[approval.id] = approval
        self.version += 1
        return [] if known else [ApprovalAdded(approval)]

    def _gone(self, approval: Approval) -> list[InboxChange]:
        self._decided[approval.id] = approval.status
        self._decided.move_to_end(approval.id)
        while len(self._decided) > _REMEMBER_DECIDED:
            self._decided.popitem(last=False)
        if self._approvals.pop(approval.id, None) is None:
            return []
        self.version += 1
        gone = ApprovalGone(approval, elsewhere=not self.decisions.here(approval.id))
        self._remember(gone)
        return [gone]

    def _remember(self, gone: ApprovalGone) -> None:
        if gone.elsewhere:
            self.recently_gone = [gone, *self.recently_gone][:RECENTLY_GONE]


@asynccontextmanager
async def closing_feed(feed: AsyncIterator[object]) -> AsyncIterator[None]:
    """Close an attention feed in the task that reads it, also when reading stops with an error (a
    closed pipe, Ctrl+C): left to the garbage collector, its open stream would be closed half-way."""
    try:
        yield
    finally:
        if isinstance(feed, AsyncGenerator):
            await feed.aclose()
