"""Error sentences people act on, and id checks that run before any request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client.errors import (
    AmbiguousId,
    ApiError,
    AuthError,
    BadRequest,
    ClientError,
    NoMatchingId,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServerError,
    UsageError,
    ValidationFailed,
    error_for_status,
)
from client.ids import check_prefix, is_uuid, match_id, require_note_id, require_uuid, short_id

CAPTURES = Path("/work/shared/preloop-0.17.1/captures")


def capture(name: str) -> dict[str, object]:
    path = next(CAPTURES.glob(f"{name}*.json"), None)
    if path is None:
        pytest.skip("Preloop captures are not available here")
    data: dict[str, object] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("020_err_401", AuthError, "run `preloop login`"),
        ("023_err_404", NotFound, "Runtime session not found"),
        ("076_approval_approve_again_400", BadRequest, "Request already approved"),
        ("107_rate_note_21", RateLimited, "Rate limit reached: 20 notes per hour"),
        ("025_err_runtime_session_not_uuid", ServerError, "try again"),
        ("035_notes_list_no_target_400", BadRequest, "Name an agent_id"),
    ],
)
def test_recorded_preloop_errors_map_to_the_tree(name: str, kind: type[ApiError], words: str) -> None:
    cap = capture(name)
    status = cap["status_code"]
    assert isinstance(status, int)
    err = error_for_status(status, cap["body"], what="session 1234abcd")
    assert type(err) is kind
    assert err.status == status
    assert words in str(err)
    assert isinstance(err, ClientError)


def test_422_lists_each_field_with_the_servers_message() -> None:
    err = error_for_status(422, capture("063_err_422_note_ttl_too_short")["body"])
    assert isinstance(err, ValidationFailed)
    assert [(f.field, f.message) for f in err.fields] == [
        ("expires_in_seconds", "Input should be greater than or equal to 60")
    ]
    assert "expires_in_seconds: Input should be greater than or equal to 60" in err.hint


def test_422_model_level_error_drops_the_pydantic_prefix() -> None:
    err = error_for_status(422, capture("061_err_422_note_two_targets")["body"])
    assert isinstance(err, ValidationFailed)
    assert err.fields[0].message.startswith("Name exactly one of agent_id")


def test_401_without_a_token_says_how_to_give_one() -> None:
    err = error_for_status(401, {"detail": "Not authenticated"}, token_sent=False)
    assert "PRELOOP_TOKEN" in err.hint


def test_403_and_429_retry_after() -> None:
    assert isinstance(error_for_status(403, {"detail": "Forbidden"}), PermissionDenied)
    err = error_for_status(429, {"detail": "Slow down."}, retry_after="12")
    assert isinstance(err, RateLimited)
    assert err.retry_after == 12.0
    assert err.hint == "Slow down. (retry after 12 s)"


def test_token_and_terminal_escapes_never_reach_the_message() -> None:
    token = "s3cr3t-token-value"
    err = error_for_status(400, {"detail": f"bad token {token} \x1b]0;pwned\x07here"}, secret=token)
    assert token not in str(err)
    assert "\x1b" not in str(err)
    assert "***" in str(err)


def test_non_json_error_body_still_reads() -> None:
    err = error_for_status(502, "<html>Bad Gateway</html>")
    assert isinstance(err, ServerError)
    assert "502" in err.hint


# ------------------------------------------------------------------------------------------------ ids


def test_uuid_checks() -> None:
    good = "F7303A36-18C9-406B-825F-6A43B492EC5E"
    assert is_uuid(good)
    assert require_uuid(good) == good.lower()
    for bad in ("not-a-uuid", "f7303a36", "f7303a3618c9406b825f6a43b492ec5e", good + "0", ""):
        assert not is_uuid(bad)
        with pytest.raises(UsageError, match="not a valid session id"):
            require_uuid(bad)


def test_note_ids_cannot_change_the_path() -> None:
    assert require_note_id("75f1acbb18754ed8") == "75f1acbb18754ed8"
    for bad in ("../sessions", "a/b", "a b", "", "x?y=1"):
        with pytest.raises(UsageError):
            require_note_id(bad)


def test_one_prefix_rule_and_matching() -> None:
    ids = ["abcd1234-0000-4000-8000-000000000001", "ABCD9999-0000-4000-8000-000000000002"]
    assert short_id(ids[0]) == "abcd1234"
    assert match_id(check_prefix(" ABCD1 "), ids) == ids[0]
    assert match_id("abcd9", ids) == ids[1].lower()  # a UUID comes back as servers write it
    with pytest.raises(AmbiguousId, match="matches 2 sessions"):
        match_id("abcd", ids)
    with pytest.raises(NoMatchingId, match="no session starts with 'ffff'"):
        match_id("ffff", ids)
    for bad in ("abc", "zzzz", "Needs", "ab cd", "01M"):
        with pytest.raises(UsageError, match="at least 4 of its first characters"):
            check_prefix(bad)


async def test_a_token_that_cannot_be_a_header_is_refused_without_echoing_it() -> None:
    from client.backends import connect
    from client.config import Settings

    for bad in ("abc def-SECRET", "tok\nSECRET", "tök-SECRET"):
        with pytest.raises(UsageError) as info:
            await connect(Settings("http://127.0.0.1:1", bad, server_kind="local"))
        assert "SECRET" not in str(info.value)
    async with await connect(
        Settings("http://127.0.0.1:1", "  padded-token\n", server_kind="local")
    ) as backend:
        assert "padded-token" not in repr(backend)
        from client.backends.local import LocalBackend

        assert isinstance(backend, LocalBackend)
        assert backend.conn.auth_headers() == {"Authorization": "Bearer padded-token"}


async def test_a_gateway_timeout_or_garbled_answer_to_a_note_is_outcome_unknown() -> None:
    import httpx

    from client.backends import connect
    from client.config import Settings
    from client.errors import NoteOutcomeUnknown, ServerError

    sent: list[bytes] = []
    answers = iter([httpx.Response(504), httpx.Response(201, text="{not json"), httpx.Response(503)])

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return next(answers)

    local = Settings("http://test", "t", server_kind="local")
    async with await connect(local, transport=httpx.MockTransport(handler)) as c:
        sid = "5e55e55e-0000-4000-8000-000000000001"
        with pytest.raises(NoteOutcomeUnknown, match="a proxy answered 504"):
            await c.send_note("hi", session_id=sid, correlation_id="c-1")
        with pytest.raises(NoteOutcomeUnknown) as info:
            await c.send_note("hi", session_id=sid)
        assert info.value.correlation_id and info.value.correlation_id != "c-1"
        with pytest.raises(ServerError):  # 503: the server said it did not take it
            await c.send_note("hi", session_id=sid)
    assert b'"correlation_id":"c-1"' in sent[0]
    assert len(sent) == 3  # never re-sent behind the caller's back


async def test_a_token_cut_by_the_length_limit_of_a_non_json_error_page_does_not_leak_its_start() -> None:
    import httpx

    from client.backends import connect
    from client.config import Settings

    token = "tok-" + "s3cr3t" * 6
    page = "x" * 270 + f" echoed {token} back"  # an HTML error page that quotes the request, past the cut

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text=page, headers={"content-type": "text/html"})

    local = Settings("http://test", token, server_kind="local")
    async with await connect(local, transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(ServerError) as info:
            await client.list_sessions()
    message = str(info.value)
    assert token[:8] not in message  # before the fix the page was cut at 300 first, then scrubbed
    assert token not in repr(info.value)


def test_only_canonical_uuids_pass_so_an_oddly_dashed_id_never_reaches_a_url() -> None:
    # uuid.UUID() reads all of these; a server (Preloop) may not, and the text would go into the path as typed
    for odd in (
        "0123456789abcdef0123456789abcdef----",
        "0123-4567-89ab-cdef-0123456789abcdef",
        "{01234567-89ab-cdef-0123-456789abcd}",
    ):
        assert not is_uuid(odd)
        with pytest.raises(UsageError):
            require_uuid(odd)
    assert require_uuid(" 01234567-89AB-cdef-0123-456789ABCDEF ") == "01234567-89ab-cdef-0123-456789abcdef"
