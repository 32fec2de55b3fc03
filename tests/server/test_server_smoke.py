"""The fixture works end to end: a session minted over HTTP shows up in the list and on its stream."""

from __future__ import annotations

import httpx
from srv_helpers import auth, read_stream

from server.harness_client import HarnessClient


async def test_minted_session_is_listed_and_streams_its_first_event(
    live_server, harness: HarnessClient
) -> None:
    agent = await harness.start_session(agent_name="smoke", cwd="/tmp/smoke", title="Smoke test")
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        page = (await http.get("/api/v1/runtime-sessions", headers=auth(live_server.token))).json()
    assert [item["id"] for item in page["items"]] == [agent.session_id]
    assert page["items"][0]["cwd"] == "/tmp/smoke"
    stream = await read_stream(
        live_server.url, live_server.token, agent.session_id, stop=lambda s: bool(s.frames)
    )
    assert stream.frames[0].id == 1
    assert stream.frames[0].event == "session.started"
    assert stream.frames[0].data["session"]["title"] == "Smoke test"
