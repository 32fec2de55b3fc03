"""Operator safety: text typed for the note box never acts as a key command, and nothing decides an
approval on a key typed before the operator could see the question.

The app runs against the real local control plane over loopback. The type-ahead guards and the key pace
(``tui.keypace``) run on a clock the test moves (``TypingClock``): keys are typed at a person's pace (80 ms
apart) or at a slow typist's (0.8 s between two keys), and a letter command is pressed alone
(``press_alone``: nothing typed just before or after it, so its quiet window passes and it runs). These
tests are marked ``type_ahead``: the guard keeps its real half second and bursts of typing are text here
(the other tests press every key alone, see ``tests/conftest.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from textual.widgets import Static

import tui.app
from client.alerts import AlertSettings
from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from client.ids import short_id
from server.harness_client import HarnessClient, HarnessSession
from tests.conftest import LiveServer, said
from tests.tui.test_pilot import SIZE, attached, plain, until
from tui.app import PreloopApp
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.inbox import InboxScreen
from tui.screens.sessions import SessionsScreen
from widgets.inbox_view import InboxApprovals

pytestmark = pytest.mark.type_ahead

PERSON = 0.08
"""Seconds between two keys of a person typing."""
SLOW = 0.8
"""Seconds between two keys of a slow typist (longer than the guard's half second)."""

QUIET = AlertSettings(enabled=False)


class TypingClock:
    """The type-ahead guards' clock, moved only by the test (``advance``) as keys are typed."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Time passes (before the next key)."""
        self.now += seconds


async def type_keys(pilot: Any, clock: TypingClock, keys: str | list[str], pace: float = PERSON) -> None:
    """Type ``keys`` one by one, ``pace`` seconds apart on the guards' clock (the clock stays at the last
    key: a letter command typed last still waits for its quiet window, see ``press_alone``)."""
    for key in keys:
        clock.advance(pace)
        await pilot.press(key)


async def press_alone(
    pilot: Any, clock: TypingClock, key: str, after: float = SLOW, wait: float = 1.0
) -> None:
    """Press ``key`` as one deliberate key: ``after`` seconds after the last key, and nothing typed for
    ``wait`` seconds after it, so a letter command's quiet window passes and it runs (``tui.keypace``)."""
    clock.advance(after)
    await pilot.press(key)
    clock.advance(wait)
    await until(pilot, lambda: not pilot.app.key_pace.holding, f"{key!r} pressed alone to run")


async def start(harness: HarnessClient, name: str) -> HarnessSession:
    session = await harness.start_session(agent_name=name, title=f"{name} at work")
    await session.run_started("work")
    await session.narrate(1, ["Looking at the test first."])
    return session


def ask(session: HarnessSession, tool: str, args: dict[str, Any], **kwargs: Any) -> asyncio.Task[Any]:
    return asyncio.create_task(session.permission_check(tool, args, ask=True, **kwargs))


async def statuses(client: Backend, session: HarnessSession) -> list[str]:
    page = await client.list_approvals(session_id=session.session_id, status=None)
    return sorted(a.status for a in page.items)


def on_top(app: PreloopApp, kind: type[Any]) -> bool:
    """A screen of ``kind`` is on top and mounted (its guard armed: the keys typed next count from there)."""
    return isinstance(app.screen, kind) and app.screen.is_mounted


def inbox_ready(app: PreloopApp) -> bool:
    """The inbox is on top with an approval highlighted: its keys (decide, open, mark) have a row to act
    on. Its rows arrive after the screen mounts; a key pressed before then does nothing."""
    screen = app.screen
    return on_top(app, InboxScreen) and screen.query_one(InboxApprovals).selected is not None


@pytest.mark.parametrize("pace", [PERSON, SLOW], ids=["person", "slow-typist"])
async def test_typing_on_after_the_session_ends_decides_nothing_anywhere(
    client: Backend, harness: HarnessClient, pace: float
) -> None:
    """The session ends while the operator types "i am ready" in its note box; another session waits on
    a danger call and a one-key (low-risk) call. The box stays, keeps the focus and every letter typed
    after the end; no screen opens, nothing is decided anywhere, and the box says why nothing is sent."""
    mine, other = await start(harness, "builder"), await start(harness, "releaser")
    danger = ask(other, "Bash", {"command": "git push origin hotfix/discount-order"})
    one_key = ask(other, "Read", {"path": "README.md"})
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=mine.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: app.inbox_count == 2, "both approvals waiting in the inbox")
        await type_keys(pilot, clock, "i am ")
        await mine.end("finished its shift")
        await until(pilot, lambda: screen.ended, "the end of the session")
        await type_keys(pilot, clock, "ready", pace)
        clock.advance(2.0)
        await pilot.pause(0.3)
        await type_keys(pilot, clock, " ya d y", pace)  # more, after a pause: still only text
        await type_keys(pilot, clock, ["enter"], pace)
        await pilot.pause(0.3)
        assert app.screen is screen and screen.composer.has_focus
        assert screen.composer.text == "i am ready ya d y"
        assert "your draft is kept; Esc to leave" in str(screen.composer.border_title)
        assert await statuses(client, other) == ["pending", "pending"]
        assert not danger.done() and not one_key.done()
        await pilot.press("escape")  # the operator leaves the box: only now do letters act
        assert not screen.note_box.display
        assert app.drafts.get(mine.session_id) == "i am ready ya d y"
    await other.end()
    await asyncio.gather(danger, one_key)


