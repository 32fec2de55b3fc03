"""Every failure the client can report, as one tree of exceptions with a sentence an operator can act on.

::

    ClientError                      (title, hint; str() is "title: hint")
    ├── UsageError                   bad input caught before any request was made
    │   ├── AmbiguousId              a short id matches several sessions (notes, approvals, runs)
    │   └── NoMatchingId             no session (note, approval, run) starts with that short id
    ├── ConfigError                  no server configured, unreadable config file, unknown profile
    │   └── NoKeyring                no working OS keyring and no permission to fall back to a file
    ├── TransportError               the request did not complete
    │   ├── ServerUnreachable        connection refused / DNS / TLS: nothing was sent
    │   ├── Timeout                  no answer in time
    │   ├── ConnectionLost           the connection broke mid-answer
    │   └── NoteOutcomeUnknown       a note was sent but no answer came back: check the list
    ├── InvalidResponse              the server answered something this client cannot read
    ├── Unsupported                  this kind of server cannot do that (see ``Backend.capabilities``)
    └── ApiError                     the server answered with an error status (``status``, ``detail``)
        ├── BadRequest               400 (e.g. "Request already approved")
        ├── AuthError                401: token missing, invalid or expired
        ├── PermissionDenied         403
        ├── NotFound                 404
        ├── Conflict                 409
        │   └── SessionEnded         a note for a session that has ended (409, or found before sending)
        ├── ValidationFailed         422, with ``fields`` parsed from the server's detail list
        ├── RateLimited              429, with the server's own sentence
        └── ServerError              5xx

The live stream never raises these for connection trouble: ``Client.follow()`` reports drops, stalls and
retries as :mod:`client.status` values and only stops on a refusal.

Rules every error follows: the token is never part of a message (the client scrubs it from server text
too), server-provided text is made terminal-safe, and ``hint`` is one sentence saying what to do next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from client.textsafe import safe_line

__all__ = [
    "AmbiguousId",
    "ApiError",
    "AuthError",
    "BadRequest",
    "ClientError",
    "ConfigError",
    "Conflict",
    "ConnectionLost",
    "FieldError",
    "InvalidResponse",
    "NoKeyring",
    "NoMatchingId",
    "NotFound",
    "NoteOutcomeUnknown",
    "PermissionDenied",
    "RateLimited",
    "ServerError",
    "ServerUnreachable",
    "SessionEnded",
    "Timeout",
    "TransportError",
    "Unsupported",
    "UsageError",
    "ValidationFailed",
    "error_for_status",
]

_MAX_DETAIL = 300


class ClientError(Exception):
    """Root of every error this client raises; catch it to handle all of them."""

    title: str = "client error"
    """What went wrong, in a few words (the first part of every error line)."""

    def __init__(self, hint: str) -> None:
        self.hint = hint
        super().__init__(hint)

    def __str__(self) -> str:
        return f"{self.title}: {self.hint}"


# ------------------------------------------------------------------------------------------------ usage


class UsageError(ClientError):
    """The input was wrong before anything was asked of the server (e.g. an id that is not a UUID)."""

    title = "bad input"


class AmbiguousId(UsageError):
    """A short id fits several sessions (notes, approvals, runs: ``what``); the caller must type more."""

    title = "ambiguous id"

    def __init__(self, prefix: str, matches: list[str], what: str = "session") -> None:
        self.prefix = prefix
        self.matches = matches
        shown = ", ".join(m[:8] for m in matches[:5])
        more = ", ..." if len(matches) > 5 else ""
        super().__init__(
            f"'{safe_line(prefix, 40)}' matches {len(matches)} {what}s ({shown}{more}): type more characters"
        )


_WHERE_TO_LOOK = {
    "session": "`preloop sessions list` shows the ids",
    "note": "give the full id (`preloop notes list --session ID` shows them)",
    "approval": "`preloop approvals list --status all` shows them",
    "run": "`preloop sessions list` shows the run ids",
    "rule": "`preloop approvals rules` shows them",
}


class NoMatchingId(UsageError):
    """No id of the kind asked for (``what``: session, note, approval, run) starts with the given prefix.

    ``where`` narrows the sentence to where it was looked for ("session 1a2b3c4d")."""

    title = "no such session"

    def __init__(self, prefix: str, what: str = "session", where: str | None = None) -> None:
        self.prefix = prefix
        self.title = f"no such {what}"
        whose = f" of {where}" if where else ""
        look = _WHERE_TO_LOOK.get(what, f"`preloop {what}s list` shows them")
        super().__init__(f"no {what}{whose} starts with '{safe_line(prefix, 40)}': {look}")


# ------------------------------------------------------------------------------------------------ config


class ConfigError(ClientError):
    """The local configuration cannot say which server to use or how to authenticate."""

    title = "configuration problem"


class NoKeyring(ConfigError):
    """No OS keyring works here; the token may only go to a file if the user explicitly allows it."""

    title = "no keyring"


# ------------------------------------------------------------------------------------------------ transport


class TransportError(ClientError):
    """The request did not complete; the server may or may not have seen it."""

    title = "connection problem"
    sent: bool = True
    """Whether the request may have reached the server (False: nothing left this machine)."""


class ServerUnreachable(TransportError):
    """Nothing was sent: the server could not be reached at all."""

    title = "server unreachable"
    sent = False


class Timeout(TransportError):
    """The server did not answer in time."""

    title = "timed out"


class ConnectionLost(TransportError):
    """The connection broke while the answer was on its way."""

    title = "connection lost"


class NoteOutcomeUnknown(TransportError):
    """A note went out but no answer came back: it may or may not exist now. Never re-send blindly."""

    title = "note outcome unknown"

    def __init__(self, correlation_id: str, reason: str) -> None:
        self.correlation_id = correlation_id
        super().__init__(
            f"{reason}; the note may or may not have been created: unknown, check the list "
            "(`preloop notes`) before sending it again"
        )


# ------------------------------------------------------------------------------------------------ responses


class InvalidResponse(ClientError):
    """The server answered, but not with something this client can read (not JSON, wrong shape)."""

    title = "unexpected answer"


class Unsupported(ClientError):
    """The server behind the backend cannot do this at all (e.g. withdraw a note on a server without
    withdrawal); the UI checks ``Backend.capabilities`` first, so this is for scripts and races."""

    title = "not supported"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field a server rejected: where (``body.text``) and why (the server's words)."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class ApiError(ClientError):
    """The server answered with an error status; ``detail`` is its sentence (terminal-safe)."""

    title = "request refused"
    status: int

    def __init__(self, status: int, detail: str, hint: str | None = None) -> None:
        self.status = status
        self.detail = detail
        super().__init__(hint or detail or f"the server answered {status}")


class BadRequest(ApiError):
    """400: the server understood but will not do it (e.g. deciding an approval twice)."""

    title = "bad request"


class AuthError(ApiError):
    """401: no token, or one the server no longer accepts; logging in again fixes it."""

    title = "not authorised"


class PermissionDenied(ApiError):
    """403: the token is valid but this account may not do that; only an owner can help."""

    title = "permission denied"


class NotFound(ApiError):
    """404: the thing asked for does not exist or this account cannot see it."""

    title = "not found"


class Conflict(ApiError):
    """409: the request clashes with the current state (e.g. a session that already ended)."""

    title = "conflict"


class SessionEnded(Conflict):
    """A note was refused because its session has ended: nothing was sent, and no retry can deliver it.

    One error whatever the server: ours answers 409, a Dendrux app's steer router 409
    (``RunAlreadyTerminalError``), and for a Preloop server (which would accept the note and leave it
    pending for ever) the backend finds the ended session row before sending. ``detail`` is the server's
    sentence when it gave one.
    """

    title = "session ended"

    def __init__(self, what: str, detail: str = "") -> None:
        super().__init__(
            409,
            detail,
            f"{what} has ended, so the note was not sent (a note can only reach a live session): "
            "`preloop sessions list` shows which sessions are still running",
        )


class ValidationFailed(ApiError):
    """A 422: ``fields`` lists each rejected field with the server's message."""

    title = "invalid request"

    def __init__(self, status: int, detail: str, fields: list[FieldError]) -> None:
        self.fields = fields
        super().__init__(status, detail, hint=detail)


