"""Typing is never a command (issue 23): the trial's exact key sequences, typed at a person's pace on the
app's clock (``TypingClock``), against the real local control plane.

The trial: attach a session with a pending call, press Escape (leave the note box), look away, type
``do not yet`` and Enter at ~8 keys a second: ``d`` opened "Decline this call?", the rest became its
comment, Enter declined. Here every sequence the issue lists is typed where no text box has the focus
(after Escape, after a dialog closed, in the inbox after F2, on the list), and after each: nothing is
decided (read from the server), no command ran (no screen or dialog left open, nothing exported or
copied, still attached), and no note was sent that the operator did not see whole in the box. The typing
itself is kept: in the note box (the line above it says so) or in the session's draft.

The local server gives a Bash call the risk "danger" and a Read call "caution": a danger call asks "are
you sure?" by default and approves on one key with ``PRELOOP_CONFIRM_RISK=none``; a caution call approves
on one key either way. Both, with both settings; every pace, each after a pause on each side of the guards'
thresholds (``GRID``), runs on the trial's own case (danger, default levels), the other three on a few
sequences each, so the run stays short.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from client.backends.base import Backend
from client.paths import exports_dir
from server.harness_client import HarnessClient, HarnessSession
from tests.conftest import LiveServer, said
from tests.tui.test_pilot import SIZE, attached, until
from tests.tui.test_type_ahead import (
    PERSON,
    QUIET,
    SLOW,
    TypingClock,
    ask,
    inbox_ready,
    on_top,
    press_alone,
    start,
    statuses,
    type_keys,
)
from tui.app import PreloopApp
from tui.screens.attach import CONFIRM_RISKS, AttachScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineCommentScreen
from tui.screens.inbox import InboxScreen
from tui.screens.sessions import SessionsScreen
from widgets.composer import ENTER_KEPT, TYPING_GOES

pytestmark = pytest.mark.type_ahead

DO_NOT_YET = [*"do not yet", "enter"]
AND_ALSO = [*"and also check", "enter"]
YES_DO_IT = [*"yes do it", "enter"]
A_YES = [*"a yes"]
DO_IT = [*"do it", "enter"]

ARGS: dict[str, dict[str, Any]] = {
    "Bash": {"command": "git push origin hotfix/discount-order"},
    "Read": {"path": "README.md"},
}
RISK = {"Bash": "danger", "Read": "caution"}
CONFIRM = {"default": CONFIRM_RISKS, "none": frozenset[str]()}


@dataclass(frozen=True)
class Case:
    """One sequence: the keys, seconds between two of them, and the pause before the first (after the
    Escape that left the note box, or after a dialog closed)."""

    keys: list[str]
    pace: float
    pause: float
    after_dialog: bool = False

    @property
    def text(self) -> str:
        return "".join(key for key in self.keys if len(key) == 1)

    def __str__(self) -> str:
        where = "a dialog closed" if self.after_dialog else "Escape"
        return f"{self.text!r} at {self.pace * 1000:.0f} ms/key, {self.pause} s after {where}"


GRID = [Case(DO_NOT_YET, pace, pause) for pace in (0.08, 0.125, 0.25) for pause in (0.4, 0.7, 3.0)]
"""The trial's sequence at each pace, after a pause on each side of the guards' thresholds (app's clock):
0.4 s is past a burst's gap (``BURST_GAP``, 0.3 s) but inside the type-ahead guard (``GUARD_SECONDS``,
0.5 s), 0.7 s just past the guard, 3 s long past both. Pauses of 1 s and 1.5 s fall on the same side of
every threshold as 0.7 s and 3 s; they run in ``OTHERS`` and ``FEW`` (1.5 s also with ``do not yet``)."""
OTHERS = [
    Case(AND_ALSO, 0.125, 1.5),
    Case(YES_DO_IT, 0.125, 1.0),
    Case(A_YES, 0.125, 0.4, after_dialog=True),
]
FEW = [Case(DO_NOT_YET, 0.125, 1.5), Case(AND_ALSO, 0.25, 0.7), Case(YES_DO_IT, 0.08, 3.0), *OTHERS[2:]]


@pytest.fixture(autouse=True)
def _approvals_wait_two_minutes(live_server: LiveServer) -> None:
    """These tests type for longer than the 20 s the test server lets an approval wait: two minutes here
    (an approval that expired mid-test would read as "decided")."""
    live_server.server.plane.approvals.timeout_seconds = 120.0


async def nothing_happened(app: PreloopApp, client: Backend, session: HarnessSession, what: str) -> None:
    """Nothing decided (the server says every approval still waits), no note sent, no command ran."""
    assert set(await statuses(client, session)) == {"pending"}, what
    assert (await client.list_notes(session_id=session.session_id)).notes == [], what
    exports = exports_dir()
    assert not exports.exists() or not any(exports.iterdir()), f"{what}: an export was written"
    assert not app.clipboard, f"{what}: {app.clipboard!r} was copied"
    assert app.is_running, what


async def stop_typing(pilot: Any, app: PreloopApp, clock: TypingClock) -> None:
    """The operator stops and looks: a letter still held would run now."""
    clock.advance(2.0)
    await until(pilot, lambda: not app.key_pace.holding, "no letter command left waiting")
    await pilot.pause()


async def type_after_escape(
    pilot: Any, app: PreloopApp, screen: AttachScreen, clock: TypingClock, case: Case
) -> None:
    """The operator is in the note box (empty), presses Escape (and, for some cases, opens and closes the
    decline dialog), pauses, and types the case's keys."""
    screen.composer.clear()
    screen.note_box.hint("")
    screen.set_focus(screen.composer)
    await pilot.pause()
    clock.advance(2.0)
    await type_keys(pilot, clock, ["escape"])
    if case.after_dialog:
        await press_alone(pilot, clock, "d")
        await until(pilot, lambda: on_top(app, DeclineCommentScreen), "the decline dialog")
        await type_keys(pilot, clock, ["escape"], SLOW)
        await until(pilot, lambda: app.screen is screen, "the dialog closed")
    clock.advance(case.pause - case.pace)  # (each key comes ``pace`` after the one before)
    await type_keys(pilot, clock, case.keys, case.pace)
    await stop_typing(pilot, app, clock)