async def test_the_inbox_ignores_a_decision_key_typed_as_it_opens(
    client: Backend, harness: HarnessClient
) -> None:
    """``i`` then, 80 ms after the inbox appeared, ``a`` (pressed alone) does not approve the low-risk call
    on top of the inbox (one notice says why); an ``a`` pressed later, after the operator could read it,
    does."""
    other = await start(harness, "releaser")
    one_key = ask(other, "Read", {"path": "README.md"})
    clock = TypingClock()
    app = PreloopApp(client, refresh_interval=0, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=(140, 30), notifications=True) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions list")
        await until(pilot, lambda: app.inbox_count == 1, "the approval in the inbox")
        await press_alone(pilot, clock, "i")
        await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
        await press_alone(pilot, clock, "a", after=PERSON)
        await pilot.pause(0.3)
        assert not one_key.done() and await statuses(client, other) == ["pending"]
        assert sum("only just opened" in m for m in said(app)) == 1
        await press_alone(pilot, clock, "a")
        assert (await asyncio.wait_for(one_key, 10)).decision == "allow"
    await other.end()


@pytest.mark.parametrize("pace", [PERSON, SLOW], ids=["person", "slow-typist"])
async def test_the_attach_screen_ignores_a_and_d_right_after_the_note_box_is_left(
    client: Backend, agent: HarnessSession, pace: float
) -> None:
    """Escape (leaving the note box) then ``a`` pressed alone 80 ms later approves nothing (one notice says
    why); pressed after a moment, it approves."""
    one_key = ask(agent, "Read", {"path": "README.md"})
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=agent.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await type_keys(pilot, clock, ["escape"])
        await press_alone(pilot, clock, "a", after=pace)
        if pace < 0.5:
            await pilot.pause(0.3)
            assert app.screen is screen and not one_key.done()
            assert any("only just changed" in m for m in said(app))
            await press_alone(pilot, clock, "a")
        assert (await asyncio.wait_for(one_key, 10)).decision == "allow"


