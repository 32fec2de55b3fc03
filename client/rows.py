"""Sessions and notes as the presentation code reads them, and standard-library views of their wire JSON.

Why this exists: ``preloop sessions list -o id`` and ``preloop notes list --json`` run from scripts, often
in loops, and must start in about 0.15 s, but importing pydantic takes that long on its own and the wire
models (:mod:`client.models`) as long again. So the formatters (:mod:`client.present`, the CLI's JSON
output) are written against the protocols :class:`SessionRow` and :class:`NoteRow`, which a pydantic model
satisfies, and so do the read-only views below that the CLI's fast path (:mod:`client.quick`) builds
from a local server's answer with the standard library alone. Both paths print through the same code.

The views are strict where the models are lenient, never the other way round: a value not plainly of its
wire type (a number in a string, a float where an int belongs, a time not spelt like ``2026-01-31T12:00:00Z``,
NaN, a missing required field) raises :class:`NotPlain`, and the caller then takes the full path, whose
models decide and report as always. What a view accepts it dumps exactly as ``model_dump(mode="json")``
would (field names, order, defaults and time format mirror :mod:`client.models`; tests/client/test_rows.py
compares the two on generated answers).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal, Protocol, Self

__all__ = [
    "NotPlain",
    "NoteAuthorView",
    "NoteListView",
    "NoteRow",
    "NoteState",
    "NoteView",
    "SessionListView",
    "SessionRow",
    "SessionView",
    "TokenUsageView",
    "iso_utc",
]


class NoteState(StrEnum):
    """Every state an operator note can be in. Terminal states never change again."""

    PENDING = "pending"
    CLAIMED = "claimed"
    DELIVERED = "delivered"
    ACKNOWLEDGED = "acknowledged"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    FAILED = "failed"
    UNDELIVERABLE = "undeliverable"

    @property
    def terminal(self) -> bool:
        """A terminal note will not move again, so nothing needs to watch it any more."""
        return self not in (NoteState.PENDING, NoteState.CLAIMED)


def iso_utc(value: datetime) -> str:
    """A time as the wire spells it: ISO 8601 in UTC with a ``Z`` (the models serialise with this too)."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class SessionRow(Protocol):
    """What the presentation helpers read of a session: a :class:`client.models.Session` or a
    :class:`SessionView`."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def summary(self) -> str | None: ...
    @property
    def agent_kind(self) -> str | None: ...
    @property
    def session_source_type(self) -> str | None: ...
    @property
    def cwd(self) -> str | None: ...
    @property
    def started_at(self) -> datetime | None: ...
    @property
    def last_activity_at(self) -> datetime | None: ...
    @property
    def last_request_at(self) -> datetime | None: ...
    @property
    def ended_at(self) -> datetime | None: ...

    def model_dump(self, *, mode: Literal["json"]) -> dict[str, Any]:
        """The row as JSON-ready data, every field the client knows (pydantic's method, or the view's)."""
        ...


class NoteRow(Protocol):
    """What the CLI's scripted note output reads: a :class:`client.models.Note` or a :class:`NoteView`."""

    @property
    def note_id(self) -> str: ...

    def model_dump(self, *, mode: Literal["json"]) -> dict[str, Any]:
        """The note as JSON-ready data, every field the client knows."""
        ...


class NotPlain(ValueError):
    """The answer is not plainly of the wire types: the fast path hands over to the full one."""


# --------------------------------------------------------------------------------------------- reading

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?")


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise NotPlain


def _int(value: Any) -> int:
    if type(value) is int:  # not bool
        return value
    raise NotPlain


def _float(value: Any) -> float:
    if type(value) is int:
        value = float(value)  # pydantic reads 5 into a float field as 5.0, and dumps it so
    if type(value) is float and math.isfinite(value):
        return value
    raise NotPlain


def _bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    raise NotPlain


def _time(value: Any) -> datetime:
    """Only the plain spelling (pydantic reads more; those go the full way); zone-less means UTC."""
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        raise NotPlain
    try:
        parsed = datetime.fromisoformat(value)
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise NotPlain from None


def _counts(value: Any) -> Mapping[str, int]:
    if not isinstance(value, dict):
        raise NotPlain
    return MappingProxyType({_str(key): _int(count) for key, count in value.items()})


def _optional(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else read(value)


def _view(name: str) -> Callable[[Any], Any]:
    return lambda value: _VIEWS[name].from_json(value)


def _list_of(name: str) -> Callable[[Any], Any]:
    def read(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise NotPlain
        return tuple(_VIEWS[name].from_json(item) for item in value)

    return read


_READERS: dict[str, Callable[[Any], Any]] = {
    "str": _str,
    "str | None": _optional(_str),
    "int": _int,
    "int | None": _optional(_int),
    "float | None": _optional(_float),
    "bool": _bool,
    "bool | None": _optional(_bool),
    "datetime | None": _optional(_time),
    "Mapping[str, int]": _counts,
    "TokenUsageView | None": _optional(_view("TokenUsageView")),
    "NoteAuthorView | None": _optional(_view("NoteAuthorView")),
    "Sequence[SessionView]": _list_of("SessionView"),
    "Sequence[NoteView]": _list_of("NoteView"),
}
"""How each annotation of the views below is read from JSON (an unknown one fails the view's first use)."""


class _View:
    """A read-only row read from a wire JSON object, field by field, and dumped back like the model.

    Fields are the class's annotations, in order; a field with a class-level default is optional, one
    without is required. Plain classes, not dataclasses: generating a dataclass's methods for these six
    costs ~15 ms of a scripted command's start-up, a tenth of its budget.
    """

    @classmethod
    def from_json(cls, data: Any) -> Self:
        """The view of one JSON object; unknown keys are ignored (like the models), the rest must be plain."""
        if not isinstance(data, dict):
            raise NotPlain
        view = object.__new__(cls)
        values = view.__dict__
        for name, read, required in _plan(cls):
            if name in data:
                values[name] = read(data[name])
            elif required:
                raise NotPlain
        return view

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__dict__!r})"

    def model_dump(self, *, mode: Literal["json"] = "json") -> dict[str, Any]:
        """The same data as the pydantic model's ``model_dump(mode="json")`` (same name, so the formatters
        take either)."""
        return {name: _dump(getattr(self, name)) for name, _, _ in _plan(type(self))}


