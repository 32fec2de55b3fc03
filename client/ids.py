"""Ids: check them before they reach a server, shorten them for people, resolve the short ids people type.

A Preloop server answers a non-UUID session id with a 500 and drops the keep-alive connection, so every id
is checked here first and a bad one becomes a :class:`client.errors.UsageError` that names the problem.

The one short-id resolver (:func:`resolve_id`) serves sessions, notes, approvals and Dendrux runs, for
every front end (the app, ``--plain``, the commands): a full id is used as given (the server says whether
it exists); anything shorter must be 4+ characters and is matched, case-insensitively, against the ids the
caller lists (fetched only then); none or several matches are :class:`client.errors.NoMatchingId` /
:class:`client.errors.AmbiguousId`, naming the kind of id.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Literal

from client.errors import AmbiguousId, NoMatchingId, UsageError
from client.textsafe import safe_line

SHORT_LEN = 8
ULID_SHORT_LEN = 12
MIN_PREFIX = 4

IdKind = Literal["session", "note", "approval", "run", "rule"]

FULL_NOTE_ID = 16
"""Note ids are 16 hex characters (Preloop and the local server); shorter hex is a prefix to look up."""

_HEX_PREFIX = re.compile(r"^[0-9a-f-]+$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_PREFIX = re.compile(r"^[0-9A-Za-z-]+$")
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


def is_ulid_prefix(value: str) -> bool:
    """True for the first 4+ characters of a ULID (it starts with a digit 0-7, so words do not match)."""
    return _ULID_PREFIX.fullmatch(value) is not None


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


def short_id(value: str) -> str:
    """The first 8 characters: enough to tell sessions apart on screen and to type back as a prefix. A
    ULID's first 10 characters are its millisecond timestamp, so it gets 12 (two random ones too)."""
    return value[:ULID_SHORT_LEN] if is_ulid(value) else value[:SHORT_LEN]


def normalise_prefix(value: str) -> str:
    """Lower-case a typed prefix and check it is at least 4 hex characters (dashes allowed)."""
    text = value.strip().lower()
    if not _HEX_PREFIX.match(text) or len(text.replace("-", "")) < MIN_PREFIX:
        raise UsageError(
            f"'{safe_line(value, 60)}' is neither a session UUID nor a short id of at least "
            f"{MIN_PREFIX} hex characters"
        )
    return text


def match_prefix(prefix: str, candidates: Iterable[str]) -> str:
    """Return the one session id starting with ``prefix`` (4+ hex); NoMatchingId / AmbiguousId otherwise."""
    return match_id(normalise_prefix(prefix), candidates)


def is_full_id(value: str, kind: IdKind) -> bool:
    """Whether ``value`` is a whole id of this kind, used as given rather than matched: a UUID or a ULID,
    and for notes also 16+ hex characters or any other token shape (only hex is ever shortened)."""
    text = value.strip()
    if is_uuid(text) or is_ulid(text):
        return True
    return kind == "note" and (len(text) >= FULL_NOTE_ID or not _HEX.match(text))


def check_prefix(value: str, kind: IdKind = "session") -> str:
    """The typed short id, stripped; a UsageError (before any request) when it cannot be one: fewer than
    4 characters, or characters no id has."""
    text = value.strip()
    if not _PREFIX.match(text) or len(text.replace("-", "")) < MIN_PREFIX:
        raise UsageError(
            f"'{safe_line(value, 60)}' is too short or not an id: give the full {kind} id or at least "
            f"{MIN_PREFIX} of its first characters"
        )
    return text


def match_id(
    prefix: str, candidates: Iterable[str], kind: IdKind = "session", *, where: str | None = None
) -> str:
    """The one candidate starting with ``prefix`` (any case): NoMatchingId for none, AmbiguousId for
    several (``where`` names where it was looked for, e.g. "session 1a2b3c4d")."""
    wanted = prefix.strip().lower()
    matches = sorted({c for c in candidates if c.lower().startswith(wanted)})
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
    where: str | None = None,
) -> str:
    """A full id as given; a short one (4+ characters) matched against ``candidates()``, which is asked
    only then (listing ids costs requests)."""
    text = value.strip()
    if is_full_id(text, kind):
        return text
    return match_id(check_prefix(text, kind), await candidates(), kind, where=where)