@pytest.mark.parametrize(
    ("tool", "confirm", "cases"),
    [
        *(
            pytest.param("Bash", "default", GRID[n : n + 3], id=f"danger-confirm_default-{pace}s")
            for n, pace in ((0, 0.08), (3, 0.125), (6, 0.25))
        ),
        pytest.param("Bash", "default", OTHERS, id="danger-confirm_default-others"),
        pytest.param("Bash", "none", FEW, id="danger-confirm_none"),
        pytest.param("Read", "default", FEW, id="caution-confirm_default"),
        pytest.param("Read", "none", FEW, id="caution-confirm_none"),
    ],
)
async def test_the_trials_typing_after_escape_is_text_in_the_note_box(
    client: Backend, harness: HarnessClient, tool: str, confirm: str, cases: list[Case]
) -> None:
    """Each sequence, typed after leaving the note box, lands whole in the note box (which takes the
    focus and says "Typing goes to the note box — Enter sends"); its Enter sends nothing, nothing is
    decided, no command runs. A ``d`` and an Enter pressed alone afterwards still decline."""
    mine = await start(harness, "builder")
    call = ask(mine, tool, ARGS[tool])
    clock = TypingClock()
    app = PreloopApp(
        client,
        start_session_id=mine.session_id,
        monotonic=clock,
        alert_settings=QUIET,
        confirm_risks=CONFIRM[confirm],
    )
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        assert screen.approvals_panel.selected is not None
        assert screen.approvals_panel.selected.risk_level == RISK[tool]
        for case in cases:
            await type_after_escape(pilot, app, screen, clock, case)
            what = str(case)
            assert app.screen is screen and app.screen_stack[-1] is screen, what  # no dialog, no screen
            assert screen.composer.has_focus, what
            assert screen.composer.text == case.text, what  # the whole typing, in the box
            hint = str(screen.note_box.typing_hint.render())
            assert (ENTER_KEPT if "enter" in case.keys else TYPING_GOES) in hint, what
            await nothing_happened(app, client, mine, what)
            assert not call.done(), what
        # Deliberate keys still decide: d pressed alone, then Enter read and pressed alone.
        screen.composer.clear()
        await type_keys(pilot, clock, ["escape"], SLOW)
        await press_alone(pilot, clock, "d")
        await until(pilot, lambda: on_top(app, DeclineCommentScreen), "the decline dialog")
        await type_keys(pilot, clock, ["enter"], SLOW)
        assert (await asyncio.wait_for(call, 10)).decision == "deny"