_Plan = list[tuple[str, Callable[[Any], Any], bool]]
_PLANS: dict[type[_View], _Plan] = {}


def _plan(cls: type[_View]) -> _Plan:
    """(name, reader, required) per field of a view, in order (worked out on its first use)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = [
            (name, _READERS[str(kind)], name not in cls.__dict__)
            for name, kind in cls.__annotations__.items()
        ]
    return plan


def _dump(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, _View):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return [_dump(item) for item in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


# --------------------------------------------------------------------------------------------- views
# Field for field as in client.models (same names, order and defaults; times are UTC datetimes; lists and
# dicts read-only).

_NO_COUNTS: Mapping[str, int] = MappingProxyType({})


class TokenUsageView(_View):
    """:class:`client.models.TokenUsage`."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    uncached_input_tokens: int = 0
    cache_hit_ratio: float | None = None


class SessionView(_View):
    """:class:`client.models.Session`: one row of the session list."""

    id: str
    session_source_type: str | None = None
    session_source_id: str | None = None
    session_reference: str | None = None
    alias: str | None = None
    parent_session_id: str | None = None
    runtime_principal_type: str | None = None
    runtime_principal_id: str | None = None
    runtime_principal_name: str | None = None
    title: str | None = None
    summary: str | None = None
    summary_updated_at: datetime | None = None
    started_at: datetime | None = None
    last_activity_at: datetime | None = None
    ended_at: datetime | None = None
    agent_id: str | None = None
    agent_name: str | None = None
    agent_href: str | None = None
    flow_href: str | None = None
    flow_id: str | None = None
    flow_name: str | None = None
    flow_execution_id: str | None = None
    latest_model_alias: str | None = None
    latest_provider_name: str | None = None
    is_active_now: bool | None = None
    activity_status: str | None = None
    total_requests: int | None = None
    successful_requests: int | None = None
    failed_requests: int | None = None
    token_usage: TokenUsageView | None = None
    estimated_cost: float | None = None
    last_request_at: datetime | None = None
    optimization_waste_score: float | None = None
    optimization_potential_savings_tokens: int | None = None
    optimization_potential_savings_usd: float | None = None
    note_count: int | None = None
    latest_note_author_display: str | None = None
    latest_note_author_auth_method: str | None = None
    latest_note_at: datetime | None = None
    legal_hold: bool = False
    managed_agent_id: str | None = None
    managed_agent_name: str | None = None
    agent_kind: str | None = None
    cwd: str | None = None
    tool_call_count: int | None = None
    pending_approval_count: int | None = None
    artifact_counts: Mapping[str, int] = _NO_COUNTS


class SessionListView(_View):
    """:class:`client.models.SessionList`: one page of ``GET /api/v1/runtime-sessions``."""

    period_start: datetime | None = None
    period_end: datetime | None = None
    query: str | None = None
    session_source_type: str | None = None
    status: str | None = None
    total: int | None = None
    has_more: bool = False
    limit: int = 20
    offset: int = 0
    items: Sequence[SessionView] = ()


class NoteAuthorView(_View):
    """:class:`client.models.NoteAuthor`."""

    user_id: str | None = None
    agent_id: str | None = None
    display: str | None = None
    auth_method: str | None = None


class NoteView(_View):
    """:class:`client.models.Note`."""

    note_id: str
    state: str
    text: str
    managed_agent_id: str | None = None
    runtime_session_id: str | None = None
    next_session: bool = False
    author: NoteAuthorView | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    claimed_at: datetime | None = None
    expired_at: datetime | None = None
    undeliverable_at: datetime | None = None
    undeliverable_reason: str | None = None
    delivered_at: datetime | None = None
    delivery_channel: str | None = None
    delivery_event: str | None = None
    delivered_turn_index: int | None = None
    acknowledged_turn_id: str | None = None
    cancelled_at: datetime | None = None
    correlation_id: str | None = None


class NoteListView(_View):
    """:class:`client.models.NoteList`: ``GET /api/v1/operator-notes``."""

    notes: Sequence[NoteView] = ()
    total: int | None = None


_VIEWS: dict[str, type[_View]] = {
    cls.__name__: cls
    for cls in (TokenUsageView, SessionView, SessionListView, NoteAuthorView, NoteView, NoteListView)
}
