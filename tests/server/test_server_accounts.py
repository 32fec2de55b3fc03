"""Tokens and accounts: every route but health needs a bearer token; another account's ids are 404."""

from __future__ import annotations

import json
import os
import stat

import httpx
import pytest
from srv_helpers import auth, capture, read_stream

from client import paths


async def test_no_token_and_bad_token_are_401_with_www_authenticate(live_server) -> None:
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        for path in ("/api/v1/runtime-sessions", "/api/v1/operator-notes", "/api/v1/approval-requests"):
            missing = await http.get(path)
            assert (missing.status_code, missing.json()) == (401, capture("019")["body"])
            assert missing.headers["www-authenticate"] == "Bearer"
        bad = await http.get("/api/v1/runtime-sessions", headers=auth("plo_not-a-real-token"))
        assert (bad.status_code, bad.json()) == (401, capture("020")["body"])
        assert (await http.get("/api/v1/health")).status_code == 200


async def test_harness_routes_want_a_runtime_token(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="tokens")
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        none = await http.post("/api/v1/agents/notes/pending", json={})
        assert (none.status_code, none.json()) == (401, capture("022")["body"])
        operator = await http.post("/api/v1/agents/notes/pending", json={}, headers=auth(live_server.token))
        assert (operator.status_code, operator.json()) == (401, capture("068")["body"])
        bogus = await http.post("/api/v1/agents/notes/pending", json={}, headers=auth("plr_bogus"))
        assert (bogus.status_code, bogus.json()) == (401, capture("067")["body"])
        runtime_on_operator_route = await http.get("/api/v1/runtime-sessions", headers=auth(agent.token))
        assert runtime_on_operator_route.status_code == 401


async def test_another_accounts_ids_are_404_everywhere(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="private")
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as mine:
        note = (
            await mine.post(
                "/api/v1/operator-notes", json={"text": "mine", "runtime_session_id": agent.session_id}
            )
        ).json()
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.other_token)) as theirs:
        assert (await theirs.get("/api/v1/runtime-sessions")).json()["items"] == []
        sid = agent.session_id
        for response in (
            await theirs.get(f"/api/v1/runtime-sessions/{sid}"),
            await theirs.get(f"/api/v1/runtime-sessions/{sid}/activity"),
            await theirs.patch(f"/api/v1/runtime-sessions/{sid}", json={"action": "end"}),
            await theirs.post("/api/v1/operator-notes", json={"text": "hi", "runtime_session_id": sid}),
            await theirs.get("/api/v1/operator-notes", params={"runtime_session_id": sid}),
        ):
            assert (response.status_code, response.json()) == (404, capture("023")["body"])
        foreign_note = await theirs.get(f"/api/v1/operator-notes/{note['note_id']}")
        assert (foreign_note.status_code, foreign_note.json()) == (404, capture("059")["body"])
        cancel = await theirs.post(f"/api/v1/operator-notes/{note['note_id']}/cancel")
        assert cancel.status_code == 404
    stream = await read_stream(live_server.url, live_server.other_token, agent.session_id, seconds=20)
    assert stream.status == 404
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as mine:
        still = (await mine.get(f"/api/v1/operator-notes/{note['note_id']}")).json()
        assert still["state"] == "pending"  # the other account's cancel changed nothing


def test_first_start_writes_url_and_token_for_the_client_owner_only(live_server) -> None:
    path = paths.local_server_file()
    data = json.loads(path.read_text())
    assert data == {"url": live_server.url, "token": live_server.token}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(live_server.db_path).st_mode) == 0o600


@pytest.mark.parametrize("prefix", ["plo_"])
def test_token_is_never_printed_in_full(prefix: str) -> None:
    from server.control import mask_token

    token = prefix + "x" * 40
    assert mask_token(token) == token[:8] + "…"
