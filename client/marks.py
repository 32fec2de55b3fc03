"""Where the operator last looked at each session: kept on this machine, found again in any timeline.

On-call work is interrupted: an operator leaves a session for twenty minutes (another session, lunch, a
restart of the terminal) and, coming back, wants to start where they stopped. A :class:`Mark` is that
place: the :class:`client.timeline.Place` of the newest entry that was on screen while the terminal had
the focus (what was *looked at*, not what was loaded), and when that was.

**By the server's identity.** The place is the event's identity and time on its server (our server's
seq; a Dendrux app's ``sequence_index``; a Preloop fact's key, ordered by time), never an entry id or a
seq this process gave it: a later follow, in another process after a restart, numbers its entries and
mapped events differently and still finds the place (:func:`find_return`).

**Files.** One file per session, ``<state dir>/marks/<session id>.json`` (``client.paths.state_dir()``):
``{"id", "at", "number", "looked_at"}``, mode 0600, written whole to a temporary file and renamed
(``client.paths.replace_file``), so a crash or a kill leaves the previous mark or the new one, never half.
It is one machine's memory: another machine, or another user on this one, has its own marks, and a mark
is not shared with anyone through the server.

**When it is written** (:class:`Looking`): a mark only moves forward (scrolling back to read older
entries does not move it back); a new place is written within :data:`WRITE_PLACE_AFTER` seconds, the mere
passing of time (still looking, nothing new) within :data:`WRITE_TIME_AFTER`, and at once, flushed to the
disk, when the terminal loses the focus or the operator leaves the session.

**Coming back** (:func:`find_return`): the entries made by events after the mark are new; the rule line
"new since you last looked" goes above the first of them. A mark older than everything the timeline holds
(a long session opened at its newest 5,000 events) puts the rule at the top, with how many events lie
between where the server numbers its events (ours, Dendrux), and "earlier than the loaded part"
otherwise (Preloop).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from client.models import Session
from client.paths import replace_file
from client.present import last_activity
from client.session import SessionCore
from client.timeline import DroppedEntry, Place, Timeline, TimelineEntry
from client.views import is_problem

__all__ = [
    "AWAY_FOR_DIGEST",
    "LIVE_SKEW",
    "WRITE_PLACE_AFTER",
    "WRITE_TIME_AFTER",
    "Looking",
    "Mark",
    "MarkStore",
    "News",
    "Return",
    "find_return",
    "new_since",
    "news_of",
    "seen_place",
]

AWAY_FOR_DIGEST = timedelta(minutes=2)
"""Back after at least this long, the operator gets the digest above the rule (a glance away and back
gets the rule alone): two minutes is longer than reading another session's approval, shorter than the
shortest interruption that makes one lose the thread (a call, a meeting, a coffee)."""

LIVE_SKEW = timedelta(seconds=5)
"""An entry whose event is this much after the visit began happened while the operator was watching:
it gets no rule above it (the margin absorbs the server's clock being a little ahead of this one's)."""

WRITE_PLACE_AFTER = 1.0
"""Seconds within which a mark that moved to a newer place is written (what a crash can lose)."""

WRITE_TIME_AFTER = 15.0
"""Seconds within which a mark whose place did not move but whose "looked at" time did is written."""

_SAFE_KEY = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Mark:
    """Where the operator last looked at a session (``place``) and when (``looked_at``, UTC)."""

    place: Place
    looked_at: datetime

    def to_json(self) -> str:
        """The file's content (see the module docstring)."""
        return json.dumps(
            {
                "id": self.place.id,
                "at": self.place.at.astimezone(UTC).isoformat(),
                "number": self.place.number,
                "looked_at": self.looked_at.astimezone(UTC).isoformat(),
            }
        )

    @staticmethod
    def from_json(text: str) -> Mark | None:
        """A mark read back; None for a file that is not one (damaged, or from another program)."""
        try:
            data = json.loads(text)
            number = data.get("number")
            place = Place(
                str(data["id"]),
                datetime.fromisoformat(data["at"]).astimezone(UTC),
                number if isinstance(number, int) and not isinstance(number, bool) else None,
            )
            return Mark(place, datetime.fromisoformat(data["looked_at"]).astimezone(UTC))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