@pytest.mark.parametrize("pace", [PERSON, SLOW], ids=["person", "slow-typist"])
async def test_are_you_sure_names_what_it_decides_and_ignores_a_yes_typed_as_it_opens(
    client: Backend, agent: HarnessSession, pace: float
) -> None:
    """``a`` on a danger call asks, naming the session, the tool and the arguments; a ``y`` pressed right
    after the question appeared answers nothing; a ``y`` pressed 0.8 s after it approves."""
    danger = ask(agent, "Bash", {"command": "git push origin hotfix/discount-order"})
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=agent.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await type_keys(pilot, clock, ["escape"])
        await press_alone(pilot, clock, "a")
        await until(pilot, lambda: on_top(app, ConfirmScreen), "the question")
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        shown = plain(confirm.query_one("#question", Static).content) + plain(confirm.detail)
        assert short_id(agent.session_id) in shown and "builder" in shown
        assert "Bash" in shown and "git push origin hotfix/discount-order" in shown
        await press_alone(pilot, clock, "y", after=pace)
        await pilot.pause(0.3)
        if pace < 0.5:
            assert app.screen is confirm and not danger.done()
            await press_alone(pilot, clock, "y")
        assert (await asyncio.wait_for(danger, 10)).decision == "allow"


async def test_the_decline_box_ignores_enter_typed_as_it_opens(
    client: Backend, agent: HarnessSession
) -> None:
    """``d`` opens the comment box; "no" and Enter at a person's pace decline nothing (the box says to
    press Enter again); Enter 0.8 s later declines with the comment."""
    call = ask(agent, "Bash", {"command": "make deploy"})
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=agent.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await type_keys(pilot, clock, ["escape"])
        await press_alone(pilot, clock, "d")
        await until(pilot, lambda: on_top(app, DeclineCommentScreen), "the comment box")
        dialog = app.screen
        assert isinstance(dialog, DeclineCommentScreen)
        assert "make deploy" in plain(dialog.query_one("#detail", Static).content)
        await type_keys(pilot, clock, ["n", "o", "enter"])
        await pilot.pause(0.3)
        assert app.screen is dialog and not call.done()
        await type_keys(pilot, clock, ["enter"], SLOW)
        verdict = await asyncio.wait_for(call, 10)
        assert verdict.decision == "deny" and "no" in (verdict.reason or "")


async def test_a_decline_comment_whose_approval_was_decided_elsewhere_becomes_a_draft_note(
    client: Backend, agent: HarnessSession, live_server: LiveServer
) -> None:
    """While the operator types a decline comment, another operator approves: the dialog says so and
    decides nothing; what is still typed lands in it; Enter closes it and the comment is in the note box
    (focused), ready to be sent as a note."""
    call = ask(agent, "Bash", {"command": "make deploy"})
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=agent.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await type_keys(pilot, clock, ["escape"])
        await press_alone(pilot, clock, "d")
        await until(pilot, lambda: on_top(app, DeclineCommentScreen), "the comment box")
        dialog = app.screen
        assert isinstance(dialog, DeclineCommentScreen)
        await type_keys(pilot, clock, "not on prod")
        dana = live_server.add_operator("dana")
        async with await connect(Settings(live_server.url, dana, server_kind="local")) as other:
            await other.approve(next(iter(screen.approvals_panel.approvals)), "ship it")
        assert (await asyncio.wait_for(call, 10)).decision == "allow"
        await until(pilot, lambda: dialog.settled is not None, "the dialog to say it was approved elsewhere")
        assert "approved by dana " in (dialog.settled or "")  # the colleague, by name (issue 24)
        await type_keys(pilot, clock, "!")
        await type_keys(pilot, clock, ["enter"], SLOW)
        await until(pilot, lambda: app.screen is screen, "the dialog closed")
        assert screen.composer.has_focus and screen.composer.text == "not on prod!"
        assert await statuses(client, agent) == ["approved"]
        await type_keys(pilot, clock, ["enter"], SLOW)  # it can still go as a note
        await until(pilot, lambda: screen.composer.text == "", "the note sent")
        notes = await client.list_notes(session_id=agent.session_id)
        assert [n.text for n in notes.notes] == ["not on prod!"]


