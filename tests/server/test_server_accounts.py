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
    assert data == {"url": live_server.url, "token": live_server.token, "started_by": "serve"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(live_server.db_path).st_mode) == 0o600


@pytest.mark.parametrize("prefix", ["plo_"])
def test_token_is_never_printed_in_full(prefix: str) -> None:
    from server.control import mask_token

    token = prefix + "x" * 40
    assert mask_token(token) == token[:8] + "…"


def _database_bytes(db_path) -> bytes:
    """Everything SQLite keeps of a database on disk: the file and, if present, its WAL and shm."""
    found = b""
    for suffix in ("", "-wal", "-shm"):
        part = db_path.with_name(db_path.name + suffix)
        if part.exists():
            found += part.read_bytes()
    return found


async def _accepted(url: str, token: str) -> bool:
    async with httpx.AsyncClient(base_url=url) as http:
        return (await http.get("/api/v1/runtime-sessions", headers=auth(token))).status_code == 200


async def test_the_database_file_holds_no_usable_operator_token(tmp_path) -> None:
    """A copied database grants nothing; the token is kept in clear only in a 0600 file beside it, so a
    restart hands out the same token (a client still attached carries on)."""
    import re
    import shutil

    from server.accounts import operator_token_file
    from server.embedded import EmbeddedServer

    db = tmp_path / "cp.sqlite3"
    server = EmbeddedServer(db, write_local_file=False)
    server.start()
    token = server.token
    try:
        async with server.plane.store.write() as tx:  # a few writes, as a used database has
            await tx.execute("INSERT INTO meta (key, value) VALUES ('filler', ?)", ("x" * 5000,))
        assert await _accepted(server.url, token)
    finally:
        server.stop()
    stored = _database_bytes(db)
    assert token.encode() not in stored
    assert re.findall(rb"plo_[A-Za-z0-9_-]{20,}", stored) == []
    kept = operator_token_file(db)
    assert kept.read_text().strip() == token
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600

    server.start()  # same database, same token file: the same token, still valid
    try:
        assert server.token == token and await _accepted(server.url, token)
    finally:
        server.stop()

    elsewhere = tmp_path / "copy" / "cp.sqlite3"
    elsewhere.parent.mkdir()
    shutil.copy(db, elsewhere)
    copy = EmbeddedServer(elsewhere, write_local_file=False)
    copy.start()
    try:  # the copy serves its data under a token of its own
        assert copy.token != token
        assert await _accepted(copy.url, copy.token)
    finally:
        copy.stop()


async def test_a_database_that_kept_the_token_in_clear_keeps_it_valid_and_erases_it(tmp_path) -> None:
    """Earlier versions stored the token in meta.bootstrap_token: the client holding it must still be let
    in after the upgrade, and no copy of it may stay in the file (or its WAL)."""
    import sqlite3

    from server.accounts import operator_token_file
    from server.embedded import EmbeddedServer

    db = tmp_path / "cp.sqlite3"
    server = EmbeddedServer(db, write_local_file=False)
    server.start()
    token = server.token
    server.stop()
    operator_token_file(db).unlink()
    with sqlite3.connect(db) as conn:  # the layout of a database written before
        conn.execute("DELETE FROM meta WHERE key = 'bootstrap_account'")
        conn.execute("INSERT INTO meta (key, value) VALUES ('bootstrap_token', ?)", (token,))
    conn.close()
    assert token.encode() in _database_bytes(db)

    server.start()
    try:
        assert server.token == token and await _accepted(server.url, token)
    finally:
        server.stop()
    assert token.encode() not in _database_bytes(db)
    assert operator_token_file(db).read_text().strip() == token