class MarkStore:
    """``get`` / ``put`` by session id, in files that survive a restart and a crash (module docstring);
    without a directory, memory only (tests, snapshots). Reading or writing never raises: a mark is a
    convenience, and a disk that refuses it must not stop the operator."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._memory: dict[str, Mark | None] = {}

    def _path(self, session_id: str) -> Path | None:
        if self.directory is None or not _SAFE_KEY.match(session_id) or session_id.startswith("."):
            return None
        return self.directory / f"{session_id}.json"

    def get(self, session_id: str) -> Mark | None:
        """The session's mark (None: never looked at on this machine), memory first, then its file."""
        if session_id in self._memory:
            return self._memory[session_id]
        path = self._path(session_id)
        mark = None
        if path is not None:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                mark = Mark.from_json(path.read_text(encoding="utf-8"))
        self._memory[session_id] = mark
        return mark

    def put(self, session_id: str, mark: Mark, *, durable: bool = False) -> None:
        """Remember ``mark`` (in memory at once; in its file unless the disk refuses). ``durable`` also
        flushes the file to the disk itself (leaving a session, losing the focus)."""
        self._memory[session_id] = mark
        path = self._path(session_id)
        if path is not None:
            with contextlib.suppress(OSError):
                replace_file(path, mark.to_json(), durable=durable)


def seen_place(timeline: Timeline, entry_id: int) -> Place | None:
    """What the operator has seen when ``entry_id`` is the newest entry on screen: the place of the last
    event applied to it, unless an entry after it (off screen) began before that event (a tool call on
    screen completed after the next entry had started below the window), in which case the place of the
    event that made it: everything up to it was seen, nothing after it. The newest entry, last changed by
    the newest event that changed any entry, covers the events after it too (they changed nothing shown:
    a session's counters), so a session looked at to its end has nothing new."""
    entry = timeline.get(entry_id)
    if entry is None or isinstance(entry, DroppedEntry):
        return None
    following = timeline.get(entry_id + 1)
    if following is not None and following.seq < entry.last_seq:
        return entry.first_place
    if following is None and entry.last_seq >= timeline.last_entry_seq:
        return timeline.last_place or entry.place
    return entry.place


def _after(mark: Place, entry: TimelineEntry) -> bool:
    """Whether the entry was made by an event after the mark (new since then)."""
    first = entry.first_place
    return first is not None and mark.before(first)


def _newest_first(timeline: Timeline) -> Iterator[TimelineEntry]:
    return (entry for entry in reversed(timeline) if not isinstance(entry, DroppedEntry))


@dataclass(frozen=True, slots=True)
class Return:
    """Where the operator comes back to: the rule goes above ``entry_id`` (None: nothing is new).

    ``earlier_than_loaded``: the mark is older than every entry held (events before those were never
    loaded, or were dropped to bound memory); ``between`` then says how many events lie between the mark
    and the first entry held, where the server numbers its events (None where it cannot tell). ``new`` is
    how many entries below the rule were made after the mark: :func:`new_since`, the one count of "new"."""

    mark: Mark
    entry_id: int | None
    earlier_than_loaded: bool = False
    between: int | None = None
    new: int = 0


def find_return(timeline: Timeline, mark: Mark, *, before: datetime | None = None) -> Return:
    """Where ``mark`` is in ``timeline`` (see :class:`Return`). With ``before`` (when the visit began), an
    entry whose event came after that (plus :data:`LIVE_SKEW`) is not "new since you last looked": it
    arrived while the operator was watching, so a return whose first new entry is such gets no rule."""
    place = mark.place
    newer = 0
    first: TimelineEntry | None = None
    for entry in _newest_first(timeline):
        if not _after(place, entry):
            break
        first = entry
        newer += 1
    if first is None:
        return Return(mark, None)
    first_place = first.first_place
    if before is not None and first_place is not None and first_place.at > before + LIVE_SKEW:
        return Return(mark, None)
    new = newer
    if first.id != timeline.first_id or not (timeline.events_not_loaded or timeline.dropped_count):
        return Return(mark, first.id, new=new)
    between = None
    if first_place is not None and first_place.number is not None and place.number is not None:
        between = max(first_place.number - place.number - 1, 0)
    return Return(mark, first.id, earlier_than_loaded=True, between=between, new=new)


def new_since(timeline: Timeline, mark: Mark | None) -> int:
    """How many timeline entries were made after the mark, as the operator reads them (a reply streamed
    in twenty chunks is one): the one count of "new" that the sessions list's "+12", the inbox's "12 new"
    and the entries below the timeline's rule all show; every entry held when it was never looked at."""
    if mark is None:
        return sum(1 for _ in _newest_first(timeline))
    count = 0
    for entry in _newest_first(timeline):
        if not _after(mark.place, entry):
            break
        count += 1
    return count


PROBLEM_STATUSES = frozenset({"error", "failed", "max_iterations"})
"""A session row's ``activity_status`` that means its run went wrong (a Dendrux app's run statuses)."""