class RateLimited(ApiError):
    """A 429; the hint is the server's own sentence, ``retry_after`` its header in seconds if any."""

    title = "rate limited"

    def __init__(self, status: int, detail: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        hint = detail or "the server is rate limiting this client: wait a little and try again"
        if retry_after is not None and "retry" not in hint.lower():
            hint += f" (retry after {retry_after:g} s)"
        super().__init__(status, detail, hint=hint)


class ServerError(ApiError):
    """5xx: the server failed; trying again later may work, its logs say why."""

    title = "server error"


# ------------------------------------------------------------------------------------------------ mapping


def _clean(text: str, secret: str | None) -> str:
    if secret:
        text = text.replace(secret, "***")
    return safe_line(text, _MAX_DETAIL)


def _field_errors(items: list[Any], secret: str | None) -> list[FieldError]:
    fields: list[FieldError] = []
    for item in items:
        if not isinstance(item, dict):
            fields.append(FieldError("", _clean(str(item), secret)))
            continue
        loc = item.get("loc") or []
        parts = [str(p) for p in loc] if isinstance(loc, list) else [str(loc)]
        if parts and parts[0] in ("body", "query", "path", "header"):
            parts = parts[1:]
        message = str(item.get("msg") or item.get("type") or "invalid")
        message = message.removeprefix("Value error, ")
        fields.append(FieldError(_clean(".".join(parts), secret), _clean(message, secret)))
    return fields


def error_for_status(
    status: int,
    body: Any,
    *,
    what: str = "",
    token_sent: bool = True,
    retry_after: str | None = None,
    secret: str | None = None,
) -> ApiError:
    """Turn an error answer into the matching ``ApiError`` with a sentence for people.

    ``body`` is the decoded JSON (or text); ``what`` names the thing asked for ("session 1234abcd") so a
    404 can say what was missing; ``secret`` (the token) is scrubbed from any server text.
    """
    raw = body.get("detail") if isinstance(body, dict) else body
    if isinstance(raw, list):
        fields = _field_errors(raw, secret)
        detail = "; ".join(str(f) for f in fields) or "the server rejected the request"
        if status == 422 or status == 400:
            return ValidationFailed(status, f"the server rejected the request: {detail}", fields)
    elif isinstance(raw, str):
        detail = _clean(raw, secret)
    elif raw is None:
        detail = ""
    else:
        detail = _clean(str(raw), secret)

    if status == 400:
        return BadRequest(status, detail, detail or "the server rejected the request")
    if status == 401:
        hint = (
            "your token is invalid or expired: run `preloop login`"
            if token_sent
            else "no token was given: run `preloop login` or set PRELOOP_TOKEN"
        )
        return AuthError(status, detail, hint)
    if status == 403:
        base = detail or "this account may not do that"
        return PermissionDenied(status, detail, f"{base}: ask an owner of this server for access")
    if status == 404:
        thing = what or "that"
        base = f"{thing} does not exist or is not visible to this account"
        return NotFound(status, detail, f"{base} ({detail})" if detail else base)
    if status == 409:
        return Conflict(status, detail, detail or "the request conflicts with the current state")
    if status == 422:
        return ValidationFailed(status, detail or "the server rejected the request", [])
    if status == 429:
        seconds: float | None = None
        if retry_after:
            try:
                seconds = float(retry_after)
            except ValueError:
                seconds = None
        return RateLimited(status, detail, seconds)
    if status >= 500:
        return ServerError(
            status,
            detail,
            f"the server failed ({status}{': ' + detail if detail else ''}): try again, or check its logs",
        )
    return ApiError(status, detail, detail or f"the server answered {status}")