async def test_a_decline_comment_from_the_inbox_whose_approval_expired_is_kept_as_a_draft(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    """From the inbox: the approval expires while the comment is typed; the dialog says so, keeps the
    keys, and closing it keeps the comment as the session's draft note (the inbox has no note box)."""
    other = await start(harness, "releaser")
    call = ask(other, "Bash", {"command": "make deploy"})
    clock = TypingClock()
    app = PreloopApp(client, refresh_interval=0, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.inbox_count == 1, "the approval in the inbox")
        await press_alone(pilot, clock, "i")
        await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
        await press_alone(pilot, clock, "d")
        await until(pilot, lambda: on_top(app, DeclineCommentScreen), "the comment box")
        dialog = app.screen
        assert isinstance(dialog, DeclineCommentScreen)
        await type_keys(pilot, clock, "too risky")
        (waiting,) = app.inbox.approvals
        await live_server.expire_approval(waiting.id)  # its time comes while the comment is typed
        verdict = await asyncio.wait_for(call, 15)
        assert (verdict.decision, verdict.timed_out) == ("deny", True)
        await until(pilot, lambda: dialog.settled is not None, "the dialog to say it expired")
        assert "expired" in (dialog.settled or "")
        await type_keys(pilot, clock, "a")  # lands in the box, approves nothing
        await type_keys(pilot, clock, ["escape"], SLOW)
        await until(pilot, lambda: on_top(app, InboxScreen), "back in the inbox")
        assert app.drafts.get(other.session_id) == "too riskya"
    await other.end()


async def test_an_approval_about_to_expire_raises_one_alert(
    client: Backend, harness: HarnessClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An approval with a minute left rings once (not every second after), before it expires. The app's
    clock is the test's: its expiry checks (one a second) see the time the test sets, however late they
    run. The checks come ten times a second here instead of once (the test counts checks, not seconds)."""
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setattr(tui.app, "EXPIRY_CHECK_SECONDS", 0.1)
    other = await start(harness, "releaser")
    call = ask(other, "Bash", {"command": "make deploy"})
    now = [datetime.now(UTC) - timedelta(hours=1)]
    written: list[str] = []
    app = PreloopApp(
        client,
        refresh_interval=0,
        clock=lambda: now[0],
        alert_settings=AlertSettings(bell=True, desktop="osc9", min_interval=0.0),  # a repeat would ring
        alert_write=written.append,
    )
    checks = [0]
    check_expiring = app.check_expiring

    def counted_check() -> None:
        check_expiring()
        checks[0] += 1

    app.check_expiring = counted_check  # type: ignore[method-assign]

    async def checked(times: int) -> None:
        """The app has looked for approvals about to expire ``times`` more times."""
        target = checks[0] + times
        await until(pilot, lambda: checks[0] >= target, f"{times} more expiry checks")

    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.inbox_count == 1, "the approval in the inbox")
        written.clear()  # an "approval needed" alert of its arrival (written with the count, if at all)
        (approval,) = app.inbox.approvals
        assert approval.expires_at is not None
        await checked(1)  # first seen an hour before its expiry
        now[0] = approval.expires_at - timedelta(seconds=65)
        await checked(2)
        assert written == []  # over a minute left: nothing to say
        now[0] = approval.expires_at - timedelta(seconds=50)  # under a minute left
        await until(pilot, lambda: bool(written), "the expiry alert")
        await checked(3)
        assert len(written) == 1 and "Approval expires in" in written[0] and "make deploy" in written[0]
    await other.end()
    await call


class SlowNotes(httpx.AsyncBaseTransport):
    """The real server behind a connection where sending a note hangs until the test lets it through
    (a slow server, which the real one cannot be on demand)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.gate = asyncio.Event()
        self.held = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/operator-notes"):
            self.held.set()
            await self.gate.wait()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_letters_typed_while_a_note_is_on_its_way_stay_text(
    live_server: LiveServer, agent: HarnessSession
) -> None:
    """A note is sent to a slow server; the operator goes on typing (``a``, ``d``, ``q``...). The letters
    land in the box, not on the screen's keys; when the server answers, only the sent note leaves it."""
    one_key = ask(agent, "Read", {"path": "README.md"})
    transport = SlowNotes()
    clock = TypingClock()
    async with await connect(
        Settings(live_server.url, live_server.token, server_kind="local"), transport=transport
    ) as slow:
        app = PreloopApp(slow, start_session_id=agent.session_id, monotonic=clock, alert_settings=QUIET)
        async with app.run_test(size=SIZE) as pilot:
            screen = await attached(pilot, app)
            await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
            clock.advance(1.0)  # the operator looks at the box before typing (Enter sends what they read)
            await type_keys(pilot, clock, [*"run the tests", "enter"])
            await asyncio.wait_for(transport.held.wait(), 10)
            await type_keys(pilot, clock, "and add a dq", SLOW)
            await type_keys(pilot, clock, ["enter"])  # not a second send while the first is on its way
            assert app.screen is screen and app.is_running and not one_key.done()
            transport.gate.set()
            await until(pilot, lambda: screen.composer.text == "and add a dq", "only the sent note gone")
            notes = await slow.list_notes(session_id=agent.session_id)
            assert [n.text for n in notes.notes] == ["run the tests"]
    await agent.end()
    await one_key


async def test_nothing_takes_the_focus_while_the_operator_types(
    client: Backend, harness: HarnessClient, live_server: LiveServer
) -> None:
    """While the operator types a note: an approval arrives here and in another session (panel, inbox
    count, alert), a note changes state, a toast shows. The box keeps the focus and every letter; no
    screen is pushed."""
    mine, other = await start(harness, "builder"), await start(harness, "releaser")
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=mine.session_id, monotonic=clock)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        stack = list(app.screen_stack)
        await type_keys(pilot, clock, "first ")
        here = ask(mine, "Read", {"path": "a.txt"})
        there = ask(other, "Bash", {"command": "make deploy"})
        await type_keys(pilot, clock, "second ")
        await until(
            pilot, lambda: screen.approvals_panel.count == 1 and app.inbox_count == 2, "the approvals"
        )
        async with await connect(
            Settings(live_server.url, live_server.token, server_kind="local")
        ) as elsewhere:
            await elsewhere.send_note("from a colleague", session_id=mine.session_id)
        screen.notify("a toast")
        await type_keys(pilot, clock, "third")
        await pilot.pause(0.3)
        assert app.screen_stack == stack and screen.composer.has_focus
        assert screen.composer.text == "first second third"
        assert not here.done() and not there.done()
    await mine.end()
    await other.end()
    await asyncio.gather(here, there)


@pytest.fixture
async def agent(live_server: LiveServer) -> AsyncIterator[HarnessSession]:
    async with live_server.harness() as harness:
        session = await harness.start_session(agent_name="builder", cwd="/work/repo", title="Fix the build")
        await session.run_started("Fix the failing test")
        await session.narrate(1, ["Looking at the test first."])
        yield session


async def test_a_terminal_too_small_to_show_the_approval_decides_nothing(
    client: Backend, agent: HarnessSession
) -> None:
    """Shrunk below the smallest readable size, the screen hides everything (the note box included, so
    keys reach the screen for q): a and d then decide nothing, since the operator cannot see what."""
    one_key = ask(agent, "Read", {"path": "README.md"})
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=agent.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await pilot.resize_terminal(40, 10)
        await until(pilot, lambda: screen.has_class("-too-small"), "the too-small notice")
        await type_keys(pilot, clock, "ad", SLOW)
        await pilot.pause(0.3)
        assert app.screen is screen and not one_key.done()
    await agent.end()
    await one_key
