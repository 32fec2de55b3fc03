"""The standard-library views of ``client.rows`` against the pydantic models of ``client.models``.

The CLI's fast path prints views where the full path prints models, so a view must never accept what its
model refuses, and what it accepts must dump exactly as the model does. Generated answers check both.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from client import models, rows
from client.present import session_state, session_title, sort_sessions

PAIRS: list[tuple[type[rows._View], type[BaseModel]]] = [
    (rows.TokenUsageView, models.TokenUsage),
    (rows.SessionView, models.Session),
    (rows.SessionListView, models.SessionList),
    (rows.NoteAuthorView, models.NoteAuthor),
    (rows.NoteView, models.Note),
    (rows.NoteListView, models.NoteList),
]


@pytest.mark.parametrize(("view", "model"), PAIRS, ids=[v.__name__ for v, _ in PAIRS])
def test_a_view_has_its_models_fields_in_order_with_the_same_defaults(
    view: type[rows._View], model: type[BaseModel]
) -> None:
    """A field added to a model and not to its view (or the other way round) fails here."""
    assert list(view.__annotations__) == list(model.model_fields)
    empty_model = model.model_validate({name: "x" for name in ("id", "note_id", "state", "text")})
    for name, info in model.model_fields.items():
        if info.is_required():
            assert name not in view.__dict__, name
        else:
            assert name in view.__dict__, name
            # Containers: the model's factory gives an empty one, the view a read-only empty one.
            assert _plain(getattr(empty_model, name)) == _plain(view.__dict__[name]), name


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return list(value)
    if hasattr(value, "items"):
        return dict(value)
    return value


def test_note_state_is_one_enum() -> None:
    assert models.NoteState is rows.NoteState


# ------------------------------------------------------------------------------------------ generated

_TIMES = st.one_of(
    st.sampled_from(
        [
            "2026-01-31T12:00:00Z",
            "2026-01-31T12:00:00.5Z",
            "2026-01-31T12:00:00.123456Z",
            "2026-01-31T12:00:00",
            "2026-01-31T12:00:00+05:30",
            "2026-01-31T12:00:00-00:00",
            "9999-12-31T23:59:59-14:00",
        ]
    ),
    st.datetimes(timezones=st.none() | st.timezones()).map(lambda d: d.isoformat()),
)
_ODD_TIMES = st.sampled_from(
    [
        "2026-01-31T12:00:00.1234567Z",
        "0001-01-01T00:00:00+14:00",
        "2026-01-31 12:00:00Z",
        "2026-01-31t12:00:00z",
        "2026-01-31",
        "2026-02-30T00:00:00Z",
        "2026-01-31T24:00:00Z",
        "2026-01-31T12:00Z",
        "2026-01-31T12:00:00+0530",
        "",
    ]
)
_ODD = st.one_of(
    st.none(),
    _ODD_TIMES,
    st.integers(min_value=0, max_value=2**32),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["5", "5.0", "true", "1e3", "2026-01-31T12:00:00Z"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _typed(base: str) -> st.SearchStrategy[Any]:
    if base.endswith("View]"):  # Sequence[SessionView], Sequence[NoteView]
        view = getattr(rows, base.removeprefix("Sequence[").removesuffix("]"))
        return st.lists(st.deferred(lambda: _object(view)), max_size=3)
    if base.endswith("View"):
        return st.deferred(lambda: _object(getattr(rows, base)))
    return {
        "str": st.text(max_size=12),
        "int": st.integers(min_value=-(2**40), max_value=2**40),
        "float": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-1000, 1000)),
        "bool": st.booleans(),
        "datetime": _TIMES,
        "Mapping[str, int]": st.dictionaries(st.text(max_size=5), st.integers(-5, 5) | _ODD, max_size=3),
    }[base]


def _value(annotation: str) -> st.SearchStrategy[Any]:
    """A value of the field's wire type (or None where the field allows it)."""
    typed = _typed(annotation.removesuffix(" | None"))
    return st.one_of(st.none(), typed) if annotation.endswith(" | None") else typed


