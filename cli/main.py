"""The ``preloop`` command line: argparse front end, one module per command group in ``cli.commands``.

Start-up stays fast because this module imports only the standard library: a command group's module (and
with it the client, the server or Textual) is imported when that command runs, and Textual only for the
commands that open the full-screen app.

Exit codes (the same for every command, shown in ``--help``):

* 0: success;
* 1: the server refused the request or it failed (unreachable, 401/403/404/422/429/5xx, a note that
  could not be withdrawn because it reached the agent or expired first);
* 2: usage error (a bad flag, a bad flag combination, an unreadable duration), caught before any request;
* 130: interrupted with Ctrl+C.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from cli.exits import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliUsageError,
)

Handler = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]
"""A command: returns its exit code. It runs in the one event loop of the process (``asyncio.run``); the
full-screen app runs in it too (Textual's ``run_async``), on the backend the command opened."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors name the command and end with where to read more."""

    def error(self, message: str) -> Any:  # argparse's signature is NoReturn; keep it compatible
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\nRun `{self.prog} --help` for the options.\n")


DISTRIBUTION = "preloop-steer"
"""The installed package whose version ``preloop --version`` prints."""


class _Version(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked (``importlib.metadata``'s
    imports are start-up time that ``--help`` and every command need not pay)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        kwargs.pop("default", None)
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Print ``preloop X.Y.Z`` on standard output and exit 0, as argparse's own version action does."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version(DISTRIBUTION)
        except PackageNotFoundError:  # run from a source tree that was never installed
            found = "(version unknown: not installed)"
        print(f"preloop {found}")
        parser.exit(EXIT_OK)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32, width=100)


def _global_flags(*, suppress: bool) -> argparse.ArgumentParser:
    """Connection flags, accepted both before and after the command (``preloop --url X sessions list``)."""
    default = argparse.SUPPRESS if suppress else None
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("connection")
    group.add_argument(
        "--url", default=default, help="server URL (default: profile, $PRELOOP_URL, local server)"
    )
    group.add_argument("--token", default=default, help="bearer token (default: keyring, $PRELOOP_TOKEN)")
    group.add_argument("--profile", default=default, help="named profile from the config file")
    group.add_argument(
        "--server-kind",
        choices=("auto", "local", "preloop", "dendrux"),
        default=default if suppress else "auto",
        help="what is behind the URL (default: auto-detect from /health)",
    )
    return parent


def _handler(module: str, name: str) -> Handler:
    """Import the command module only when its command runs (fast start-up, no Textual for plain commands)."""

    async def run(args: argparse.Namespace) -> int:
        mod = importlib.import_module(f"cli.commands.{module}")
        func: Handler = getattr(mod, name)
        return await func(args)

    run.__qualname__ = f"{module}.{name}"
    return run


def build_parser() -> argparse.ArgumentParser:
    """Build the whole command tree (tests read it to check every command has help and an epilog)."""
    sub_flags = _global_flags(suppress=True)
    parser = _Parser(
        prog="preloop",
        description="Watch and steer live AI-agent runs. With no command, opens the sessions screen.",
        epilog=EXIT_CODES_HELP,
        formatter_class=_formatter,
        parents=[_global_flags(suppress=False)],
    )
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    parser.set_defaults(handler=_handler("tui_entry", "run_sessions_screen"), usage_parser=parser)
    groups = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)

    def add(
        container: Any, name: str, help_text: str, description: str | None = None
    ) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = container.add_parser(
            name,
            help=help_text,
            description=description or help_text,
            epilog=EXIT_CODES_HELP,
            formatter_class=_formatter,
            parents=[sub_flags],
        )
        # The deepest command parsed wins, so an unknown flag is reported with that command's usage.
        p.set_defaults(usage_parser=p)
        return p

    # ------------------------------------------------------------------------------------- sessions
    sessions = add(groups, "sessions", "list and attach to runtime sessions")
    sessions_sub = sessions.add_subparsers(title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser)
    sessions.set_defaults(handler=_handler("tui_entry", "run_sessions_group"), group_parser=sessions)

    p = add(
        sessions_sub,
        "list",
        "list sessions, newest first",
        "List runtime sessions, newest first. Filters combine (all must match).",
    )
    p.add_argument("--active", action="store_true", help="only sessions with activity in the last 10 minutes")
    p.add_argument("--agent", help="only this agent (id or name)")
    p.add_argument(
        "--kind", help='only this agent kind ("Claude Code", claude-code and claude_code are equal)'
    )
    p.add_argument("--since", metavar="DURATION", help="only sessions started in the last 30m, 2h, 7d, ...")
    p.add_argument("--parent", metavar="SESSION_UUID", help="only children of this session (full UUID)")
    p.add_argument(
        "--execution", metavar="EXECUTION_UUID", help="only sessions of this flow execution (UUID)"
    )
    p.add_argument("--limit", type=_limit, default=20, help="at most this many rows, 1..1000 (default 20)")
    p.add_argument("--wide", action="store_true", help="full ids and a KIND column")
    p.add_argument("-o", "--output", choices=("table", "id"), default="table", help="table (default) or id")
    p.add_argument("--json", action="store_true", help='print {"total", "items"} as JSON')
    p.set_defaults(handler=_handler("sessions", "list_sessions"))

    p = add(
        sessions_sub,
        "attach",
        "follow a session live and steer it",
        "Follow a session's events. On a terminal this opens the full-screen app; with --plain, or when\n"
        "stdout is not a terminal, it prints one line per event and reads notes and commands from stdin:\n"
        "  a line             send it as a note (end a line with \\ to continue on the next one)\n"
        "  /approve [ID]      approve the pending approval (ID needed only when several are pending)\n"
        "  /decline [ID] [COMMENT]\n"
        "  /withdraw NOTE_ID  withdraw a note that was not delivered yet\n"
        "  //text             send a note that starts with '/'\n"
        "Any other line starting with '/' is refused, never sent as a note.",
    )
    p.add_argument("session", nargs="?", metavar="SESSION_ID", help="session UUID or short id (4+ hex)")
    p.add_argument(
        "--execution", metavar="EXECUTION_UUID", help="attach to the session of this flow execution"
    )
    p.add_argument("--plain", action="store_true", help="one line per event, even on a terminal")
    p.add_argument("--json", action="store_true", help="one JSON event per line; notices go to stderr")
    p.add_argument(
        "--since",
        metavar="DURATION",
        help="with --plain/--json: first print this much history (30m, 2h, ...; 0s = none; default: the 5m "
        "up to its last activity); the full-screen app shows the newest 5,000 events",
    )
    p.add_argument("--read-only", action="store_true", help="follow without steering (stdin is not read)")
    p.set_defaults(handler=_handler("sessions", "attach"))

    p = add(
        sessions_sub,
        "export",
        "export a session for a post-incident review (Markdown or JSON)",
        "Export a session's timeline (commentary and final answers told apart), tool calls with\n"
        "durations, every note with its states and times and what the agent did next, and every approval\n"
        "decision with who decided and the comment. Markdown renders on GitHub; JSON follows\n"
        "docs/export.schema.json. A running session is exported as of now.",
    )
    p.add_argument("session", metavar="SESSION_ID", help="session UUID or short id (4+ hex)")
    p.add_argument("--format", choices=("md", "json"), help="md (default) or json; -o FILE.json implies json")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    p.set_defaults(handler=_handler("export", "export"))

    p = add(
        sessions_sub,
        "digest",
        "what changed in a session since a time, or since you last looked; --all: the shift handoff",
        "What happened in a session: time away, tool calls (how many failed), approvals decided (by whom,\n"
        "with the comment) and waiting, your notes and what the agent did after reading each, its latest\n"
        "commentary and whether a final answer came. --since-last counts from where you last looked in the\n"
        "full-screen app on this machine (it reads that mark and does not move it).\n"
        "--all --since 8h is the shift handoff: every session with activity in the window, the ones that\n"
        "need a human first, then what was decided in it (approvals, declines with comments, notes).",
    )
    p.add_argument("session", nargs="?", metavar="SESSION_ID", help="session UUID or short id (4+ hex)")
    p.add_argument("--all", action="store_true", help="every session with activity in the window (handoff)")
    p.add_argument("--since", metavar="DURATION", help="the window: 30m, 2h, 8h, 1d, ...")
    p.add_argument(
        "--since-last", action="store_true", help="since you last looked at it in the app (this machine)"
    )
    p.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or md")
    p.add_argument("--json", action="store_true", help="print it as JSON for scripts")
    p.set_defaults(handler=_handler("digest", "digest"))

    # ---------------------------------------------------------------------------------------- notes
    notes = add(groups, "notes", "send, list and withdraw operator notes")
    notes_sub = notes.add_subparsers(title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser)
    notes.set_defaults(handler=None, group_parser=notes)

    p = add(
        notes_sub,
        "send",
        "send a note an agent reads at its next turn",
        "Send an operator note. Give exactly one target. The text is the argument, or standard input\n"
        "when it is omitted or '-' (lines are kept):\n"
        "  preloop notes send --session 1a2b3c4d <<'EOF'\n  first line\n  second line\n  EOF",
    )
    p.add_argument("text", nargs="?", help="the note; omit or '-' to read standard input")
    p.add_argument("--session", metavar="SESSION_ID", help="target session (UUID or short id)")
    p.add_argument("--agent", metavar="AGENT_ID", help="target agent (its next session reads it)")
    p.add_argument("--execution", metavar="EXECUTION_UUID", help="target flow execution")
    p.add_argument(
        "--expires-in", metavar="DURATION", help="expire if not delivered in 60s..7d (default 24h)"
    )
    p.add_argument("--json", action="store_true", help='print {"note_id", "target"} only')
    p.set_defaults(handler=_handler("notes", "send"))

    p = add(notes_sub, "list", "list a session's notes and their delivery state")
    p.add_argument("--session", metavar="SESSION_ID", required=True, help="session UUID or short id")
    p.add_argument(
        "--state",
        choices=(
            "pending",
            "claimed",
            "delivered",
            "acknowledged",
            "cancelled",
            "expired",
            "failed",
            "undeliverable",
        ),
        help="only notes in this state",
    )
    p.add_argument(
        "-o", "--output", choices=("table", "id"), default="table", help="table (default) or id, one per line"
    )
    p.add_argument("--json", action="store_true", help="print the notes as JSON")
    p.set_defaults(handler=_handler("notes", "list_notes"))

    p = add(
        notes_sub,
        "withdraw",
        "withdraw a note before it is delivered",
        "Withdraw a pending note. Prints the note's state afterwards. A note withdrawn before says so\n"
        "and exits 0; one that was no longer pending otherwise (delivered, expired...) says why nothing\n"
        "changed and exits 1.",
    )
    p.add_argument("note_id", metavar="NOTE_ID", help="note id (full, or its first 4+ characters)")
    p.add_argument(
        "--session", metavar="SESSION_ID", help="look for a short note id only in this session's notes"
    )
    p.add_argument("--json", action="store_true", help="print the note as JSON")
    p.set_defaults(handler=_handler("notes", "withdraw"))

    # ------------------------------------------------------------------------------------ approvals
    approvals = add(groups, "approvals", "list and decide tool-call approvals")
    approvals_sub = approvals.add_subparsers(title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser)
    approvals.set_defaults(handler=None, group_parser=approvals)

    p = add(approvals_sub, "list", "list approvals waiting for a decision")
    p.add_argument("--session", metavar="SESSION_ID", help="only this session (UUID or short id)")
    p.add_argument(
        "--status",
        choices=("pending", "approved", "declined", "expired", "cancelled", "all"),
        default="pending",
        help="which approvals (default pending)",
    )
    p.add_argument(
        "--decided",
        action="store_true",
        help="every settled approval, the latest decision first: who decided (you, a colleague by name, an "
        "AI, a standing rule), when, and the comment",
    )
    p.add_argument(
        "-o", "--output", choices=("table", "id"), default="table", help="table (default) or id, one per line"
    )
    p.add_argument("--json", action="store_true", help="print the approvals as JSON (NDJSON with --watch)")
    p.add_argument(
        "--all-sessions",
        action="store_true",
        help="every session's approvals (the default without --session)",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="keep printing: pending approvals now, then each new, decided or expired one and every note "
        "that could not be delivered, until Ctrl+C",
    )
    p.set_defaults(handler=_handler("approvals", "list_approvals"))

    p = add(
        approvals_sub,
        "show",
        "show one approval and what its call will change",
        "Show one approval: its session, tool, risk and status; why it is asked (the agent's reasoning,\n"
        "the server's summary, the rule that asked, what the server redacted); who decided it, when and\n"
        "with which comment, votes and who looked, as far as the server says; then what the call will\n"
        "change: a unified diff for a file edit, the command for a shell call, else the arguments.\n"
        "Every line is printed; --json gives all of it and the preview's model.",
    )
    p.add_argument("approval_id", metavar="APPROVAL_ID", help="approval id (full, or 4+ leading characters)")
    p.add_argument(
        "--original",
        action="store_true",
        help="also fetch the call's arguments from before the server redacted them (Preloop keeps them "
        "while the approval is pending, when its rule says so)",
    )
    p.add_argument("--json", action="store_true", help="print the approval and its preview as JSON")
    p.set_defaults(handler=_handler("approvals", "show"))

    for verb in ("approve", "decline"):
        p = add(
            approvals_sub,
            verb,
            f"{verb} one or more pending tool calls",
            f"{verb.capitalize()} one or more pending tool calls with one decision (and one --comment for\n"
            "all). Short ids are resolved first: an unknown or ambiguous one is a usage error (exit 2) and\n"
            "nothing is decided. Each id is then decided on its own and gets one line: decided, already\n"
            "settled (by whom, as far as the server says), or not decided and why. Exit 0 only when every\n"
            "id was decided by this command, else 1.",
        )
        p.add_argument(
            "approval_ids",
            metavar="APPROVAL_ID",
            nargs="+",
            help="approval ids (full, or 4+ leading characters)",
        )
        p.add_argument("--comment", help="a comment the agent sees with the decision (every one of them)")
        p.add_argument("--json", action="store_true", help="print one JSON object per approval (NDJSON)")
        p.set_defaults(handler=_handler("approvals", verb), decision=verb)

    p = add(
        approvals_sub,
        "allow",
        "allow (or mute) calls like this for a while",
        "Make a time-boxed rule: calls it covers are approved for you (or, with --mute, ring no more and\n"
        "still ask) until it ends. Say what it covers: --session ID with --tool NAME (and --match PATTERN:\n"
        "a shell-style pattern over the command, e.g. 'pytest *'; * never crosses ; & | ` $ < >), or\n"
        "--agent ID, or --account. --for is required and bounded (1m to 8h): there is no forever.\n"
        "Danger-risk calls are covered only with --danger (a second confirmation). A Preloop server's rules\n"
        "are its approval bypasses (--agent or --account only); a Dendrux app keeps none.",
    )
    p.add_argument("--session", metavar="SESSION_ID", help="the session the rule covers (UUID or short id)")
    p.add_argument("--agent", metavar="AGENT_UUID", help="every session of this agent (full UUID)")
    p.add_argument("--account", action="store_true", help="every agent of the account")
    p.add_argument("--tool", metavar="NAME", help="only this tool (e.g. Bash); required with --session")
    p.add_argument("--match", metavar="PATTERN", help="only calls whose command (path, arguments) match")
    p.add_argument(
        "--for", dest="duration", metavar="DURATION", required=True, help="how long: 30m, 2h (1m to 8h)"
    )
    p.add_argument("--mute", action="store_true", help="alerts off, every call still asks")
    p.add_argument("--danger", action="store_true", help="also allow danger-risk calls (second confirmation)")
    p.add_argument("--reason", help="why (kept with the rule)")
    p.add_argument("--json", action="store_true", help="print the rule as JSON")
    p.set_defaults(handler=_handler("rules", "allow"))

    p = add(
        approvals_sub,
        "rules",
        "list the allow rules that hold; `rules revoke` ends them",
        "List the time-boxed allow rules that hold now (what each covers, until when, how many calls it\n"
        "allowed, who set it). `preloop approvals rules revoke ID` ends one, `--all` every one.",
    )
    p.add_argument("--json", action="store_true", help="print the rules as JSON")
    p.set_defaults(handler=_handler("rules", "list_rules"))
    rules_sub = p.add_subparsers(title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser)
    p = add(rules_sub, "revoke", "end a rule now (or every rule with --all)")
    p.add_argument("rule_id", metavar="RULE_ID", nargs="?", help="rule id (full, or 4+ leading characters)")
    p.add_argument("--all", action="store_true", help="end every rule that holds")
    p.add_argument("--json", action="store_true", help="print the ended rules as JSON")
    p.set_defaults(handler=_handler("rules", "revoke"))

    # ------------------------------------------------------------------------------------ auth
    p = add(
        groups,
        "login",
        "store a token for a server",
        "Store a token for a server in the OS keyring (or, with --store file, in a 0600 file).\n"
        "The token is read from a hidden prompt, or from standard input with --with-token:\n"
        '  echo "$TOKEN" | preloop login --url https://preloop.example --with-token',
    )
    p.add_argument("--with-token", action="store_true", help="read the token from standard input")
    p.add_argument(
        "--store",
        choices=("keyring", "file"),
        default="keyring",
        help="where to keep the token (default keyring; file = 0600 file in the config directory)",
    )
    p.set_defaults(handler=_handler("auth", "login"))

    p = add(groups, "logout", "forget the stored token for a server")
    p.set_defaults(handler=_handler("auth", "logout"))

    auth = add(groups, "auth", "authentication status")
    auth_sub = auth.add_subparsers(title="subcommands", metavar="SUBCOMMAND", parser_class=_Parser)
    auth.set_defaults(handler=None, group_parser=auth)
    p = add(auth_sub, "status", "which server and token would be used, and whether the token works")
    p.set_defaults(handler=_handler("auth", "status"))

    # ------------------------------------------------------------------------------------ local server
    p = add(groups, "serve", "run the local control plane server")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8765, help="port to bind (default 8765; 0 = any free port)")
    p.add_argument("--db", metavar="PATH", help="SQLite database file (default: in the user data directory)")
    p.add_argument(
        "--add-operator",
        metavar="NAME",
        help="add a person with their own operator token (printed once) and exit; their decisions and "
        "notes are shown under NAME",
    )
    p.set_defaults(handler=_handler("serve", "serve"))

    p = add(
        groups,
        "demo",
        "run a local server with demo agents and watch them",
        "Start a local server on 127.0.0.1:8766 with three demo coding agents, then open the sessions\n"
        "screen against it (with --no-tui: print the URL and how to watch with curl).\n\n"
        "Its database is kept in the state directory and its port stays the same, so running\n"
        "`preloop demo` again after Ctrl+C or a crash keeps every session and note, and clients still\n"
        "attached reconnect by themselves. --fresh starts over with an empty database.",
    )
    p.add_argument(
        "--pace", type=_pace, default=1.0, help="speed factor for the agents (default 1.0; 10 = fast)"
    )
    p.add_argument("--seed", type=int, default=None, help="random seed, for a repeatable demo")
    p.add_argument("--no-tui", action="store_true", help="do not open the app; keep running until Ctrl+C")
    p.add_argument(
        "--db", metavar="PATH", help="SQLite database file (default: demo.sqlite3 in the state directory)"
    )
    p.add_argument(
        "--port",
        type=_port,
        default=None,
        help="port to bind (default 8766, or a free one when it is taken; 0 = any free port)",
    )
    p.add_argument("--fresh", action="store_true", help="delete the demo's database first and start over")
    p.add_argument(
        "--add-operator",
        metavar="NAME",
        help="add a person to the demo's server with their own operator token (printed once) and exit",
    )
    p.set_defaults(handler=_handler("serve", "demo"))
    return parser


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: use 1..1000") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{value} is out of range: use 1..1000")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0..65535)")
    return value


