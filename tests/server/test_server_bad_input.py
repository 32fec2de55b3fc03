"""The local server under bad input: every case here was a 500 (or silently accepted) before; each must be
a 4xx with a sentence that says what to change, and must store nothing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from srv_helpers import auth, read_stream

from server.harness import MAX_EVENT_BYTES
from server.harness_client import HarnessClient, HarnessSession
from server.http_input import MAX_BODY_BYTES

API = "/api/v1"
JSON = {"Content-Type": "application/json"}


@pytest.fixture
async def agent_session(harness: HarnessClient) -> HarnessSession:
    """A fresh agent session on the live server."""
    return await harness.start_session(agent_name="bad-input")


async def _events(url: str, token: str, session_id: str) -> list[dict[str, Any]]:
    """Every stored event of a session (the stream's replay), read until the first keepalive after it."""
    stream = await read_stream(url, token, session_id, stop=lambda s: bool(s.comments), seconds=10)
    return [{"seq": f.id, "type": f.event, **f.data} for f in stream.frames]


def _json_error(response: httpx.Response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail, list), detail
    return " ".join(str(item.get("ctx", {}).get("error", "")) + " " + str(item["msg"]) for item in detail)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_non_finite_numbers_in_any_body_are_a_clear_422_and_store_nothing(
    live_server: Any, harness: HarnessClient, constant: str
) -> None:
    agent = await harness.start_session(agent_name="nan")
    op = {**auth(live_server.token), **JSON}
    rt = {**auth(agent.token), **JSON}
    sid = agent.session_id
    cases = [
        ("POST", f"{API}/operator-notes", op, f'{{"text": {constant}, "runtime_session_id": "{sid}"}}'),
        (
            "POST",
            f"{API}/operator-notes",
            op,
            f'{{"text": "hi", "expires_in_seconds": {constant}, "runtime_session_id": "{sid}"}}',
        ),
        (
            "POST",
            f"{API}/agents/events",
            rt,
            f'{{"events": [{{"type": "model.delta", "text": "x", "iteration": 1, "score": {constant}}}]}}',
        ),
        ("POST", f"{API}/agents/permission-check", rt, f'{{"tool_name": {constant}}}'),
        (
            "POST",
            f"{API}/agents/permission-check",
            rt,
            f'{{"tool_name": "Read", "tool_input": {{"n": {constant}}}}}',
        ),
        ("PATCH", f"{API}/runtime-sessions/{sid}", op, f'{{"action": {constant}}}'),
    ]
    async with httpx.AsyncClient(base_url=live_server.url, timeout=30) as http:
        before = await _events(live_server.url, live_server.token, sid)
        for method, path, headers, body in cases:
            response = await http.request(method, path, headers=headers, content=body)
            assert response.status_code == 422, (path, body, response.text)
            says = "is too large for a JSON number" if constant == "1e400" else "is not a JSON number"
            assert f"{constant.lstrip('-')} {says}" in _json_error(response), response.text
        notes = await http.get(f"{API}/operator-notes", params={"runtime_session_id": sid}, headers=op)
        approvals = await http.get(f"{API}/approval-requests", headers=op)
        session = await http.get(f"{API}/runtime-sessions/{sid}", headers=op)
    assert notes.json()["total"] == 0
    assert approvals.json() == []
    assert session.json()["session"]["ended_at"] is None
    assert await _events(live_server.url, live_server.token, sid) == before


async def test_a_lone_surrogate_is_invalid_json_not_a_database_error(
    live_server: Any, harness: HarnessClient
) -> None:
    agent = await harness.start_session(agent_name="surrogate")
    body = f'{{"text": "half a pair \\ud83d here", "runtime_session_id": "{agent.session_id}"}}'
    async with httpx.AsyncClient(base_url=live_server.url, timeout=30) as http:
        bad = await http.post(
            f"{API}/operator-notes", headers={**auth(live_server.token), **JSON}, content=body
        )
        whole = await http.post(
            f"{API}/operator-notes",
            headers={**auth(live_server.token), **JSON},
            content=body.replace("\\ud83d", "\\ud83d\\ude00"),  # a complete pair is an emoji, and fine
        )
    assert bad.status_code == 422, bad.text
    assert "lone surrogate \\ud83d" in _json_error(bad)
    assert whole.status_code == 201, whole.text
    assert whole.json()["text"] == "half a pair \U0001f600 here"


async def test_a_key_named_twice_in_any_body_is_a_422_and_stores_nothing(
    live_server: Any, harness: HarnessClient
) -> None:
    """Last-wins would let a value that was checked (or logged) upstream differ from the one stored."""
    agent = await harness.start_session(agent_name="twice")
    op = {**auth(live_server.token), **JSON}
    rt = {**auth(agent.token), **JSON}
    sid = agent.session_id
    cases = [
        (f"{API}/operator-notes", op, f'{{"text":"a\\u0000b","text":"ok","runtime_session_id":"{sid}"}}'),
        (f"{API}/auth/runtime-sessions/token", op, '{"title": "one", "title": "two"}'),
        (
            f"{API}/agents/events",
            rt,
            '{"events": [{"type": "model.delta", "text": "x", "iteration": 1, "iteration": 2}]}',
        ),
        (
            f"{API}/agents/permission-check",
            rt,
            '{"tool_name": "Bash", "tool_input": {"command": "ls", "command": "rm -rf /"}}',
        ),
        (f"{API}/agents/session-end", rt, '{"reason": "a", "reason": "b"}'),
    ]
    async with httpx.AsyncClient(base_url=live_server.url, timeout=30) as http:
        before = await _events(live_server.url, live_server.token, sid)
        sessions_before = (await http.get(f"{API}/runtime-sessions", headers=op)).json()["total"]
        for path, headers, body in cases:
            response = await http.post(path, headers=headers, content=body)
            assert response.status_code == 422, (path, body, response.text)
            assert "appears twice in one object" in _json_error(response), response.text
        patch = await http.patch(
            f"{API}/runtime-sessions/{sid}", headers=op, content='{"action": "end", "action": "end"}'
        )
        assert patch.status_code == 422, patch.text
        notes = await http.get(f"{API}/operator-notes", params={"runtime_session_id": sid}, headers=op)
        approvals = await http.get(f"{API}/approval-requests", headers=op)
        session = await http.get(f"{API}/runtime-sessions/{sid}", headers=op)
        sessions_after = (await http.get(f"{API}/runtime-sessions", headers=op)).json()["total"]
        after = await _events(live_server.url, live_server.token, sid)
        # the same keys once each are accepted: only the repetition was refused
        once = await http.post(
            f"{API}/operator-notes", headers=op, content=f'{{"text":"ok","runtime_session_id":"{sid}"}}'
        )
    assert notes.json()["total"] == 0
    assert approvals.json() == []
    assert session.json()["session"]["ended_at"] is None
    assert sessions_after == sessions_before
    assert after == before
    assert once.status_code == 201, once.text


@pytest.mark.parametrize(
    ("content_type", "body", "says"),
    [
        ("text/plain", b"\xff\xfe not utf-8", "Input should be a valid dictionary"),
        ("application/x-www-form-urlencoded", b"text=\xff", "Input should be a valid dictionary"),
        ("application/json", b"\xff\xfe", "the body is not UTF-8 text"),
        ("application/json", b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "more than 64 levels"),
        ("application/json", b'{"text": ' + b"[" * 600 + b"]" * 600 + b"}", "more than 64 levels"),
    ],
)
async def test_a_body_that_is_not_json_text_is_a_422_that_can_be_sent(
    live_server: Any, content_type: str, body: bytes, says: str
) -> None:
    """The 422 echoes what it refused; undecodable bytes must not make the refusal itself fail."""
    async with httpx.AsyncClient(base_url=live_server.url, timeout=30) as http:
        response = await http.post(
            f"{API}/operator-notes",
            content=body,
            headers={**auth(live_server.token), "Content-Type": content_type},
        )
    assert response.status_code == 422, response.text
    assert says in _json_error(response)


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/runtime-sessions", "offset"),
        ("/operator-notes", "offset"),
        ("/approval-requests", "skip"),
    ],
)
async def test_offsets_beyond_a_64_bit_integer_are_a_422(
    live_server: Any, harness: HarnessClient, path: str, param: str
) -> None:
    agent = await harness.start_session(agent_name="offsets")
    params: dict[str, Any] = {param: 2**63}
    if path == "/operator-notes":
        params["runtime_session_id"] = agent.session_id
    async with httpx.AsyncClient(base_url=live_server.url, timeout=30) as http:
        too_far = await http.get(f"{API}{path}", params=params, headers=auth(live_server.token))
        largest = await http.get(
            f"{API}{path}", params={**params, param: 2**63 - 1}, headers=auth(live_server.token)
        )
    assert too_far.status_code == 422, too_far.text
    assert "less than or equal to 9223372036854775807" in too_far.text
    assert largest.status_code == 200, largest.text  # the largest offset is just an empty page


