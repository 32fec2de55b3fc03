"""Every listing pages through one loop (``client.listing.pages``) and stops at the same places.

A server whose paging is broken is a fault the real local server cannot produce on demand, so these
tests put a transport in front of the backend that answers like one.
"""

from __future__ import annotations

from typing import Any

import httpx

from client.backends import connect
from client.config import Settings
from client.ids import resolve_session
from client.listing import LIST_MAX, all_approvals, session_notes
from tests.client.faults import SID


def _note(n: int) -> dict[str, Any]:
    return {"note_id": f"{n:016x}", "text": f"note {n}", "state": "pending", "runtime_session_id": SID}


def _session(n: int) -> dict[str, Any]:
    return {"id": f"{n:08x}-0000-4000-8000-000000000000", "status": "active"}


class Paging:
    """Records what each list request asked for; ``answer(path, params)`` gives the response."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[dict[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        self.asked.append(params)
        return self.answer(request.url.path, params)  # type: ignore[no-any-return]


async def test_a_server_that_ignores_the_offset_is_read_up_to_the_limit_not_for_ever() -> None:
    """The export read notes and approvals until a short page: a server that ignored ``offset`` (always
    the first full page) kept it reading for ever. Every listing now stops at LIST_MAX rows."""

    def answer(path: str, params: dict[str, str]) -> httpx.Response:
        limit = int(params["limit"])
        if path.endswith("/operator-notes"):
            return httpx.Response(200, json={"notes": [_note(n) for n in range(limit)], "total": None})
        return httpx.Response(200, json=[])

    paging = Paging(answer)
    settings = Settings("http://paging.test", "tok", server_kind="local")
    async with await connect(settings, transport=httpx.MockTransport(paging)) as backend:
        notes = await session_notes(backend, SID)
    assert len(notes) == LIST_MAX
    assert len(paging.asked) == LIST_MAX // 100


async def test_a_total_larger_than_a_short_page_reads_on_until_the_total_or_an_empty_page() -> None:
    """A server that caps a page below what was asked (30 of 100) but counts 70 approvals is read to the
    end; one whose count is more than it ever returns stops at its first empty page."""

    def answer(counted: int, held: int) -> Any:
        def reply(path: str, params: dict[str, str]) -> httpx.Response:
            skip, limit = int(params["skip"]), min(int(params["limit"]), 30)
            rows = [
                {"id": f"{n:08x}-0000-4000-8000-000000000001", "status": "pending"}
                for n in range(skip, min(skip + limit, held))
            ]
            return httpx.Response(200, json=rows, headers={"X-Total-Count": str(counted)})

        return reply

    settings = Settings("http://paging.test", "tok", server_kind="local")
    for counted, held, skips in ((70, 70, [0, 30, 60]), (500, 45, [0, 30, 45])):
        paging = Paging(answer(counted, held))
        async with await connect(settings, transport=httpx.MockTransport(paging)) as backend:
            approvals = await all_approvals(backend, status="pending")
        assert len(approvals) == held
        assert [int(p["skip"]) for p in paging.asked] == skips


async def test_sessions_follow_has_more_and_a_short_id_is_found_on_a_later_page() -> None:
    """Sessions page by ``has_more`` (the total may be null): a short id matches across pages."""
    everyone = [_session(n) for n in range(250)]

    def answer(path: str, params: dict[str, str]) -> httpx.Response:
        offset, limit = int(params["offset"]), int(params["limit"])
        rows = everyone[offset : offset + limit]
        more = offset + len(rows) < len(everyone)
        return httpx.Response(200, json={"items": rows, "total": None, "has_more": more})

    paging = Paging(answer)
    settings = Settings("http://paging.test", "tok", server_kind="local")
    async with await connect(settings, transport=httpx.MockTransport(paging)) as backend:
        assert await resolve_session(backend, "000000f9") == everyone[249]["id"]
    assert [int(p["offset"]) for p in paging.asked] == [0, 100, 200]


async def test_a_session_started_while_the_list_is_read_shifts_no_row_in_twice() -> None:
    """Offsets count from the newest row: a session started between two pages pushes the last row of
    the first page onto the second. Each session is listed once, and the reading goes on to the end."""
    everyone = [_session(n) for n in range(150)]
    started = _session(999)

    def answer(path: str, params: dict[str, str]) -> httpx.Response:
        offset, limit = int(params["offset"]), int(params["limit"])
        rows = everyone if offset == 0 else [started, *everyone]  # one started after the first page
        page = rows[offset : offset + limit]
        return httpx.Response(
            200, json={"items": page, "total": None, "has_more": offset + limit < len(rows)}
        )

    settings = Settings("http://paging.test", "tok", server_kind="local")
    async with await connect(settings, transport=httpx.MockTransport(Paging(answer))) as backend:
        ids = [s.id async for s in backend.iter_sessions(max_items=1000, page_size=100)]
    assert len(ids) == len(set(ids)) == 150
    assert ids == [s["id"] for s in everyone]