def _pace(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.01 <= value <= 1000:
        raise argparse.ArgumentTypeError("use a pace between 0.01 and 1000")
    return value


def _fill_globals(args: argparse.Namespace) -> None:
    """Global flags given after the command were suppressed when absent: give them their defaults."""
    for name, default in (("url", None), ("token", None), ("profile", None), ("server_kind", "auto")):
        if not hasattr(args, name):
            setattr(args, name, default)


def _skip_httpx_command_line() -> None:
    """``import httpx`` also imports httpx's own command line (click, pygments, a good part of rich) whenever
    click is installed, as it is with the ``server`` extra (uvicorn needs it); no command here runs it.
    Marked absent before httpx loads, it leaves httpx its stub ``httpx.main`` and every command (the app
    too) its import time."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``preloop`` command and return its exit code (the console script exits with it)."""
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:
            # Reported by the command that was being parsed, with its usage, not the top-level one.
            command: argparse.ArgumentParser = getattr(args, "usage_parser", parser)
            command.error(f"unrecognized arguments: {' '.join(extras)}")
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    _fill_globals(args)
    handler: Handler | None = args.handler
    if handler is None:
        group: argparse.ArgumentParser = args.group_parser
        group.print_help(sys.stderr)
        return EXIT_USAGE
    _skip_httpx_command_line()
    try:
        import asyncio  # here, not at the top: start-up time `--help` and a usage error need not pay

        return asyncio.run(handler(args))
    except CliUsageError as exc:
        print(f"preloop: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Quiet: the user asked to stop. A newline keeps the shell prompt on its own line.
        if sys.stderr.isatty():
            print(file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `preloop ... | head`: the reader left. Point stdout at /dev/null so the exit flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # the last line of defence: one sentence, never a traceback
        from client.errors import ClientError

        if isinstance(exc, ClientError):
            from cli.commands.common import report_error

            return report_error(exc)
        if os.environ.get("PRELOOP_DEBUG"):
            raise
        print(f"preloop: unexpected error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("Set PRELOOP_DEBUG=1 to see the traceback.", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