async def test_a_turn_index_beyond_a_64_bit_integer_is_a_422(agent_session: HarnessSession) -> None:
    response = await agent_session._http.post(
        f"{API}/agents/notes/pending", json={"turn_index": 10**30}, headers=auth(agent_session.token)
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["body", "turn_index"]


@pytest.mark.parametrize("start", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
async def test_a_start_date_outside_utc_range_is_a_422(live_server: Any, start: str) -> None:
    async with httpx.AsyncClient(base_url=live_server.url, timeout=30) as http:
        response = await http.get(
            f"{API}/runtime-sessions", params={"start_date": start}, headers=auth(live_server.token)
        )
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["query", "start_date"]
    assert "outside the range a UTC timestamp can hold" in response.json()["detail"][0]["msg"]


@pytest.mark.parametrize(
    ("text", "says"),
    [("   \n\t ", "the note is empty"), ("stop\x00now", "NUL character")],
)
async def test_the_server_refuses_notes_the_cli_refuses(
    live_server: Any, harness: HarnessClient, text: str, says: str
) -> None:
    agent = await harness.start_session(agent_name="notes")
    async with httpx.AsyncClient(base_url=live_server.url, timeout=30) as http:
        response = await http.post(
            f"{API}/operator-notes",
            json={"text": text, "runtime_session_id": agent.session_id},
            headers=auth(live_server.token),
        )
        listed = await http.get(
            f"{API}/operator-notes",
            params={"runtime_session_id": agent.session_id},
            headers=auth(live_server.token),
        )
    assert response.status_code == 422, response.text
    assert says in response.json()["detail"][0]["msg"]
    assert listed.json()["total"] == 0


# -- event size, body size, credentials before body ------------------------------------------------


async def test_an_oversized_event_is_refused_and_nothing_of_its_batch_is_streamed(
    live_server: Any, agent_session: HarnessSession
) -> None:
    before = await _events(live_server.url, live_server.token, agent_session.session_id)
    big = {"type": "model.delta", "iteration": 1, "text": "x" * MAX_EVENT_BYTES}
    small = {"type": "model.delta", "iteration": 1, "text": "fine"}
    response = await agent_session._http.post(
        f"{API}/agents/events", json={"events": [small, big]}, headers=auth(agent_session.token)
    )
    assert response.status_code == 413, response.text
    assert response.json()["detail"].startswith("events[1] (model.delta) is ")
    assert "split long text into several events" in response.json()["detail"]
    assert await _events(live_server.url, live_server.token, agent_session.session_id) == before


async def test_a_10_mb_delta_is_refused_before_it_is_read(
    live_server: Any, agent_session: HarnessSession
) -> None:
    before = await _events(live_server.url, live_server.token, agent_session.session_id)
    body = json.dumps({"events": [{"type": "model.delta", "iteration": 1, "text": "x" * 10_000_000}]})
    async with httpx.AsyncClient(base_url=live_server.url, timeout=60) as http:
        response = await http.post(
            f"{API}/agents/events", content=body, headers={**auth(agent_session.token), **JSON}
        )
    assert response.status_code == 413, response.text
    assert response.json()["detail"] == (
        f"Request body too large: at most {MAX_BODY_BYTES} bytes (4 MiB) are accepted"
    )
    assert await _events(live_server.url, live_server.token, agent_session.session_id) == before


async def test_a_chunked_body_without_length_is_cut_off_at_the_cap(
    live_server: Any, agent_session: HarnessSession
) -> None:
    chunk = b"x" * 65536

    async def stream() -> Any:
        yield b'{"events": [{"type": "model.delta", "iteration": 1, "text": "'
        for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
            yield chunk
        yield b'"}]}'

    async with httpx.AsyncClient(base_url=live_server.url, timeout=60) as http:
        response = await http.post(
            f"{API}/agents/events", content=stream(), headers={**auth(agent_session.token), **JSON}
        )
    assert response.status_code == 413, response.text
    assert "Request body too large" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "token", "detail"),
    [
        ("/agents/events", None, "Runtime bearer token required"),
        ("/agents/events", "plr_not-a-token", "Invalid API key"),
        ("/operator-notes", None, "Not authenticated"),
        ("/operator-notes", "plo_not-a-token", "Invalid authentication credentials"),
    ],
)
async def test_credentials_are_checked_before_a_large_body_is_read(
    live_server: Any, path: str, token: str | None, detail: str
) -> None:
    """A client without a valid token that sends its body anyway gets the route's own 401 (the body is
    dropped unparsed, so the answer can be read)."""
    sent = 0
    chunk = b"x" * 65536

    async def stream() -> Any:
        nonlocal sent
        yield b'{"text": "'
        for _ in range(40):  # 2.5 MiB, under the size cap: only the token can stop it early
            sent += len(chunk)
            yield chunk
        yield b'"}'

    headers = {**JSON, **(auth(token) if token else {})}
    async with httpx.AsyncClient(base_url=live_server.url, timeout=60) as http:
        response = await http.post(f"{API}{path}", content=stream(), headers=headers)
    assert response.status_code == 401, response.text
    assert response.json() == {"detail": detail}
    assert response.headers["www-authenticate"] == "Bearer"


