"""``preloop sessions list`` against the real local server over loopback."""

from __future__ import annotations

import json
import uuid

import pytest

from cli.main import main
from server.harness_client import HarnessSession
from tests.cli.helpers import preloop, shell, with_sessions


async def _end_first(sessions: list[HarnessSession]) -> None:
    await sessions[0].end()


def test_table_shows_every_column_state_and_unique_titles(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    ids, _ = with_sessions(
        live_server.url,
        live_server.token,
        [
            {"agent_name": "old-one", "title": "Refactor\x1b[31m the parser"},
            {"agent_name": "builder", "title": "Fix the build"},
            {"agent_name": "builder-2", "title": "Fix the build"},
            {"agent_name": "codexer", "agent_kind": "codex", "cwd": "/work/repo"},
        ],
        _end_first,
    )
    assert main(["sessions", "list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == [
        "ID",
        "AGENT",
        "STARTED",
        "LAST",
        "ACTIVITY",
        "STATE",
        "TOOLS",
        "MODEL",
        "PENDING",
        "TITLE",
    ]
    body = lines[1:]
    assert len(body) == 4  # no footer (nothing more) and no hint line (stdout is not a terminal)
    by_id = {line.split()[0]: line for line in body}
    assert set(by_id) == {i[:8] for i in ids}
    assert " ended " in by_id[ids[0][:8]] and " live " in by_id[ids[1][:8]]
    assert "just now" in by_id[ids[1][:8]]
    # duplicate titles are told apart by the short id; the escape sequence never reaches the terminal
    assert f"Fix the build ({ids[1][:8]})" in by_id[ids[1][:8]]
    assert f"Fix the build ({ids[2][:8]})" in by_id[ids[2][:8]]
    assert "\x1b" not in out and "the parser" in by_id[ids[0][:8]]
    assert "Codex in /work/repo started" in by_id[ids[3][:8]]


def test_wide_shows_full_ids_and_kind(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a", "agent_kind": "codex"}])
    assert main(["sessions", "list", "--wide"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["ID", "AGENT", "KIND"]
    assert out[1].split()[:3] == [ids[0], "a", "codex"]


def test_json_is_total_and_items_with_computed_title_and_state(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    ids, _ = with_sessions(
        live_server.url,
        live_server.token,
        [{"agent_name": "a", "cwd": "/srv"}, {"agent_name": "b", "title": "T"}],
    )
    assert main(["sessions", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == 2 and data["has_more"] is False
    items = {item["id"]: item for item in data["items"]}
    assert set(items) == set(ids)
    first = items[ids[0]]
    assert first["state"] == "live"
    assert first["display_title"].startswith("Claude Code in /srv started")
    assert first["title"] is None  # the server's own field is kept as the server sent it
    assert first["agent_name"] == "a" and first["agent_kind"] == "claude_code" and first["cwd"] == "/srv"
    assert items[ids[1]]["display_title"] == "T"


def test_output_id_prints_one_full_id_per_line(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a"}, {"agent_name": "b"}])
    assert main(["sessions", "list", "-o", "id"]) == 0
    assert sorted(capsys.readouterr().out.split()) == sorted(ids)


def test_filters_reach_the_server(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    parent = str(uuid.uuid4())
    execution = str(uuid.uuid4())
    ids, _ = with_sessions(
        live_server.url,
        live_server.token,
        [
            {"agent_name": "ended-one"},
            {"agent_name": "alpha"},
            {"agent_name": "beta", "agent_kind": "codex", "parent_session_id": parent},
            {"agent_name": "gamma", "flow_execution_id": execution},
        ],
        _end_first,
    )

    def listed(*flags: str) -> set[str]:
        assert main(["sessions", "list", "-o", "id", *flags]) == 0
        return set(capsys.readouterr().out.split())

    assert listed() == set(ids)
    assert listed("--active") == set(ids[1:])
    assert listed("--agent", "alpha") == {ids[1]}
    assert listed("--kind", "Codex") == {ids[2]}
    assert listed("--kind", "Claude Code") == {ids[0], ids[1], ids[3]}
    assert listed("--parent", parent) == {ids[2]}
    assert listed("--execution", execution) == {ids[3]}
    assert listed("--since", "1h") == set(ids)
    assert main(["sessions", "list", "--agent", "nobody"]) == 0
    assert capsys.readouterr().out == "No sessions match.\n"


def test_limit_pages_by_has_more_and_says_when_more_exist(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": f"a{i}"} for i in range(230)])
    assert main(["sessions", "list", "--limit", "150"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 150 + 1
    assert "more exist" in lines[-1] and "--limit 300" in lines[-1]
    assert main(["sessions", "list", "--limit", "1000", "-o", "id"]) == 0
    listed = capsys.readouterr().out.split()
    assert len(listed) == 230 and set(listed) == set(ids)  # three pages of 100, no duplicates
    assert main(["sessions", "list", "--limit", "230", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["items"]) == 230 and data["has_more"] is False


def test_refusals_name_the_fix(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "list", "--token", "plo_wrong"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("preloop: not authorised:") and "preloop login" in err and "plo_wrong" not in err
    assert main(["sessions", "list", "--token", live_server.other_token, "-o", "id"]) == 0
    assert capsys.readouterr().out == ""  # another account sees nothing


def test_console_script_and_shell_pipeline(live_server) -> None:
    """A new user's one-liner: the first active session gets a note, through xargs."""
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a"}])
    done = preloop("sessions", "list")
    assert done.returncode == 0, done.stderr
    assert ids[0][:8] in done.stdout
    script = (
        "preloop sessions list --active -o id | head -1"
        ' | xargs -I{} preloop notes send --session {} "please stop"'
    )
    piped = shell(script)
    assert piped.returncode == 0, piped.stderr
    assert f"to session {ids[0]}" in piped.stdout
    listed = preloop("notes", "list", "--session", ids[0][:6], "--json")
    assert [n["text"] for n in json.loads(listed.stdout)["notes"]] == ["please stop"]


def test_dead_server_is_one_line_and_exit_1(isolated_dirs) -> None:
    done = preloop("sessions", "list", "--url", "http://127.0.0.1:9")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "server unreachable" in done.stderr
    assert "Traceback" not in done.stderr


def test_sorted_as_the_sessions_screen_and_titles_told_apart_at_80_columns(
    live_server, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 item 8: newest start first like the TUI (the server orders by last activity), the sort is
    said, and at 80 columns the titles keep the end that tells them apart."""
    import cli.commands.sessions as sessions_command

    base = "Add an index for invoice lookups"

    async def oldest_works_last(sessions: list[HarnessSession]) -> None:
        await sessions[0].run_started("still going")  # now the most recently active

    ids, _ = with_sessions(
        live_server.url,
        live_server.token,
        [{"agent_name": "migrator", "title": base if n == 1 else f"{base} (shift {n})"} for n in (1, 2, 3)],
        oldest_works_last,
    )
    monkeypatch.setattr(sessions_command, "terminal_width", lambda _stream: 80)
    assert main(["sessions", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    body = [line for line in lines[1:4]]
    assert [line.split()[0] for line in body] == [i[:8] for i in reversed(ids)]
    assert all(len(line) <= 80 for line in lines[:4]), lines
    assert body[0].endswith("(shift 3)") and body[1].endswith("(shift 2)") and "(shift" not in body[2]
    assert "Sorted newest first (by start time)." in lines


def test_wide_titles_and_agent_names_keep_the_columns_in_line(
    live_server, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 18: columns were padded with ``len()``, so a CJK or emoji title or agent name (two cells a
    character) pushed the columns after it out of line, and a cut title overflowed the terminal. Measured
    in cells, as the terminal shows them, every column starts in the cell its header starts in."""
    import cli.commands.sessions as sessions_command
    from client.cells import cell_len, head

    with_sessions(
        live_server.url,
        live_server.token,
        [
            {"agent_name": "plain-agent", "title": "Plain title for a plain session"},
            {"agent_name": "ビルダー", "title": "修复登录页面的崩溃问题并补充测试用例，然后发布"},
            {"agent_name": "deployer", "title": "🚀 Ship the 🎉 release after the 👨‍👩‍👧 review"},
        ],
    )
    for width in (None, 100, 72):
        monkeypatch.setattr(sessions_command, "terminal_width", lambda _stream, w=width: w)
        assert main(["sessions", "list"]) == 0
        header, *rows = capsys.readouterr().out.splitlines()[:4]
        names = [name for name in ("AGENT", "STARTED", "PENDING", "TITLE") if name in header]
        assert "TITLE" in names and "AGENT" in names
        for name in names:
            column = header.index(name)  # the header is ASCII: its index is its cell
            for row in rows:
                before = head(row, column)
                assert cell_len(before) == column, (width, name, row)  # no character straddles it
                assert before.endswith("  ") and row[len(before)] != " ", (width, name, row)
        if width is not None:
            assert all(cell_len(row) <= width for row in rows), (width, rows)


async def _spend(sessions: list[HarnessSession]) -> None:
    """The first session's agent reports two model calls; the second reports none."""
    agent = sessions[0]
    await agent.run_started("task")
    usage = {"model": "m", "input_tokens": 9000, "output_tokens": 1200, "cost_usd": 0.21}
    await agent.step(1, "commentary", "a", tool_calls=1, usage=usage)
    await agent.step(2, "final_answer", "b", usage=usage)


def test_a_cost_column_for_sessions_whose_agent_reported_usage_and_none_otherwise(
    live_server, capsys: pytest.CaptureFixture[str]
) -> None:
    ids, _ = with_sessions(
        live_server.url, live_server.token, [{"agent_name": "spender"}, {"agent_name": "quiet"}], _spend
    )
    assert main(["sessions", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "COST" in lines[0].split()
    by_id = {line.split()[0]: line for line in lines[1:]}
    assert "$0.42 · 20k tok" in by_id[ids[0][:8]]
    assert "$0.00" not in by_id[ids[1][:8]] and " - " in by_id[ids[1][:8]]
    assert main(["sessions", "list", "--wide"]) == 0
    assert "$0.42 · 20k tok (18k in / 2.4k out)" in capsys.readouterr().out
    assert main(["sessions", "list", "--json"]) == 0
    items = {item["id"]: item for item in json.loads(capsys.readouterr().out)["items"]}
    assert items[ids[0]]["cost"] == {
        "input_tokens": 18000,
        "output_tokens": 2400,
        "total_tokens": 20400,
        "cost_usd": 0.42,
    }
    assert items[ids[1]]["cost"] is None and items[ids[1]]["estimated_cost"] is None


def test_no_cost_column_when_no_session_reported_any(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    with_sessions(live_server.url, live_server.token, [{"agent_name": "quiet"}])
    assert main(["sessions", "list"]) == 0
    out = capsys.readouterr().out
    assert "COST" not in out and "$" not in out
