"""Preloop's REST quirks, met through the real client against the fake Preloop (shapes as recorded)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC

import httpx
import pytest

from client.backends import connect
from client.backends.base import Backend, SessionFilter
from client.config import Settings
from client.errors import AuthError, NoMatchingId, RateLimited, UsageError, ValidationFailed
from client.ids import resolve_session
from server.embedded import EmbeddedServer
from tests.fake_preloop import MAIN_SESSION, RATE_SESSION, TOKEN, FakePreloop, running_fake_preloop


async def test_sessions_list_and_short_id_resolve(client: Backend) -> None:
    page = await client.list_sessions()
    assert [s.id for s in page.items] == [MAIN_SESSION, RATE_SESSION]
    assert page.items[0].agent_label == "demo-agent-main"
    assert await resolve_session(client, "f7303a36") == MAIN_SESSION
    assert await resolve_session(client, "D81BCE9C") == RATE_SESSION
    with pytest.raises(NoMatchingId):
        await resolve_session(client, "abcd1234")


async def test_datetimes_without_zone_are_utc(client: Backend) -> None:
    page = await client.list_sessions()
    started = page.items[0].started_at
    assert started is not None and started.tzinfo == UTC
    assert started.isoformat() == "2026-11-30T11:36:20.840531+00:00"


@pytest.fixture
async def null_total_client() -> AsyncIterator[tuple[FakePreloop, Backend]]:
    with running_fake_preloop(FakePreloop(null_total=True)) as (fake, url):
        async with await connect(Settings(url, TOKEN, server_kind="preloop")) as c:
            yield fake, c


async def test_total_may_be_null_so_paging_follows_has_more(
    null_total_client: tuple[FakePreloop, Backend],
) -> None:
    _, client = null_total_client
    first = await client.list_sessions(limit=1)
    assert (first.total, first.has_more, len(first.items)) == (None, True, 1)
    ids = [s.id async for s in client.iter_sessions(page_size=1)]
    assert ids == [MAIN_SESSION, RATE_SESSION]


async def test_a_non_uuid_session_id_is_refused_before_asking(
    client: Backend, fake: FakePreloop, base_url: str
) -> None:
    # What the server does with it (recorded): a 500, and the connection is dropped.
    async with httpx.AsyncClient(base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}) as raw:
        answer = await raw.get("/api/v1/runtime-sessions/not-a-uuid")
    assert answer.status_code == 500
    assert answer.headers["connection"] == "close"
    fake.requests.clear()
    with pytest.raises(UsageError):
        await client.get_session("not-a-uuid")
    with pytest.raises(UsageError):
        await client.session_activity("not-a-uuid")
    assert fake.requests == []


async def test_session_detail_counters_come_from_the_list_row(client: Backend, fake: FakePreloop) -> None:
    fake.tool_call("Grep")
    fake.request_approval()
    row = next(s for s in (await client.list_sessions()).items if s.id == MAIN_SESSION)
    assert (row.tool_call_count, row.pending_approval_count, row.cwd) == (3, 1, "/home/dev/demo")
    detail = await client.get_session(MAIN_SESSION)
    assert detail.cwd == "/home/dev/demo"
    assert (detail.tool_call_count, detail.pending_approval_count) == (3, 1)


async def test_cancel_answers_200_with_the_note_as_it_is(client: Backend, fake: FakePreloop) -> None:
    delivered = await client.send_note("Please run the unit tests.", session_id=MAIN_SESSION)
    fake.deliver_notes()
    pending = await client.send_note("Stop touching the migrations.", session_id=MAIN_SESSION)
    assert (await client.withdraw_note(delivered.note_id)).state == "delivered"  # too late: unchanged
    assert (await client.withdraw_note(pending.note_id)).state == "cancelled"
    assert (await client.withdraw_note(pending.note_id)).state == "cancelled"  # again: still 200


async def test_approvals_are_a_bare_array_with_a_total_header_paged_by_skip(
    client: Backend, fake: FakePreloop
) -> None:
    ids = {fake.request_approval(f"echo {n}") for n in range(3)}
    first = await client.list_approvals(session_id=MAIN_SESSION, limit=2)
    second = await client.list_approvals(session_id=MAIN_SESSION, limit=2, skip=2)
    assert (len(first.items), first.total) == (2, 3)
    assert (len(second.items), second.total) == (1, 3)
    assert {a.id for a in first.items + second.items} == ids


async def test_notes_list_is_under_notes(client: Backend) -> None:
    sent = await client.send_note("Hello.", session_id=MAIN_SESSION)
    listed = await client.list_notes(session_id=MAIN_SESSION)
    assert [n.note_id for n in listed.notes] == [sent.note_id]
    assert listed.total == 1


async def test_a_422_lists_its_field_errors(client: Backend) -> None:
    with pytest.raises(ValidationFailed) as too_short:
        await client.send_note("hi", session_id=MAIN_SESSION, expires_in_seconds=5)
    assert [f.field for f in too_short.value.fields] == ["expires_in_seconds"]
    assert "greater than or equal to 60" in too_short.value.fields[0].message
    with pytest.raises(ValidationFailed) as bad_status:
        await client.list_sessions(SessionFilter(status="running"))  # type: ignore[arg-type]
    assert [f.field for f in bad_status.value.fields] == ["status"]


async def test_a_bad_token_is_an_auth_error(base_url: str) -> None:
    async with await connect(Settings(base_url, "wrong-token", server_kind="preloop")) as bad:
        with pytest.raises(AuthError):
            await bad.list_sessions()


async def test_the_21st_note_in_an_hour_is_rate_limited_with_the_servers_sentence(client: Backend) -> None:
    for n in range(20):
        await client.send_note(f"rate probe {n + 1}", session_id=RATE_SESSION)
    with pytest.raises(RateLimited) as limited:
        await client.send_note("rate probe 21", session_id=RATE_SESSION)
    assert "20 notes per hour" in str(limited.value)


async def test_server_kind_is_detected_from_health(client: Backend, base_url: str, tmp_path: object) -> None:
    async with await connect(Settings(base_url, TOKEN)) as unknown:
        assert unknown.server_kind == "preloop"
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    with EmbeddedServer(db_path=tmp_path / "local.db", write_local_file=False) as local:
        async with await connect(Settings(local.url, local.token)) as ours:
            assert ours.server_kind == "local"
