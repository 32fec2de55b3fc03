"""``preloop`` against a real Dendrux app as a user runs it: sessions list, attach (--plain, --json and the
full-screen app), notes and approvals, and what the app cannot do said plainly."""

from __future__ import annotations

import asyncio
import io
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout

import pytest

from cli.main import main
from client.backends.dendrux import DendruxBackend
from client.connection import Connection
from client.present import NOT_RECORDED
from client.status import Live
from tests.conftest import said, until
from tests.dendrux.conftest import run_status, wait_for
from tests.dendrux_app.server import DendruxAppServer
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from widgets.timeline_view import TimelineView

LINE = re.compile(r"^\d\d:\d\d:\d\d (\S+)\s+(.*)$")


pytestmark = pytest.mark.usefixtures("isolated_dirs")  # preloop's folders under tmp_path


@pytest.fixture
def flags(dendrux_app: DendruxAppServer) -> list[str]:
    return ["--url", dendrux_app.url, "--token", str(dendrux_app.token), "--server-kind", "dendrux"]


class Run:
    """``main(argv)`` with its output captured, in a thread (its own event loop) when asked."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.code: int | None = None

    def __call__(self) -> Run:
        with redirect_stdout(self.out), redirect_stderr(self.err):
            self.code = main(self.argv)
        return self

    def lines(self) -> list[tuple[str, str]]:
        return [(m.group(1), m.group(2)) for m in map(LINE.match, self.out.getvalue().splitlines()) if m]


@pytest.fixture
def background() -> Iterator[Callable[[list[str]], tuple[Run, threading.Thread]]]:
    threads: list[threading.Thread] = []

    def start(argv: list[str]) -> tuple[Run, threading.Thread]:
        run = Run(argv)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        return run, thread

    yield start
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive(), "a CLI command never returned"


def _wait_text(stream: io.StringIO, text: str, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while text not in stream.getvalue():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; got:\n{stream.getvalue()}")
        time.sleep(0.05)


def test_sessions_list_shows_runs_with_their_agent_and_is_detected_without_the_flag(
    dendrux_app: DendruxAppServer, flags: list[str]
) -> None:
    run_id = dendrux_app.start_run("answer: hello there")
    wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="the run")
    listed = Run(["sessions", "list", "-o", "id", *flags])()
    assert listed.code == 0 and listed.out.getvalue().split() == [run_id]
    table = Run(["sessions", "list", *flags])()
    assert table.code == 0
    _, row = table.out.getvalue().splitlines()
    assert row.split()[:2] == [run_id[:12], "refund_desk"] and "ended" in row and "scripted-mock" in row
    auto = Run(["sessions", "list", "--json", "--url", dendrux_app.url, "--token", str(dendrux_app.token)])()
    assert auto.code == 0, auto.err.getvalue()
    [item] = json.loads(auto.out.getvalue())["items"]
    assert item["id"] == run_id
    # The run's token totals, and no cost: the scripted model has no price (total_cost_usd null), which
    # is shown as tokens alone, never as $0.00.
    cost = item["cost"]
    assert cost["total_tokens"] == cost["input_tokens"] + cost["output_tokens"] > 0
    assert cost["cost_usd"] is None
    assert " tok " in row + " " and "$" not in row


def test_plain_attach_follows_a_run_with_a_note_sent_from_another_shell(
    dendrux_app: DendruxAppServer,
    flags: list[str],
    background: Callable[[list[str]], tuple[Run, threading.Thread]],
) -> None:
    run_id = dendrux_app.start_run("hold gate=c1: wait for the warehouse")
    attach, thread = background(["sessions", "attach", run_id, "--plain", "--read-only", *flags])
    _wait_text(attach.out, "hold", "the hold tool to start")
    sent = Run(["notes", "send", "--session", run_id, "Customer is a VIP, be polite.", *flags])()
    assert sent.code == 0, sent.err.getvalue()
    dendrux_app.open_gate("c1")
    thread.join(60)
    assert attach.code == 0, attach.err.getvalue()
    lines = attach.lines()
    text = attach.out.getvalue()
    assert "Waiting for the warehouse to confirm." in text  # commentary from the trace row
    assert any(kind == "note" and "delivered" in line and "Customer is a VIP" in line for kind, line in lines)
    assert "The warehouse confirmed. Notes seen: 1" in text  # the final answer
    assert lines[-1][0] == "session" and lines[-1][1].startswith("ended")
    listed = Run(["notes", "list", "--session", run_id, *flags])()
    assert listed.code == 0 and "delivered" in listed.out.getvalue()


def test_json_attach_to_a_finished_run_is_its_history_and_withdraw_says_why_not(
    dendrux_app: DendruxAppServer, flags: list[str]
) -> None:
    run_id = dendrux_app.start_run("answer: hello")
    wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="the run")
    attach = Run(["sessions", "attach", run_id, "--json", "--since", "3650d", *flags])()
    assert attach.code == 0, attach.err.getvalue()
    events = [json.loads(line) for line in attach.out.getvalue().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "session.started" and events[-1]["type"] == "session.ended"
    steps = [e for e in events if e["type"] == "model.step"]
    assert [(s["phase"], s["text"]) for s in steps] == [
        ("final_answer", "Nothing to do: here is the answer. Notes seen: 0.")
    ]
    withdraw = Run(["notes", "withdraw", "01M8P3TRQSAGWNBSZN3W1BM6CD", *flags])()
    assert withdraw.code != 0 and "cannot withdraw" in withdraw.err.getvalue()


def test_approvals_list_then_decline_with_a_comment_resumes_the_run(
    dendrux_app: DendruxAppServer, flags: list[str]
) -> None:
    run_id = dendrux_app.start_run("refund: order A-17 arrived broken; refund it.")
    wait_for(lambda: run_status(dendrux_app, run_id) == "waiting_approval", what="the approval pause")
    listed = Run(["approvals", "list", "--session", run_id, "-o", "id", *flags])()
    assert listed.code == 0, listed.err.getvalue()
    (call_id,) = listed.out.getvalue().split()
    declined = Run(["approvals", "decline", call_id, "--comment", "Needs a manager.", *flags])()
    assert declined.code == 0, declined.err.getvalue()
    wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="the resumed run")
    assert dendrux_app.get(f"/runs/{run_id}")["answer"].startswith("The refund was not approved")


async def test_the_app_attached_to_a_dendrux_run_shows_commentary_tools_and_the_approval(
    dendrux_app: DendruxAppServer,
) -> None:
    run_id = await asyncio.to_thread(dendrux_app.start_run, "refund: order A-17 arrived broken; refund it.")
    conn = Connection(dendrux_app.url, dendrux_app.token, backoff_initial=0.05, backoff_max=0.5)
    async with DendruxBackend(conn) as backend:
        app = PreloopApp(backend, start_session_id=run_id, refresh_interval=0)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            await until(pilot, lambda: isinstance(screen.status, Live), "the stream to go live")
            view = screen.query_one(TimelineView)
            await until(
                pilot, lambda: any("refund_order" in line for line in view.lines_text), "the gated call"
            )
            # The commentary's text is read from /traces, where it may land after the events that follow.
            await until(
                pilot,
                lambda: "Let me look up order A-17 first." in "\n".join(view.lines_text),
                "the commentary",
            )
            assert "lookup_order" in "\n".join(view.lines_text)
            await until(pilot, lambda: screen.approvals_panel.count > 0, "the approval in the panel")
            await pilot.press("escape", "a")  # out of the note box, then approve
            await until(
                pilot, lambda: any("Refunded $42.50" in line for line in view.lines_text), "the final answer"
            )
            assert screen.approvals_panel.count == 0
            assert not screen.check_action("withdraw", ()), "a Dendrux note cannot be withdrawn"
            await pilot.press("w")  # not offered, but pressed anyway: the screen says why
            await until(
                pilot,
                lambda: any("cannot withdraw a note" in m for m in said(app)),
                "the reason w does nothing",
            )


async def test_the_apps_timeline_says_dendrux_names_nobody_for_a_decision_made_elsewhere(
    dendrux_app: DendruxAppServer, flags: list[str]
) -> None:
    """A decision made from another shell: Dendrux keeps no decider, so the timeline's line says so in the
    words the CLI uses (``client.present.NOT_RECORDED``) instead of ending blank, as if nobody decided."""
    run_id = await asyncio.to_thread(dendrux_app.start_run, "refund: order A-17 arrived broken; refund it.")
    await asyncio.to_thread(
        wait_for, lambda: run_status(dendrux_app, run_id) == "waiting_approval", what="the approval"
    )
    listed = await asyncio.to_thread(Run(["approvals", "list", "--session", run_id, "--json", *flags]))
    [refund] = [a["id"] for a in json.loads(listed.out.getvalue())["items"]]
    declined = await asyncio.to_thread(Run(["approvals", "decline", refund, *flags]))
    assert declined.code == 0, declined.err.getvalue()
    conn = Connection(dendrux_app.url, dendrux_app.token, backoff_initial=0.05, backoff_max=0.5)
    async with DendruxBackend(conn) as backend:
        app = PreloopApp(backend, start_session_id=run_id, refresh_interval=0)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            view = app.screen.query_one(TimelineView)
            await until(
                pilot,
                lambda: any("approval declined" in line for line in view.lines_text),
                "the decision in the timeline",
            )
            [line] = [line for line in view.lines_text if "approval declined" in line]
            assert "refund_order" in line and f"({NOT_RECORDED})" in line, line


def test_a_note_for_a_finished_run_exits_1_with_the_same_sentence_as_every_server(
    dendrux_app: DendruxAppServer, flags: list[str]
) -> None:
    """The steer router's 409 (RunAlreadyTerminalError) is the client's SessionEnded, as on our server."""
    run_id = dendrux_app.start_run("answer: hello")
    wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="the run")
    sent = Run(["notes", "send", "--session", run_id, "too late", *flags])()
    assert sent.code == 1
    assert sent.out.getvalue() == ""
    assert sent.err.getvalue().startswith(
        f"preloop: session ended: run {run_id[:10]} has ended, so the note was not sent"
    )
    listed = Run(["notes", "list", "--session", run_id, "--json", *flags])()
    assert listed.code == 0 and json.loads(listed.out.getvalue())["notes"] == []


async def test_the_backend_keeps_the_routers_reason_and_a_409_stays_a_conflict(
    dendrux_app: DendruxAppServer,
) -> None:
    """SessionEnded carries Dendrux's own words, and code that catches any 409 still catches it."""
    from client.errors import Conflict, SessionEnded

    run_id = dendrux_app.start_run("answer: hello")
    await asyncio.to_thread(wait_for, lambda: run_status(dendrux_app, run_id) == "success", what="the run")
    async with DendruxBackend(Connection(dendrux_app.url, dendrux_app.token)) as backend:
        with pytest.raises(SessionEnded) as ended:
            await backend.send_note("too late", session_id=run_id)
        assert ended.value.status == 409 and ended.value.detail.startswith("RunAlreadyTerminalError")
        assert isinstance(ended.value, Conflict)


