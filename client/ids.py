"""Ids: check them before they reach a server, shorten them for people, resolve the short ids people type.

A Preloop server answers a non-UUID session id with a 500 and drops the keep-alive connection, so every id
is checked here first and a bad one becomes a :class:`client.errors.UsageError` that names the problem.

Short ids, for every front end (the app, ``--plain``, the commands) and every backend:

* one rule for what a short id is (:func:`is_prefix`): at least 4 characters that can begin a UUID (hex,
  dashes allowed) or a ULID (a Dendrux app's runs, notes and calls; its first character is 0-7, so a word
  is not one); :func:`check_prefix` refuses anything else before a request is made;
* one resolver (:func:`resolve_id`): a full id is used as given (the server says whether it exists);
  a short one is matched, case-insensitively, against the ids of its kind, listed only then;
  none or several matches are :class:`client.errors.NoMatchingId` / :class:`client.errors.AmbiguousId`,
  naming the kind of id. :func:`resolve_session`, :func:`resolve_note` and :func:`resolve_approval` are
  that resolver with each kind's candidates: a backend only supplies them (``Backend.session_ids``, its
  note and approval listings); :class:`ApprovalIds` resolves several approval ids against one listing.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Literal

from client.errors import AmbiguousId, NoMatchingId, UsageError
from client.listing import all_approvals, session_notes
from client.textsafe import safe_line

if TYPE_CHECKING:
    from client.backends.base import Backend
    from client.models import Approval

__all__ = [
    "MIN_PREFIX",
    "ApprovalIds",
    "check_prefix",
    "is_full_id",
    "is_prefix",
    "is_ulid",
    "is_uuid",
    "match_id",
    "require_note_id",
    "require_uuid",
    "resolve_approval",
    "resolve_id",
    "resolve_note",
    "resolve_session",
    "short_id",
]

SHORT_LEN = 8
ULID_SHORT_LEN = 12
MIN_PREFIX = 4

IdKind = Literal["session", "note", "approval", "run", "rule"]

FULL_NOTE_ID = 16
"""Note ids are 16 hex characters (Preloop and the local server); shorter hex is a prefix to look up."""

SEARCH_SESSIONS = 100
"""How many of the newest sessions a short note id is looked for in (without a session)."""

_HEX = re.compile(r"[0-9a-fA-F]+")
_HEX_PREFIX = re.compile(r"[0-9a-fA-F-]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NOTE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# A ULID (Dendrux run, note and tool-call ids): 26 Crockford base32 characters, the first 0-7.
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}")
_ULID_PREFIX = re.compile(r"[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{3,25}")


def is_uuid(value: str) -> bool:
    """True for a canonical 36-character UUID (any case), the only id shape servers accept."""
    # Not uuid.UUID(): it also takes dashes anywhere, braces and "urn:uuid:", which would reach the URL as
    # typed (Preloop answers an id it cannot parse with a 500).
    return _UUID.fullmatch(value) is not None


def is_ulid(value: str) -> bool:
    """True for a 26-character ULID, the id shape of a Dendrux app's runs, notes and tool calls."""
    return _ULID.fullmatch(value) is not None


def require_uuid(value: str, what: str = "session id") -> str:
    """Return the UUID lower-cased, or raise UsageError before a server sees a malformed id."""
    text = value.strip()
    if not is_uuid(text):
        raise UsageError(f"'{safe_line(value, 60)}' is not a valid {what} (expected a UUID)")
    return text.lower()


def require_note_id(value: str) -> str:
    """Note ids are opaque tokens (Preloop: 16 hex chars); refuse anything that could change the URL path."""
    text = value.strip()
    if not _NOTE_ID.match(text):
        raise UsageError(f"'{safe_line(value, 60)}' is not a valid note id")
    return text


def short_id(value: str | None, length: int | None = None) -> str:
    """The first characters of an id, terminal-safe: enough to tell rows apart and to type back as a
    prefix (8; a ULID's first 10 characters are its millisecond timestamp, so it gets 12); ``-`` for
    none."""
    if not value:
        return "-"
    if length is None:
        length = ULID_SHORT_LEN if is_ulid(value) else SHORT_LEN
    return safe_line(value[:length])


def canonical(value: str) -> str:
    """An id as the servers write it: a UUID lower-case, a ULID upper-case, anything else as given."""
    if is_uuid(value):
        return value.lower()
    if is_ulid(value):
        return value.upper()
    return value


# ------------------------------------------------------------------------------------------- short ids


def is_prefix(value: str) -> bool:
    """The one rule for a short id: at least 4 characters that can begin a UUID (hex, dashes allowed)
    or a ULID (its first character 0-7, so a word such as "Needs" is not one)."""
    text = value.strip()
    if _ULID_PREFIX.fullmatch(text):
        return True
    return _HEX_PREFIX.fullmatch(text) is not None and len(text.replace("-", "")) >= MIN_PREFIX


def check_prefix(value: str, kind: IdKind = "session") -> str:
    """The typed short id, stripped; a UsageError (before any request) when it cannot be one."""
    text = value.strip()
    if not is_prefix(text):
        raise UsageError(
            f"'{safe_line(value, 60)}' is too short or not an id: give the full {kind} id or at least "
            f"{MIN_PREFIX} of its first characters"
        )
    return text