async def _head_before_body(url: str, request_head: str) -> bytes:
    """Send only a request's head (it announces a body and waits for 100 Continue); the answer's head."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request_head.encode())
        await writer.drain()
        return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    finally:
        writer.close()


@pytest.mark.parametrize("token", [None, "plr_not-a-token"])
async def test_a_bad_token_is_refused_before_the_client_sends_its_body(
    live_server: Any, token: str | None
) -> None:
    """curl and most HTTP libraries send ``Expect: 100-continue`` with a large body and wait: the 401 must
    come instead of the ``100 Continue``, so not one byte of the 10 MB is sent or read."""
    head = await _head_before_body(
        live_server.url,
        "POST /api/v1/agents/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 10000000\r\nExpect: 100-continue\r\n"
        + (f"Authorization: Bearer {token}\r\n" if token else "")
        + "\r\n",
    )
    assert head.startswith(b"HTTP/1.1 401 "), head


async def test_a_too_large_body_is_refused_before_the_client_sends_it(
    live_server: Any, agent_session: HarnessSession
) -> None:
    head = await _head_before_body(
        live_server.url,
        "POST /api/v1/agents/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: 10000000\r\nExpect: 100-continue\r\nAuthorization: Bearer {agent_session.token}"
        "\r\n\r\n",
    )
    assert head.startswith(b"HTTP/1.1 413 "), head


# -- idempotent event batches ----------------------------------------------------------------------


async def test_a_retried_event_batch_is_stored_once_and_gets_the_first_answer(
    live_server: Any, agent_session: HarnessSession
) -> None:
    batch = {
        "batch_id": "batch-1",
        "events": [
            {"type": "model.delta", "iteration": 1, "text": "Reading the test."},
            {"type": "model.delta", "iteration": 1, "text": " Then the fix."},
        ],
    }
    post = agent_session._http.post
    first = await post(f"{API}/agents/events", json=batch, headers=auth(agent_session.token))
    again = await post(f"{API}/agents/events", json=batch, headers=auth(agent_session.token))
    other = await post(
        f"{API}/agents/events", json={**batch, "batch_id": "batch-2"}, headers=auth(agent_session.token)
    )
    assert first.status_code == again.status_code == other.status_code == 200
    assert again.json() == {**first.json(), "replayed": True}
    assert first.json()["replayed"] is False
    assert other.json()["first_seq"] == first.json()["last_seq"] + 1
    deltas = [
        e["text"]
        for e in await _events(live_server.url, live_server.token, agent_session.session_id)
        if e["type"] == "model.delta"
    ]
    assert deltas == ["Reading the test.", " Then the fix."] * 2  # batch-1 once, batch-2 once


async def test_a_batch_id_is_per_session_and_a_retry_after_the_end_is_not_a_409(
    live_server: Any, harness: HarnessClient
) -> None:
    one = await harness.start_session(agent_name="one")
    two = await harness.start_session(agent_name="two")
    batch = {"batch_id": "same", "events": [{"type": "model.delta", "iteration": 1, "text": "hi"}]}
    a = await one._http.post(f"{API}/agents/events", json=batch, headers=auth(one.token))
    b = await two._http.post(f"{API}/agents/events", json=batch, headers=auth(two.token))
    assert a.json()["replayed"] is False
    assert b.json()["replayed"] is False  # another session's key is another key
    await one.end()
    retry = await one._http.post(f"{API}/agents/events", json=batch, headers=auth(one.token))
    assert retry.status_code == 200, retry.text
    assert retry.json() == {**a.json(), "replayed": True}


class _LoseFirstAnswer(httpx.AsyncBaseTransport):
    """Delivers every request to the real server, but drops the answer to the first event batch, as a
    connection that breaks after the server committed would."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.lost = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.url.path.endswith("/agents/events") and self.lost == 0:
            await response.aread()
            self.lost += 1
            raise httpx.ReadError("connection reset after the server answered", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_the_harness_client_resends_a_batch_whose_answer_was_lost_and_it_is_stored_once(
    live_server: Any,
) -> None:
    transport = _LoseFirstAnswer()
    async with HarnessClient(live_server.url, live_server.token, transport=transport) as harness:
        agent = await harness.start_session(agent_name="flaky-link")
        accepted = await agent.delta("only once", iteration=1)
    assert transport.lost == 1
    assert accepted.replayed is True  # the answer came from the retry
    deltas = [
        e["text"]
        for e in await _events(live_server.url, live_server.token, agent.session_id)
        if e["type"] == "model.delta"
    ]
    assert deltas == ["only once"]