def test_approve_with_a_comment_is_refused_up_front_and_decided_approvals_are_listed(
    dendrux_app: DendruxAppServer, flags: list[str]
) -> None:
    """Dendrux's approve takes no reason: `--comment` with approve exits 2 before anything is decided
    (it was dropped silently). Decided approvals are listed by `--status declined|approved|all` with who
    decided and the comment (they listed nothing: only the pause a run waits in was asked)."""
    run_id = dendrux_app.start_run("refund voucher=yes: order A-17 arrived broken; refund it.")
    wait_for(lambda: run_status(dendrux_app, run_id) == "waiting_approval", what="the approval pause")
    listed = Run(["approvals", "list", "--session", run_id, "-o", "id", *flags])()
    refund, voucher = listed.out.getvalue().split()
    refused = Run(["approvals", "approve", refund, "--comment", "fine by me", *flags])()
    assert refused.code == 2, refused.err.getvalue()
    assert "takes no comment with an approval" in refused.err.getvalue() and refused.out.getvalue() == ""
    pending = Run(["approvals", "list", "--session", run_id, "--json", *flags])()
    assert [a["status"] for a in json.loads(pending.out.getvalue())["items"]] == ["pending", "pending"]

    assert Run(["approvals", "decline", refund, "--comment", "Needs a manager.", *flags])().code == 0
    assert Run(["approvals", "approve", voucher, *flags])().code == 0
    wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="the resumed run")
    for status, expected in (
        ("declined", [(refund, "declined", "Needs a manager.")]),
        ("approved", [(voucher, "approved", None)]),
        ("all", [(refund, "declined", "Needs a manager."), (voucher, "approved", None)]),
    ):
        shown = Run(["approvals", "list", "--status", status, "--json", *flags])()
        assert shown.code == 0, shown.err.getvalue()
        items = json.loads(shown.out.getvalue())["items"]
        assert [(a["id"], a["status"], a["approver_comment"]) for a in items] == expected, status
        # Dendrux records no decider: none is invented (not even "a person"), and the list says so once.
        assert all(a["resolved_at"] and a["decider"] is None and not a["decided_by_human"] for a in items)
        assert json.loads(shown.out.getvalue())["deciders_recorded_by_server"] is False
    table = Run(["approvals", "list", "--status", "declined", *flags])()
    assert table.code == 0 and "declined" in table.out.getvalue() and "refund_order" in table.out.getvalue()
    decided = Run(["approvals", "list", "--decided", *flags])().out.getvalue()
    assert decided.count("does not record who decided") == 1  # said once, no name made up
    assert "Needs a manager." in decided