def is_full_id(value: str, kind: IdKind) -> bool:
    """Whether ``value`` is a whole id of this kind, used as given rather than matched: a UUID or a ULID,
    and for notes also 16+ hex characters or any other token shape (only hex is ever shortened)."""
    text = value.strip()
    if is_uuid(text) or is_ulid(text):
        return True
    return kind == "note" and (len(text) >= FULL_NOTE_ID or not _HEX.fullmatch(text))


def match_id(
    prefix: str, candidates: Iterable[str], kind: IdKind = "session", *, where: str | None = None
) -> str:
    """The one candidate starting with ``prefix`` (any case): NoMatchingId for none, AmbiguousId for
    several (``where`` names where it was looked for, e.g. "session 1a2b3c4d")."""
    wanted = prefix.strip().lower()
    matches = sorted({canonical(c) for c in candidates if c.lower().startswith(wanted)})
    if not matches:
        raise NoMatchingId(prefix, kind, where)
    if len(matches) > 1:
        raise AmbiguousId(prefix, matches, kind)
    return matches[0]


async def resolve_id(
    value: str,
    kind: IdKind,
    candidates: Callable[[], Awaitable[Iterable[str]]],
    *,
    where: str | Callable[[], str | None] | None = None,
) -> str:
    """The one resolver: a full id as given (see :func:`canonical`); a short one (:func:`is_prefix`)
    matched against ``candidates()``, which is asked only then (listing ids costs requests). ``where``
    names where they were looked for (a function: asked after the candidates were)."""
    text = value.strip()
    if is_full_id(text, kind):
        return canonical(text)
    prefix = check_prefix(text, kind)
    found = await candidates()
    return match_id(prefix, found, kind, where=where() if callable(where) else where)


async def resolve_session(
    backend: Backend, value: str, *, page_size: int = 100, confirm: bool = False
) -> str:
    """A full session id as given, or the one session (of every status, newest first, as far as the
    backend lists them: ``Backend.session_ids``) whose id starts with a short one.

    ``confirm``: a full id is also looked up (``Backend.get_session``: ``NotFound`` when there is no such
    session), for a caller that only filters by it and would otherwise answer "none" for a typo."""

    async def candidates() -> list[str]:
        return [sid async for sid in backend.session_ids(page_size=page_size)]

    text = value.strip()
    session_id = await resolve_id(text, "session", candidates)
    if confirm and is_full_id(text, "session"):
        await backend.get_session(session_id)
    return session_id


async def resolve_note(
    backend: Backend, value: str, session: str | None = None, known: Iterable[str] = ()
) -> str:
    """A full note id as given; a short one matched against the notes of ``session`` (plus ``known``, the
    ids a caller already holds), or of the newest :data:`SEARCH_SESSIONS` sessions. Servers list notes
    per target only, so they are read session by session, a few at a time."""
    searched: list[str] = []

    async def candidates() -> list[str]:
        if session is not None:
            searched.append(session)
        else:
            searched.extend(row.id for row in (await backend.list_sessions(limit=SEARCH_SESSIONS)).items)
        gate = asyncio.Semaphore(4)

        async def ids_in(sid: str) -> list[str]:
            async with gate:
                return [n.note_id for n in await session_notes(backend, sid)]

        found = await asyncio.gather(*(ids_in(sid) for sid in searched))
        return [*known, *(nid for ids in found for nid in ids)]

    def where() -> str:
        return f"session {short_id(session)}" if session else f"the newest {len(searched)} sessions"

    return await resolve_id(value, "note", candidates, where=where)


async def resolve_approval(
    backend: Backend, value: str, session: str | None = None, known: Iterable[str] = ()
) -> str:
    """A full approval id as given; a short one matched against every approval (pending or not: a decided
    one is then told as such, not as unknown) of ``session`` or all sessions, plus ``known``."""
    return await ApprovalIds(backend, session, known).resolve(value)


class ApprovalIds:
    """Resolves the approval ids typed together (``preloop approvals approve ID ID ...``) against one
    listing of every approval of ``session`` or all sessions, read once and only when a short id needs
    it (see :func:`resolve_approval`); :attr:`rows` keeps what it listed, so a caller can name them."""

    def __init__(self, backend: Backend, session: str | None = None, known: Iterable[str] = ()) -> None:
        self._backend = backend
        self._session = session
        self._known = list(known)
        self._listed: asyncio.Task[list[Approval]] | None = None
        self.rows: list[Approval] = []
        """The approvals listed to match short ids (none when every id was given in full)."""

    async def _candidates(self) -> list[str]:
        if self._listed is None:
            self._listed = asyncio.ensure_future(all_approvals(self._backend, self._session, None))
        self.rows = await self._listed
        return [*self._known, *(a.id for a in self.rows)]

    async def resolve(self, value: str) -> str:
        """The one approval ``value`` names (:func:`resolve_id`): a NoMatchingId or AmbiguousId otherwise."""
        return await resolve_id(value, "approval", self._candidates)