_READ = frozenset({"delivered", "acknowledged"})


@dataclass(frozen=True, slots=True)
class News:
    """What a session holds for the operator, as far as this client can tell (the sessions list and the
    inbox show it): ``new`` events since they last looked (None: the session is not followed here, so
    unknown), approvals ``waiting``, a ``problem`` (its words), and whether a note of theirs was read by
    the agent since they last looked (known only for a followed session: no server's list says when a
    note was delivered)."""

    new: int | None = None
    waiting: int = 0
    problem: str | None = None
    note_read: bool = False
    looked: bool = False
    """The operator looked at it on this machine before (a mark on disk), followed here or not."""
    changed: bool = False
    """Something happened since they looked, as far as the list's row tells (its last activity is after
    the place they saw): what a session not followed in this process says, its count unknown till then."""

    @property
    def has_news(self) -> bool:
        """Anything for the sessions list's NEW column: a count (the session is followed here), a mark on
        disk (looked at before, also before a restart), a problem, a note read (approvals waiting have
        their own column)."""
        return self.new is not None or self.looked or bool(self.problem) or self.note_read


def news_of(
    row: Session | None,
    *,
    pending: int | None = None,
    failed_notes: int = 0,
    core: SessionCore | None = None,
    mark: Mark | None = None,
) -> News:
    """A session's :class:`News` from what the server's list says (``row``; ``pending`` and
    ``failed_notes`` from the live inbox when it knows them) and, for a session followed here, from what
    its ``core`` holds since ``mark``."""
    waiting = pending if pending is not None else (row.pending_approval_count or 0) if row is not None else 0
    problem: str | None = None
    if row is not None and row.activity_status in PROBLEM_STATUSES:
        problem = f"run {row.activity_status.replace('_', ' ')}"
    elif row is not None and row.failed_requests:
        problem = f"{row.failed_requests} failed request{'s' if row.failed_requests != 1 else ''}"
    if problem is None and failed_notes:
        problem = "a note did not reach the agent"
    if core is None:
        if mark is None:
            return News(None, waiting, problem)
        active = last_activity(row) if row is not None else None
        changed = active is not None and active > mark.place.at
        return News(None, waiting, problem, looked=True, changed=changed)
    timeline = core.timeline
    for entry in _newest_first(timeline) if problem is None else ():
        if mark is not None and not _after(mark.place, entry):
            break
        if is_problem(entry):
            problem = "something went wrong since you looked"
            break
    looked = mark.looked_at if mark is not None else None
    read = any(
        state in _READ and (looked is None or when > looked)
        for record in timeline.notes.values()
        for state, when in record.state_times.items()
    )
    return News(new_since(timeline, mark), waiting, problem, read, looked=mark is not None)


class Looking:
    """One session's mark while its screen is shown: :meth:`saw` moves it forward to what is on screen
    (the caller calls it only while the terminal has the focus), :meth:`tick` writes it when due, and
    :meth:`save` at once (the focus lost, the session left). See the module docstring for when."""

    def __init__(
        self,
        store: MarkStore,
        session_id: str,
        *,
        clock: Callable[[], datetime] = _utcnow,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self._clock = clock
        self._monotonic = monotonic
        self.mark = store.get(session_id)
        """The mark as it now is (moves while the operator looks)."""
        self._place_due: float | None = None
        self._time_due: float | None = None

    def saw(self, place: Place | None) -> bool:
        """The operator is looking, and ``place`` is the newest thing on screen: the mark moves there if
        it is newer (never back), and its time to now. True when the place moved."""
        now = self._clock()
        mark = self.mark
        moved = place is not None and (mark is None or mark.place.before(place))
        if moved and place is not None:
            self.mark = Mark(place, now)
            if self._place_due is None:
                self._place_due = self._monotonic() + WRITE_PLACE_AFTER
        elif mark is not None:
            self.mark = Mark(mark.place, now)
            if self._time_due is None:
                self._time_due = self._monotonic() + WRITE_TIME_AFTER
        return moved

    def tick(self) -> None:
        """Write the mark if a write is due (call it about once a second)."""
        now = self._monotonic()
        due = [t for t in (self._place_due, self._time_due) if t is not None]
        if due and min(due) <= now:
            self.save(durable=False)

    def save(self, *, durable: bool = True) -> None:
        """Write the mark now (nothing to write: nothing happens)."""
        if self.mark is not None and (self._place_due is not None or self._time_due is not None):
            self.store.put(self.session_id, self.mark, durable=durable)
        self._place_due = self._time_due = None
