"""Session ids: check them before they reach a server, shorten them for people, match typed prefixes.

A Preloop server answers a non-UUID session id with a 500 and drops the keep-alive connection, so every id
is checked here first and a bad one becomes a :class:`client.errors.UsageError` that names the problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from client.errors import AmbiguousId, NoMatchingId, UsageError
from client.textsafe import safe_line

SHORT_LEN = 8
ULID_SHORT_LEN = 12
MIN_PREFIX = 4

_HEX_PREFIX = re.compile(r"^[0-9a-f-]+$")
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
    """Return the one candidate starting with ``prefix``; raise NoMatchingId / AmbiguousId otherwise."""
    wanted = normalise_prefix(prefix)
    matches = sorted({c for c in candidates if c.lower().startswith(wanted)})
    if not matches:
        raise NoMatchingId(prefix)
    if len(matches) > 1:
        raise AmbiguousId(prefix, matches)
    return matches[0]