async def test_a_slow_typist_who_leaves_a_d_alone_still_declines_nothing(
    client: Backend, harness: HarnessClient
) -> None:
    """``do not yet`` and Enter at 0.4 s a key (slower than a burst): the ``d`` stands alone and opens
    the decline dialog, the rest goes into its comment box, and the Enter declines nothing (the comment
    was begun as the dialog opened; it says to press Enter again). ``a yes`` at 0.6 s a key on the
    danger call: the question opens, and its ``y`` (read in time) is not taken after the space typed into
    it."""
    mine = await start(harness, "builder")
    call = ask(mine, "Bash", ARGS["Bash"])
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=mine.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await type_keys(pilot, clock, ["escape"], SLOW)
        clock.advance(1.5)
        await type_keys(pilot, clock, DO_NOT_YET, 0.4)
        await stop_typing(pilot, app, clock)
        dialog = app.screen
        assert isinstance(dialog, DeclineCommentScreen)
        assert "Press Enter again" in str(dialog.query_one("#too-soon").render())
        await nothing_happened(app, client, mine, "do not yet at 0.4 s a key")
        await type_keys(pilot, clock, ["escape"], SLOW)
        await until(pilot, lambda: app.screen is screen, "the dialog closed")
        clock.advance(1.5)
        await type_keys(pilot, clock, A_YES, 0.6)
        await stop_typing(pilot, app, clock)
        question = app.screen
        assert isinstance(question, ConfirmScreen)
        assert "letters were typed into this question" in str(question.query_one("#too-soon").render())
        await nothing_happened(app, client, mine, "a yes at 0.6 s a key")
        assert not call.done()
    await mine.end()
    await call


async def test_a_dialog_opened_by_a_letter_of_a_burst_closes_and_gives_the_keys_back(
    client: Backend, harness: HarnessClient
) -> None:
    """The terminal stamps each key as it reads it; a key typed 0.1 s after ``d`` can be read after the
    ``d`` already ran (a busy app). Then the decline dialog it opened closes, deciding nothing, and both
    letters go to the note box."""
    mine = await start(harness, "builder")
    call = ask(mine, "Bash", ARGS["Bash"])
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=mine.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: screen.approvals_panel.count == 1, "the approval")
        await type_keys(pilot, clock, ["escape"], SLOW)
        await press_alone(pilot, clock, "d", wait=0.4)
        await until(pilot, lambda: on_top(app, DeclineCommentScreen), "the dialog the d opened")
        clock.now -= 0.3  # the next key was typed (and stamped) 0.1 s after the d
        await type_keys(pilot, clock, "o not yet", PERSON)
        await stop_typing(pilot, app, clock)
        assert app.screen is screen and screen.composer.text == "do not yet"
        await nothing_happened(app, client, mine, "a late key of the burst")
        assert not call.done()
    await mine.end()
    await call


async def test_typing_in_the_inbox_after_f2_goes_to_the_draft_and_opens_nothing(
    client: Backend, harness: HarnessClient
) -> None:
    """The trial: ``nabc`` in the note box, F2 (the inbox), ``do it`` and Enter at 120 ms a key; the
    ``o`` opened the session and Enter sent ``nabc it``. Now the inbox stays, nothing is decided or
    opened, and the typing is kept in the draft of the session the inbox was opened from (a notice says
    so). The same for the other sequences."""
    mine, other = await start(harness, "builder"), await start(harness, "releaser")
    here, there = ask(mine, "Bash", ARGS["Bash"]), ask(other, "Read", ARGS["Read"])
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=mine.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=(140, 30), notifications=True) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: app.inbox_count == 2, "both approvals in the inbox")
        for keys, pace in ((DO_IT, 0.12), (DO_NOT_YET, 0.08), (A_YES, 0.25), (YES_DO_IT, 0.125)):
            what = f"{''.join(k for k in keys if len(k) == 1)!r} at {pace} s a key in the inbox"
            screen.composer.clear()
            clock.advance(2.0)
            await type_keys(pilot, clock, "nabc")
            await type_keys(pilot, clock, ["f2"])
            await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
            clock.advance(0.3)
            await type_keys(pilot, clock, keys, pace)
            await stop_typing(pilot, app, clock)
            assert on_top(app, InboxScreen), what
            typed = "".join(k for k in keys if len(k) == 1)
            assert screen.composer.text == f"nabc{typed}", what
            assert app.drafts.get(mine.session_id) == f"nabc{typed}", what
            assert any("draft of" in m for m in said(app)), what
            await nothing_happened(app, client, mine, what)
            await nothing_happened(app, client, other, what)
            await type_keys(pilot, clock, ["escape"], SLOW)
            await until(pilot, lambda: app.screen is screen, "back from the inbox")
    await mine.end()
    await other.end()
    await asyncio.gather(here, there)