_MISSING = object()


def _object(view: type[rows._View]) -> st.SearchStrategy[Any]:
    """A JSON object for ``view``: each field missing or of its type, then up to two fields spoilt with
    anything at all, plus keys no model knows (most objects are plain, so the comparison happens)."""
    names = list(view.__annotations__)
    fields = {
        name: st.one_of(st.just(_MISSING), _value(str(kind))) if name in view.__dict__ else _value(str(kind))
        for name, kind in view.__annotations__.items()
    }
    spoilt = st.dictionaries(st.sampled_from(names), _ODD, max_size=2)

    def build(values: dict[str, Any], odd: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
        return {**extra, **{k: v for k, v in {**values, **odd}.items() if v is not _MISSING}}

    return st.builds(
        build,
        st.fixed_dictionaries(fields),
        st.one_of(st.just({}), spoilt),
        st.dictionaries(st.sampled_from(["zzz", "extra"]), _ODD),
    )


def _agree(view: type[rows._View], model: type[BaseModel], data: Any) -> bool:
    """Whether the view took ``data``; when it did, the model must take it too and dump the same."""
    try:
        read = view.from_json(data)
    except rows.NotPlain:
        return False  # the full path decides: anything is allowed here
    try:
        expected = model.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        raise AssertionError(f"the view accepted what the model refuses: {exc}") from None
    assert read.model_dump(mode="json") == expected.model_dump(mode="json")
    return True


@pytest.mark.parametrize(("view", "model"), PAIRS, ids=[v.__name__ for v, _ in PAIRS])
def test_a_view_reads_and_dumps_generated_answers_like_its_model(
    view: type[rows._View], model: type[BaseModel]
) -> None:
    taken: list[bool] = []

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_object(view))
    def check(data: dict[str, Any]) -> None:
        taken.append(_agree(view, model, data))

    check()
    # Most generated answers are plain, so the comparison happened, not only refusals.
    assert sum(taken) >= len(taken) // 4, (sum(taken), len(taken))


def test_plain_answers_are_read() -> None:
    """What our server sends is plain: the fast path takes it (it would be no use otherwise)."""
    session = {
        "id": "b3c8edfc-3956-4315-a9ce-1d81a6c393ad",
        "started_at": "2026-12-01T21:39:00.879512Z",
        "last_activity_at": "2026-12-01T21:39:01Z",
        "ended_at": None,
        "token_usage": {"prompt_tokens": 0, "cache_hit_ratio": None},
        "estimated_cost": 0.0,
        "legal_hold": False,
        "artifact_counts": {"diff": 2},
        "agent_kind": "claude_code",
    }
    page = rows.SessionListView.from_json({"total": 1, "has_more": False, "items": [session]})
    assert page.model_dump(mode="json") == models.SessionList.model_validate(
        {"total": 1, "has_more": False, "items": [session]}
    ).model_dump(mode="json")
    [view] = page.items
    model = models.Session.model_validate(session)
    assert session_title(view) == session_title(model)
    assert session_state(view) == session_state(model)
    assert [r.id for r in sort_sessions([view])] == [model.id]


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"id": 5},
        {"id": "x", "tool_call_count": "3"},
        {"id": "x", "tool_call_count": 3.0},
        {"id": "x", "legal_hold": None},
        {"id": "x", "started_at": 1767225600},
        {"id": "x", "artifact_counts": {"diff": True}},
    ],
)
def test_what_is_not_plain_is_refused(data: Any) -> None:
    with pytest.raises(rows.NotPlain):
        rows.SessionView.from_json(data)


def test_a_view_is_read_only() -> None:
    view = rows.NoteView.from_json({"note_id": "n", "state": "pending", "text": "t"})
    with pytest.raises(AttributeError):
        view.state = "cancelled"
