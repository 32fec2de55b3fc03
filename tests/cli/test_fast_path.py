"""The fast path of ``sessions list`` / ``notes list`` (``--json``, ``-o id``; ``client.quick``) against the
real local server over loopback: the same bytes as the full path, and on any error the full path's words.

Each case runs twice in-process: as a user gets it (the fast path first), and with ``PRELOOP_FAST_PATH=0``
(the full path only). Counters on both paths make sure each run took the path it was meant to.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from cli.commands import common
from cli.main import FAST_PATH_ENV, main
from client import quick
from client.config import save_profile
from server.harness_client import HarnessSession
from tests.cli.helpers import with_sessions


class Paths:
    """Counts the fast path's requests and the full path's connections."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fast = 0
        self.full = 0
        get, connect = quick.QuickClient.get, common.connect

        def counting_get(client: quick.QuickClient, path: str, params: dict[str, Any]) -> Any:
            self.fast += 1
            return get(client, path, params)

        def counting_connect(args: Any) -> Any:
            self.full += 1
            return connect(args)

        monkeypatch.setattr(quick.QuickClient, "get", counting_get)
        monkeypatch.setattr(common, "connect", counting_connect)
        for module in ("sessions", "notes"):  # they imported connect by name
            monkeypatch.setattr(f"cli.commands.{module}.connect", counting_connect)

    def reset(self) -> None:
        self.fast = self.full = 0


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Paths:
    return Paths(monkeypatch)


Outcome = tuple[int, str, str]


def _both(
    argv: list[str], paths: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Outcome, Outcome, bool]:
    """The fast-path run and the full-path-only run of one command (exit code, stdout, stderr each), and
    whether the first fell back to the full path."""
    paths.reset()
    code = main(argv)
    out = capsys.readouterr()
    fast: Outcome = (code, out.out, out.err)
    assert paths.fast >= 1, "the fast path was not tried"
    fell_back = paths.full == 1
    paths.reset()
    with monkeypatch.context() as env:
        env.setenv(FAST_PATH_ENV, "0")
        code = main(argv)
    out = capsys.readouterr()
    assert paths.fast == 0 and paths.full == 1
    return fast, (code, out.out, out.err), fell_back


@pytest.fixture
def data(live_server: Any) -> dict[str, Any]:
    """Six sessions (two ended, two with the same title, one with an escape sequence and non-ASCII text in
    its title); the first has notes in four states: delivered, pending, withdrawn, and pending with a
    short expiry."""
    from client.backends import connect
    from client.config import Settings

    async def shape(sessions: list[HarnessSession]) -> None:
        first = sessions[0].session_id
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            await client.send_note("first: delivered", session_id=first)
            await sessions[0].claim_notes()
            await client.send_note("second: stays pending", session_id=first)
            third = await client.send_note("third: withdrawn", session_id=first)
            await client.withdraw_note(third.note_id)
            await client.send_note("fourth: expires soon", session_id=first, expires_in_seconds=120)
        await sessions[3].end()
        await sessions[4].end("crashed")

    ids, _ = with_sessions(
        live_server.url,
        live_server.token,
        [
            {"agent_name": "builder", "title": "Fix the build"},
            {"agent_name": "builder-2", "title": "Fix the build"},
            {"agent_name": "codexer", "agent_kind": "codex", "cwd": "/work/repo"},
            {"agent_name": "old", "title": "Refactor\x1b[31m the parser, ünïcode"},
            {"agent_name": "older"},
            {"agent_name": "quiet"},
        ],
        shape,
    )
    return {"ids": ids, "first": ids[0]}


CASES: list[Callable[[dict[str, Any]], list[str]]] = [
    lambda d: ["sessions", "list", "-o", "id"],
    lambda d: ["sessions", "list", "--json"],
    lambda d: ["sessions", "list", "--json", "--active"],
    lambda d: ["sessions", "list", "-o", "id", "--limit", "2"],
    lambda d: ["sessions", "list", "--json", "--limit", "3"],
    lambda d: ["sessions", "list", "--json", "--agent", "builder"],
    lambda d: ["sessions", "list", "-o", "id", "--kind", "Codex", "--since", "1h"],
    lambda d: ["notes", "list", "--session", d["first"][:6], "--json"],
    lambda d: ["notes", "list", "--session", d["first"], "-o", "id"],
    lambda d: ["notes", "list", "--session", d["first"][:8].upper(), "--json", "--state", "pending"],
    lambda d: ["notes", "list", "--session", d["ids"][5][:5], "--json"],
    lambda d: ["--server-kind", "local", "notes", "list", "--session", d["first"][:6], "-o", "id"],
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_fast_path_prints_the_same_bytes_as_the_full_path(
    case: int,
    data: dict[str, Any],
    paths: Paths,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = CASES[case](data)
    fast, full, fell_back = _both(argv, paths, capsys, monkeypatch)
    assert not fell_back, "a plain answer fell back to the full path"
    assert fast == full
    assert fast[0] == 0 and fast[1]
    if "--json" in argv:
        json.loads(fast[1])


# ------------------------------------------------------------------------------------------ errors


def test_an_unknown_short_id_is_reported_by_the_full_path(
    data: dict[str, Any], paths: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    unknown = next(p * 4 for p in "0123456789abcdef" if not any(i.startswith(p * 4) for i in data["ids"]))
    fast, full, fell_back = _both(
        ["notes", "list", "--session", unknown, "--json"], paths, capsys, monkeypatch
    )
    assert fell_back and fast == full
    assert fast == (1, "", f"preloop: no such session: no session starts with '{unknown}': "
                    "`preloop sessions list` shows the ids\n")  # fmt: skip


def test_a_refused_token_is_reported_by_the_full_path(
    live_server: Any, paths: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PRELOOP_URL names the local server (its file says so: the kind is known), the token is wrong."""
    monkeypatch.setenv("PRELOOP_URL", live_server.url)
    monkeypatch.setenv("PRELOOP_TOKEN", "not-the-token")
    fast, full, fell_back = _both(["sessions", "list", "-o", "id"], paths, capsys, monkeypatch)
    assert fell_back and fast == full
    assert fast[0] == 1 and fast[1] == "" and fast[2].startswith("preloop: ") and "token" in fast[2]


def test_a_dead_server_is_reported_by_the_full_path(
    live_server: Any, paths: Paths, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    live_server.stop()
    argv = ["--server-kind", "local", "--url", live_server.url, "--token", "t", "notes", "list"]
    fast, full, fell_back = _both([*argv, "--session", "abcd", "--json"], paths, capsys, monkeypatch)
    assert fell_back and fast == full
    assert fast[0] == 1 and fast[1] == "" and "cannot reach" in fast[2]


# ------------------------------------------------------------------------------------------ not tried


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list"],  # a table: for people, the full path
        ["notes", "list", "--session", "{first}"],
        ["--server-kind", "preloop", "sessions", "list", "-o", "id"],  # not our server
        ["--server-kind", "auto", "--profile", "work", "sessions", "list", "-o", "id"],  # keyring token
    ],
)
def test_the_fast_path_is_not_tried_where_it_does_not_apply(
    argv: list[str], data: dict[str, Any], live_server: Any, paths: Paths, capsys: pytest.CaptureFixture[str]
) -> None:
    save_profile("work", live_server.url, server_kind="local")
    assert main([a.format(first=data["first"]) for a in argv]) == 0
    assert paths.fast == 0 and paths.full == 1
    assert capsys.readouterr().out
