"""Restart keeps everything, seqs continue (never reused), and the schema has a version and upgrade path."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest
from srv_helpers import auth, read_stream, read_until

from server.embedded import EmbeddedServer
from server.harness_client import HarnessClient
from server.store import SCHEMA_VERSION, SchemaTooNewError, Store


async def test_restart_keeps_sessions_events_notes_and_approvals(live_server, harness) -> None:
    agent = await harness.start_session(agent_name="survivor", title="Before restart")
    await agent.run_started("persist me")
    await agent.delta("hello", iteration=1)
    verdict = await agent.permission_check("Bash", {"command": "true"}, timeout_seconds=0.3)
    async with httpx.AsyncClient(base_url=live_server.url, headers=auth(live_server.token)) as http:
        note = (
            await http.post(
                "/api/v1/operator-notes", json={"text": "kept", "runtime_session_id": agent.session_id}
            )
        ).json()
    before = await read_until(live_server, agent.session_id, "note.created")
    url, token = live_server.url, live_server.token

    live_server.stop()
    live_server.start()
    assert (live_server.url, live_server.token) == (url, token)  # same port, same bootstrap token

    async with httpx.AsyncClient(base_url=url, headers=auth(token)) as http:
        detail = (await http.get(f"/api/v1/runtime-sessions/{agent.session_id}")).json()["session"]
        assert detail["title"] == "Before restart"
        assert (await http.get(f"/api/v1/operator-notes/{note['note_id']}")).json()["state"] == "pending"
        assert (await http.get(f"/api/v1/approval-requests/{verdict.request_id}")).json()[
            "status"
        ] == "expired"
    # the old runtime token still works, and the next event gets the next seq (none reused)
    await agent.delta(" again", iteration=1)
    after = await read_stream(
        url, token, agent.session_id, stop=lambda s: len(s.frames) >= len(before.frames) + 1
    )
    assert after.seqs == list(range(1, len(before.frames) + 2))
    assert after.frames[: len(before.frames)] == before.frames


async def test_a_new_file_gets_the_current_schema_version_in_wal_mode(tmp_path: Path) -> None:
    store = Store(tmp_path / "cp.sqlite3")
    await store.open()
    try:
        assert await store.schema_version() == SCHEMA_VERSION
        mode = await store.fetchone("PRAGMA journal_mode")
        assert mode is not None and mode[0] == "wal"
    finally:
        await store.close()


async def test_a_file_from_a_newer_version_is_refused_not_guessed_at(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 1,))
    store = Store(path)
    with pytest.raises(SchemaTooNewError):
        await store.open()
    await store.close()


async def test_embedded_server_restarts_on_the_same_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRELOOP_STATE_DIR", str(tmp_path))
    server = EmbeddedServer(tmp_path / "db.sqlite3", keepalive_seconds=0.5)
    server.start()
    try:
        port = server.port
        async with HarnessClient(server.url, server.token) as harness:
            await harness.start_session(agent_name="one")
        server.stop()
        server.start()
        assert server.port == port
        async with httpx.AsyncClient(base_url=server.url, headers=auth(server.token)) as http:
            assert (await http.get("/api/v1/runtime-sessions")).json()["total"] == 1
    finally:
        server.stop()


async def test_an_older_file_is_upgraded_step_by_step_keeping_its_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import server.store as store_module

    path = tmp_path / "old.sqlite3"
    store = Store(path)
    await store.open()
    async with store.write() as tx:
        await tx.execute("INSERT INTO meta (key, value) VALUES ('kept', 'yes')")
    await store.close()

    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(
        store_module.MIGRATIONS, SCHEMA_VERSION + 1, "ALTER TABLE sessions ADD COLUMN colour TEXT"
    )
    upgraded = Store(path)
    await upgraded.open()
    try:
        assert await upgraded.schema_version() == SCHEMA_VERSION + 1
        kept = await upgraded.fetchone("SELECT value FROM meta WHERE key = 'kept'")
        assert kept is not None and kept[0] == "yes"
        columns = [row[1] for row in await upgraded.fetchall("PRAGMA table_info(sessions)")]
        assert "colour" in columns
    finally:
        await upgraded.close()


def test_embedded_server_reports_why_it_could_not_start(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION + 5,))
    server = EmbeddedServer(path)
    with pytest.raises(SchemaTooNewError, match="schema version"):
        server.start()
    assert not server.running
