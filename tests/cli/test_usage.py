"""Bad flags and flag combinations are refused with exit 2 before any request, in a sentence naming the fix.

The server URL points at a closed port: had any command made a request, it would exit 1 (unreachable)
instead of 2, so exit 2 proves the refusal came first.
"""

from __future__ import annotations

import socket

import pytest

from cli.main import build_parser, main


@pytest.fixture
def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


UUID = "1a2b3c4d-0000-4000-8000-1234567890ab"


@pytest.mark.parametrize(
    ("argv", "fix"),
    [
        (["sessions", "list", "--json", "-o", "id"], "keep one of them"),
        (["sessions", "list", "--wide", "--json"], "drop --wide"),
        (["sessions", "list", "--wide", "-o", "id"], "drop --wide"),
        (["sessions", "list", "--since", "yesterday"], "30m"),
        (["sessions", "list", "--since", "30"], "add s, m, h or d"),
        (["sessions", "list", "--since", "0m"], "no time at all"),
        (["sessions", "attach", "abcd", "--plain", "--since", "0"], "add s, m, h or d"),
        (["approvals", "approve", "zzzz"], "give its UUID or its first 4+ hex characters"),
        (["sessions", "list", "--parent", "1a2b3c4d"], "full UUID"),
        (["sessions", "list", "--execution", "nope"], "full UUID"),
        (["sessions", "list", "--limit", "0"], "1..1000"),
        (["sessions", "list", "--limit", "1001"], "1..1000"),
        (["sessions", "list", "--kind", " - "], "agent kind"),
        (["sessions", "list", "-o", "yaml"], "invalid choice"),
        (["sessions", "attach"], "give a session id"),
        (["sessions", "attach", "abcd", "--execution", UUID], "not both"),
        (["sessions", "attach", "abcd", "--plain", "--json"], "keep one of them"),
        (["sessions", "attach", "abcd", "--since", "2 days"], "30m"),
        (["sessions", "attach", "--execution", "abc"], "full UUID"),
        (["notes", "send", "hello"], "exactly one target"),
        (["notes", "send", "hello", "--session", "abcd", "--agent", "a1"], "exactly one target"),
        (["notes", "send", "hello", "--session", "abcd", "--expires-in", "30s"], "between 60s and 7d"),
        (["notes", "send", "hello", "--session", "abcd", "--expires-in", "8d"], "between 60s and 7d"),
        (["notes", "send", "hello", "--execution", "1234"], "full UUID"),
        (["notes", "send", "   ", "--session", "abcd"], "the note is empty"),
        (["notes", "list"], "--session"),
        (["notes", "list", "--session", "abcd", "--state", "done"], "invalid choice"),
        (["notes", "withdraw", "../../etc"], "not a valid note id"),
        (["approvals", "list", "--status", "maybe"], "invalid choice"),
        (["approvals", "approve"], "APPROVAL_ID"),
        (["serve", "--port", "70000"], "port"),
        (["demo", "--pace", "0"], "pace"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_flags_exit_2_before_any_request(
    argv: list[str], fix: str, dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*argv, "--url", dead_url]) if argv != ["frobnicate"] else main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert fix in err
    assert "Traceback" not in err


def test_global_flags_work_before_and_after_the_command(
    dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--url", dead_url, "sessions", "list"]) == 1
    assert main(["sessions", "list", "--url", dead_url]) == 1
    err = capsys.readouterr().err
    assert err.count("server unreachable") == 2


def test_help_documents_exit_codes_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert "exit codes:" in (parser.epilog or "")
    for argv in (
        ["--help"],
        ["sessions", "list", "--help"],
        ["notes", "send", "--help"],
        ["login", "--help"],
    ):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "exit codes:" in out and "2    usage error" in out and "PRELOOP_TOKEN" in out


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (["notes", "withdraw", "abcd", "--bogus"], "preloop notes withdraw"),
        (["sessions", "list", "--colour"], "preloop sessions list"),
        (["approvals", "approve", "abcd", "-x"], "preloop approvals approve"),
        (["sessions", "--nope"], "preloop sessions"),
    ],
)
def test_an_unknown_flag_prints_that_subcommands_usage(
    argv: list[str], prog: str, dead_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 10 item 10: not the top-level `usage: preloop [-h] ... COMMAND ...`."""
    assert main([*argv, "--url", dead_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {prog} ")
    assert f"{prog}: error: unrecognized arguments: {argv[-1]}" in err
    assert f"Run `{prog} --help`" in err


def test_group_without_subcommand_off_a_terminal_prints_its_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["notes"]) == 2
    assert "send" in capsys.readouterr().err


def test_plain_commands_do_not_load_textual_or_the_server(live_server) -> None:
    """Start-up stays fast: a scripted command imports neither the full-screen app nor the server."""
    import subprocess
    import sys

    # httpx itself loads rich (for its own optional command line): judge what we add on top of it.
    code = (
        "import sys\n"
        "import httpx\n"
        "baseline = set(sys.modules)\n"
        "from cli.main import main\n"
        "assert main(['sessions', 'list', '-o', 'id']) == 0\n"
        "assert main(['notes', 'list', '--session', '0000', '--json']) == 1\n"
        "loaded = {name.split('.')[0] for name in set(sys.modules) - baseline}\n"
        "print(sorted(loaded & {'textual', 'rich', 'server', 'widgets', 'uvicorn', 'fastapi'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_help_does_not_load_asyncio() -> None:
    """`preloop --help` parses and prints only: the event loop (~45 ms of imports) is loaded when a
    command runs, not by ``cli.main`` itself."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from cli.main import main\n"
        "assert main(['--help']) == 0\n"
        "assert main(['sessions', 'list', '--limit', '0']) == 2\n"
        "print('asyncio' in sys.modules, 'importlib.metadata' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False False"  # --version's look-up: only for it


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``preloop --version`` (there was none): the installed package's version, exit 0, on stdout."""
    from importlib.metadata import version

    from tests.cli.helpers import preloop

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"preloop {version('preloop-steer')}\n"
    done = preloop("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"preloop {version('preloop-steer')}\n", "")
    assert "--version" in preloop("--help").stdout