async def test_typing_right_after_o_opens_a_session_is_not_sent_before_it_is_read(
    client: Backend, harness: HarnessClient
) -> None:
    """From the inbox, ``o`` pressed alone opens the session, whose note box holds the draft ``nabc``;
    ``do it`` and Enter typed 0.1 s after it appeared go into the box, and that Enter sends nothing (the
    line above the box says why). An Enter pressed after reading it sends the note, whole."""
    mine = await start(harness, "builder")
    call = ask(mine, "Bash", ARGS["Bash"])
    clock = TypingClock()
    app = PreloopApp(client, refresh_interval=0, monotonic=clock, alert_settings=QUIET)
    app.drafts.put(mine.session_id, "nabc")
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: app.inbox_count == 1, "the approval in the inbox")
        await press_alone(pilot, clock, "i")
        await until(pilot, lambda: inbox_ready(app), "the inbox, an approval highlighted")
        await press_alone(pilot, clock, "o")
        await until(pilot, lambda: on_top(app, AttachScreen), "the session")
        screen = app.screen
        assert isinstance(screen, AttachScreen)
        await until(pilot, lambda: screen.composer.has_focus, "the note box")
        clock.advance(0.1 - 0.12)
        await type_keys(pilot, clock, DO_IT, 0.12)
        await stop_typing(pilot, app, clock)
        assert screen.composer.text == "nabcdo it"
        assert ENTER_KEPT in str(screen.note_box.typing_hint.render())
        await nothing_happened(app, client, mine, "do it right after o")
        await type_keys(pilot, clock, ["enter"], SLOW)  # read, then sent
        await until(pilot, lambda: screen.composer.text == "", "the note sent")
        notes = await client.list_notes(session_id=mine.session_id)
        assert [n.text for n in notes.notes] == ["nabcdo it"]
        assert await statuses(client, mine) == ["pending"] and not call.done()
    await mine.end()
    await call


async def test_a_burst_on_the_sessions_list_is_not_taken_as_keys(
    client: Backend, harness: HarnessClient
) -> None:
    """On the list (no note box anywhere): ``quick look`` and Enter, ``ia``, ``a yes`` at a person's pace
    open nothing (not the inbox, not a session: the Enter is swallowed), quit nothing, filter nothing;
    a notice says the keys were not taken."""
    mine = await start(harness, "builder")
    call = ask(mine, "Read", ARGS["Read"])
    clock = TypingClock()
    app = PreloopApp(client, refresh_interval=0, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=(140, 30), notifications=True) as pilot:
        await until(pilot, lambda: on_top(app, SessionsScreen), "the sessions list")
        await until(pilot, lambda: app.inbox_count == 1, "the approval in the inbox")
        listing = app.screen
        for keys in ([*"quick look", "enter"], [*"ia"], A_YES):
            clock.advance(2.0)
            await type_keys(pilot, clock, keys, PERSON)
            await stop_typing(pilot, app, clock)
            assert app.screen is listing and app.is_running, keys
            assert any("not taken" in m for m in said(app))
            await nothing_happened(app, client, mine, str(keys))
    await mine.end()
    await call


async def test_holding_k_down_moves_and_types_nothing(client: Backend, harness: HarnessClient) -> None:
    """Key repeat of a moving key (``k`` held down, 30 a second) is a burst of nothing but moving: it
    moves the highlight up the timeline and puts nothing in the note box; a word typed after it is text."""
    mine = await start(harness, "builder")
    for n in range(12):
        await mine.narrate(2 + n, [f"Step {n}: looking at the next file."])
    clock = TypingClock()
    app = PreloopApp(client, start_session_id=mine.session_id, monotonic=clock, alert_settings=QUIET)
    async with app.run_test(size=SIZE) as pilot:
        screen = await attached(pilot, app)
        await until(pilot, lambda: "Step 11" in "\n".join(screen.view.lines_text), "the narration")
        await type_keys(pilot, clock, ["escape"], SLOW)
        clock.advance(1.0)
        await type_keys(pilot, clock, ["k"], PERSON)
        first = screen.view.cursor_id
        await type_keys(pilot, clock, "kkkkkkkk", 0.03)
        await stop_typing(pilot, app, clock)
        assert screen.view.cursor_id != first and not screen.composer.has_focus
        assert screen.composer.text == "" and app.screen is screen
        clock.advance(1.0)
        await type_keys(pilot, clock, "keep going", PERSON)
        await stop_typing(pilot, app, clock)
        assert screen.composer.has_focus and screen.composer.text == "keep going"
    await mine.end()
