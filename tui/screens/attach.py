"""The attach screen: watch one session live and steer it (notes, approvals) without stopping it.

Layout: header, a banner for states that must not be missed (reconnecting, refused, ended), the body
(``widgets.session_body``: the timeline pane beside the approvals and notes, stacked when narrow; the pane,
``widgets.timeline_pane``, does find, views, problem jumps and copy) and the note box
(``widgets.composer.NoteBox``; hidden in read-only mode and once the session ended).

The session's state is a ``client.session.SessionCore`` (timeline, notes, pending approvals, row, status,
the REST/stream merge); steering goes through ``client.steering`` (approvals through a ``Decider``, as in
the inbox). This screen times and draws: as soon as it is composed one worker asks for the row and both
lists and another takes the stream (``SessionCore.follow``: the core applies each event as it arrives and
says what changed). What changed is painted at most once per frame (``FRAME``: the one throttle between
the stream and the screen; the changes of a frame are joined), the first at once (the operator sees the
session, then it catches up), and while it catches up (the core still has what it read of the stored tail
to apply: ``SessionCore.behind``) at most every ``CATCH_UP_FRAME``; a stream status is drawn at once. The
keys line is mounted once the backlog is in (or ``FOOTER_AT_THE_LATEST`` after the mount).
The app keeps the screen of every followed session (``tui.following``); ``q`` removes it. "New since you
last looked" (the mark, the rule, the digest) is ``widgets.last_looked``'s, told of each change.

Focus. The note box has the focus on attach, so what the user types becomes a note, never a key action
(``a`` approves!); Escape leaves it. A box being typed into when the session ends stays, with the focus
and the draft, until Escape. Nothing else moves the focus by itself, except typing: a burst of keys that
reaches no text box (``tui.keypace``) is given to the note box (:meth:`AttachScreen.take_typing`), which
takes the focus and says "Typing goes to the note box — Enter sends". ``a`` / ``d`` are ignored for half
a second after the screen is shown, the terminal gets the focus back, or the focus leaves the note box (or
the find line: its letters are text too), counted to when the key was pressed.

Enter sends only what the operator could read: the note box has its own guard, armed whenever it gets
the focus (attach, shown again, a dialog closed, typing given to it, the terminal focused again), and an
Enter (or Ctrl+S) that ends typing begun less than half a second after that sends nothing; the line
above the box says so, and the next Enter sends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import MountError, Widget

from client.backends.base import Backend
from client.drafts import DraftStore
from client.entry_words import Reading
from client.errors import AuthError
from client.marks import MarkStore
from client.models import Approval, Note
from client.paths import exports_dir
from client.session import SessionChange, SessionCore
from client.status import Connecting, Live, Refused
from client.steering import DecideOutcome, SendOutcome, Steering
from client.streaming.policy import login_reason
from tui.keypace import pace_of
from tui.screens.arguments import whole_call
from tui.screens.decide import CONFIRM_RISKS, Decider
from tui.screens.decline_comment import KeptComment
from tui.screens.withdraw_pick import ask_withdraw
from tui.typeahead import Monotonic, TypeAheadGuard
from widgets.approvals_panel import ApprovalsPanel
from widgets.banner import Banner, status_notice
from widgets.composer import ENTER_KEPT, TYPING_GOES, Composer, NoteBox
from widgets.inbox_view import InboxBadge
from widgets.keys_line import KeysLine
from widgets.last_looked import LastLooked
from widgets.notes_panel import NotesPanel
from widgets.notices import nothing_to_withdraw, steering_notice, tell
from widgets.session_body import SessionBody
from widgets.session_header import SessionHeader
from widgets.standing import StandingBanner
from widgets.timeline_view import TimelineView
from widgets.too_small import TooSmall

__all__ = ["CONFIRM_RISKS", "HISTORY_EVENTS", "AttachScreen"]

FRAME = 1 / 60  # what the stream changed is painted at most this often
CATCH_UP_FRAME = 0.1  # ... and while the core is still applying what it read (a backlog), this often
HISTORY_EVENTS = 5_000  # the newest stored events read on attach: a session of 100,000 opens at once
FIRST_PAINT_WAIT = 0.25  # after the first event, the backlog waits (at most this) for its frame to paint
FOOTER_AT_THE_LATEST = 0.5  # the keys line comes once the events are in, or this long after the mount
PAINT_BACKLOG = 1_000  # changes waiting for a frame beyond this many are joined (memory stays bounded)
SIDE_PANEL_BELOW = 90  # narrower: the side column goes under the timeline, the notes list a toggle (p)
MIN_SIZE = (50, 14)  # below this many columns × rows one notice replaces a crushed layout


def _key(
    key: str, action: str, text: str, tip: str, *, show: bool = True, shown: str | None = None
) -> Binding:
    return Binding(key, action, text, show=show, key_display=shown, id=f"attach.{action}", tooltip=tip)


class AttachScreen(Screen[None]):
    """One session, live. ``leave(detach)`` is the app's callback for Escape (False) and ``q`` (True)."""

    AUTO_FOCUS = "#composer"  # typing goes into the note box from the start
    CSS_PATH = "attach.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        _key("a", "approve", "Approve", "Approve the highlighted approval"),
        _key("d", "decline", "Decline", "Decline (with an optional comment)"),
        _key(
            "A",
            "allow_like",
            "Allow like this",
            "Allow (or mute) calls like this one for a while",
            show=False,
        ),
        _key("x", "expand_args", "Whole call", "The highlighted approval's call in full", show=False),
        _key("w", "withdraw", "Withdraw", "Withdraw a pending note"),
        _key("w", "withdraw_none", "Withdraw", "Why nothing can be withdrawn", show=False),
        _key("n", "focus_composer", "Note", "Write a note to the agent"),
        _key("escape", "leave_composer", "leave", "Stop typing; then the letter keys act", shown="Esc"),
        _key("escape", "back", "Sessions", "Back to the sessions list"),
        _key("q", "detach", "Detach", "Leave; the session keeps running"),
        _key("s", "app.switch_session", "Switch", "The sessions you follow"),
        _key("b", "app.previous_session", "Previous", "The session shown before this one", show=False),
        _key("t", "jump_then", "Then", "What the agent did after reading the highlighted note", show=False),
        _key("e", "export", "Export", "Write this session as Markdown for the review", show=False),
        _key("question_mark", "app.help", "Help", "All keys"),
        _key("f1", "help_from_box", "help", "All keys (? is text in the box)", shown="F1"),
    ]

    def __init__(
        self,
        backend: Backend,
        session_id: str,
        *,
        leave: Callable[[bool], None],
        clock: Callable[[], datetime],
        read_only: bool = False,
        follow: bool = True,
        drafts: DraftStore | None = None,
        confirm_risks: frozenset[str] = CONFIRM_RISKS,
        monotonic: Monotonic | None = None,
        steering: Steering | None = None,
        marks: MarkStore | None = None,
    ) -> None:
        super().__init__()
        self.backend, self.session_id, self.read_only = backend, session_id, read_only
        self.steering = steering if steering is not None else Steering(backend)
        self.core = SessionCore(session_id, decisions=self.steering.decisions, clock=clock)
        """The session's state (timeline, notes, pending approvals, row, status): the screen draws it."""
        self.core.deciders_recorded = backend.capabilities.names_decider
        self.decider = Decider(
            self, self.steering, confirm_risks=confirm_risks, clock=monotonic, read_only=read_only,
            just_shown="the screen had only just changed", keep=self._kept, decided=self._decided,
        )  # fmt: skip
        self.guard = self.decider.guard
        self.box_guard = TypeAheadGuard(monotonic)
        """Enter sends typing begun at least half a second after the note box got the focus."""
        self._monotonic, self._leave, self._clock, self._follow = monotonic, leave, clock, follow
        self._drafts, self.marks = drafts if drafts is not None else DraftStore(), marks or MarkStore()
        self._unpainted: list[SessionChange] = []  # what the stream changed since the last frame
        self._frame: Timer | None = None
        self._painted_once = False
        self._backlog_in = False  # the stored tail read on attach has been applied (and painted)
        self._painted_at = 0.0  # (the loop's clock) when the stream's changes were last drawn
        self._reshown = self._loading_started = False
        self._mounted = asyncio.Event()  # answers that arrive before the mount wait for it

    # the session's state, as the core holds it
    timeline = property(lambda self: self.core.timeline, doc="The session's timeline.")
    session = property(lambda self: self.core.session, doc="The session row, once known.")
    status = property(lambda self: self.core.status, doc="The stream's latest state.")
    ended = property(lambda self: self.core.ended, doc="Whether the session has ended.")
    unavailable = property(lambda self: self.core.refused, doc="Why the server refused the session outright.")

    def compose(self) -> ComposeResult:
        # Widgets are kept by reference: workers and timers may still touch them while the screen is
        # being torn down, when a query would no longer find them.
        core, clock, read_only = self.core, self._clock, self.read_only
        self.header = SessionHeader(self.session_id, read_only=read_only, clock=clock, id="header")
        self.banner = Banner(id="banner")
        self.view = TimelineView(
            core.timeline,
            reading=Reading(
                by_you=core.decisions.by_you,
                colleague=core.decisions.colleague,
                deciders_recorded=core.deciders_recorded,
            ),
            id="timeline",
        )
        self.approvals_panel = ApprovalsPanel(core.pending, read_only=read_only, id="approvals")
        self.notes_panel = NotesPanel(
            core.notes, core.thens, clock=clock, colleague=core.decisions.colleague, id="notes"
        )
        self._show_lists()  # until the lists answer, the panels and the header say they are loading
        self.body = SessionBody(self.view, self.approvals_panel, self.notes_panel, id="body")
        self.last_looked = LastLooked(self.view, core, self.marks, clock=clock, can=self.backend.capabilities)
        self.note_box = NoteBox(drafts=None if read_only else self._drafts, draft_key=self.session_id)
        self.composer = self.note_box.composer
        self.composer.can_focus = not read_only
        then = "q detaches, the session keeps running"
        self._too_small = TooSmall(MIN_SIZE, "the session view", then, id="too-small")
        with Horizontal(id="header-row"):  # the inbox count (all sessions) sits at the header's right
            yield self.header
            yield InboxBadge(id="inbox-badge")
        yield StandingBanner(id="standing")  # what decides or silences for the operator, while it holds
        yield from (self.banner, self.body, self.note_box, self._too_small)
        # The keys line comes a frame later: it is composed again each time the keys change, three times
        # while the screen opens, and the events go first.
        self._footer = KeysLine(self.app.size.width)
        if not self._loading_started:
            # The requests leave now, before the widgets are mounted and laid out (the longest part of
            # opening the screen): the server answers meanwhile, and its answers wait for the mount.
            self._loading_started = True
            self.load_initial()
            if self._follow:
                self.follow_stream()

    def on_resize(self) -> None:
        width, height = self.app.size
        self.set_class(width < SIDE_PANEL_BELOW, "-narrow")  # (where the notices go follows it)
        if self.body.set_narrow(width < SIDE_PANEL_BELOW):
            self.refresh_bindings()
        self._too_small.fit(width, height)  # keys then reach the screen (q detaches), not a hidden box
        self._footer.fit(width)

    def on_mount(self) -> None:
        self.on_resize()
        if self.read_only:
            self.note_box.display = False
            self.view.focus()
        if self.status is not None:
            self.header.set_status(self.status)  # "connecting": the stream started before the mount
        self.guard.arm()
        self.box_guard.arm()
        self.decider.arm_on_app_focus()
        self.watch(self.app, "app_focus", self._app_focus, init=False)
        self.watch(self, "focused", self._focus_moved, init=False)
        self._mounted.set()
        self.last_looked.start()  # the first visit: the rule and the digest if something is new
        self.set_timer(FOOTER_AT_THE_LATEST, self._mount_footer)  # when no event comes to paint first

    def _focus_moved(self, old: Widget | None, new: Widget | None) -> None:
        if (old is self.composer or self.body.pane.is_find_input(old)) and new is not old:
            self.guard.arm()  # the operator was typing a note (or a query) a moment ago
        if new is self.composer and old is not new:
            self.box_guard.arm()  # what is typed from now on, the operator sees in the box

    def _app_focus(self, focused: bool) -> None:
        if focused:
            self.box_guard.arm()  # back from another window: the box may not be what they expect

    async def _mount_footer(self) -> None:
        if self._footer.parent is None and self.is_attached:
            with contextlib.suppress(MountError):  # the screen was being taken apart meanwhile
                await self.mount(self._footer)
                self.refresh_bindings()
                self.last_looked.relaid()  # the timeline gives the keys line a line of its window
                await self.body.pane.ready_find()  # (hidden: after the first frames, not in them)

    @work(exclusive=True, group="attach-load")
    async def load_initial(self) -> None:
        """Session row, notes and pending approvals, requested together with the stream (see ``compose``);
        the row is shown as soon as it comes (while the stored tail is coming in, with its next frame), and
        a refused row stops the stream."""
        loading = self.core.load(self.backend)
        try:
            change = await loading.row()
            await self._mounted.wait()
            if change.refused is not None:
                self._draw(change)
                self.workers.cancel_group(self, "attach-stream")
                return
            self._show_with_events(change)
            self._show_with_events(await loading.lists())
        finally:
            loading.cancel()  # when the row was refused or the screen went away: nothing left waiting

    @work(exclusive=True, group="attach-stream")
    async def follow_stream(self) -> None:
        """Take the stream until the session ends, the server refuses, or the screen goes away: the core
        applies each event and status; what they changed is painted once per frame."""
        async for change in self.core.follow(self.backend, tail=HISTORY_EVENTS):
            if not change:
                continue  # (an event seen before)
            if not self._mounted.is_set():
                if isinstance(change.status, Connecting):  # the header shows it once mounted
                    continue
                await self._mounted.wait()
            if change.status is not None:
                self._paint()  # what came before it first
                self._draw(change)
                continue
            self._unpainted.append(change)
            if len(self._unpainted) >= PAINT_BACKLOG:  # a screen not painted for long (in the background)
                self._unpainted = [SessionChange.join(self._unpainted)]
            if not self._painted_once:
                # The first event is shown at once, and the screen gets a frame to paint it before the
                # rest of a backlog is read: the operator sees the session, then it catches up.
                self._paint()
                await self._painted()
                continue
            if not self._backlog_in and not self.core.replaying:
                # The last of the stored tail: shown now, not a frame later (the loop has nothing else to do).
                self._backlog_in = True
                self._paint()
                continue
            self._frame_soon()

    def _show_with_events(self, change: SessionChange) -> None:
        """The row or the lists: drawn now, or, while the stored tail is still coming in (after its first
        event is shown), with the next frame of events (one layout for both, not one more on the way)."""
        if change.failed is None and change.refused is None and self._painted_once and self._catching_up():
            self._unpainted.append(change)
            self._frame_soon()
        else:
            self._draw(change)

    @property
    def unpainted(self) -> int:
        """What the stream brought that the screen does not show yet: items the core has still to apply,
        and changes waiting for the next frame (0: the screen shows all that came)."""
        return self.core.behind + len(self._unpainted)

    @property
    def caught_up(self) -> bool:
        """What the stream brought is painted, the keys line is under the timeline and the view is placed
        (opened at the rule where there is one, laid out): the picture holds until more comes."""
        if not self._mounted.is_set():
            return False  # (pushed, not composed yet: opened in the same tick as a snapshot's check)
        return not self.unpainted and self._footer.parent is not None and not self.last_looked.placing

    async def _painted(self) -> None:
        """Wait until the app has painted what was just drawn (at most ``FIRST_PAINT_WAIT``: a screen
        followed in the background is not painted at all)."""
        painted = asyncio.get_running_loop().create_future()
        self.app.call_after_refresh(lambda: None if painted.done() else painted.set_result(None))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(painted, FIRST_PAINT_WAIT)

    def _frame_due(self) -> None:
        """The frame timer: paint, unless the screen is catching up and the last paint was less than
        ``CATCH_UP_FRAME`` ago; then look again a frame later. Each frame costs the timeline's visible
        lines drawn again; the stored tail is applied faster with fewer of them."""
        self._frame = None
        if self._catching_up() and self._loop_time() - self._painted_at < CATCH_UP_FRAME:
            self._frame_soon()
            return
        self._paint()

    def _frame_soon(self) -> None:
        """Paint what is unpainted at the next frame: one frame timer at a time, so at most once a frame."""
        if self._frame is None:
            self._frame = self.set_timer(FRAME, self._frame_due)

    def _catching_up(self) -> bool:
        """The stored tail read on attach is still coming in (``SessionCore.replaying``: items read and not
        applied, or the newest stored event, where the server says which, not in yet), and fewer than
        ``HISTORY_EVENTS`` events are in. (A live flood after that is painted every frame.)"""
        timeline = self.timeline
        return self.core.replaying and timeline.last_seq - timeline.events_not_loaded < HISTORY_EVENTS

    def _loop_time(self) -> float:
        return asyncio.get_running_loop().time()

    def _paint(self) -> None:
        """Draw what the stream changed since the last frame, joined into one change."""
        if self._frame is not None:
            self._frame.stop()
            self._frame = None
        if self._unpainted and self._whole():
            self._painted_once = True
            self._painted_at = self._loop_time()
            changes, self._unpainted = self._unpainted, []
            self._draw(SessionChange.join(changes))
            if self._footer.parent is None and not self.core.replaying:  # (a backlog goes first)
                # After the app's refresh (as ``_painted`` waits), not the screen's: with the screen's the
                # mount, a layout of the whole screen, ran before the frame showing the newest event. And on
                # the screen's queue, not in the app's after-refresh queue: that queue awaits each callback
                # in turn, and what waits for this frame to be painted would wait for the mount too.
                self.app.call_after_refresh(self.call_later, self._mount_footer)

    def _whole(self) -> bool:
        """Every widget a change is drawn on is still attached. When the screen is taken apart (popped,
        the app closing) its widgets go first, in no set order, while the stream may still deliver a
        change (the session's end: the note box asked for its screen when it had none)."""
        widgets = (self.header, self.banner, self.view, self.approvals_panel, self.notes_panel, self.note_box)
        return all(widget.is_attached for widget in widgets)

    def _draw(self, change: SessionChange, *, announce: bool = True) -> None:
        """Draw what the core says changed (``announce``: tell approvals settled elsewhere); nothing once
        the screen is being taken apart."""
        if not self._whole():
            return
        if change.session is not None:
            self.header.set_session(change.session)
        if change.session is not None or change.timeline:
            self.header.set_cost(self.core.cost)  # live: the row's figures and the model calls since
        if change.refused is not None:
            self.header.set_status(Refused(str(change.refused), change.refused.status))
            self.banner.show(str(change.refused), "error", hint="Escape: back to the sessions list")
            self._box_closed()
        if change.failed is not None:
            auth = isinstance(change.failed, AuthError)
            why = login_reason(401) if auth else f"Could not load the session: {change.failed}"
            self.banner.show(why, "warning" if auth else "error")
        if change.lists:
            self._show_lists()
        if change.notes:
            self.notes_panel.show(change.notes)
            self._footer.keys_changed()  # withdraw depends on the highlighted note's state
        if change.approvals_updated:
            self.approvals_panel.sync()
            for left in change.approvals_left:  # (followed in the background: its panel says it)
                news = announce and self.core.is_news(left) and self.is_current
                self.decider.settled(left.approval, news=news)
            if self.approvals_panel.count != self.header.pending_approvals:
                self.header.set_pending(self.approvals_panel.count)
                self._footer.keys_changed()
        if change.status is not None:
            self.header.set_status(change.status)
            feed_status = getattr(self.app, "feed_status", None)  # app-wide news (a refused token) said once
            if feed_status is not None:
                feed_status(change.status)
            self.banner.show_status(change.status, lasting=self.ended)
            if isinstance(change.status, Live):
                self.note_box.connection_back()
            tell(self, status_notice(change.status))
        if change.ended is not None:
            self.banner.session_ended(change.ended.reason)
            self.note_box.clear()  # the box itself says why nothing is sent now
            self._box_closed()
        if change.timeline is not None:
            self.view.show(change.timeline)
        self.last_looked.changed()

    def _show_lists(self) -> None:
        """The panels and the header say whether the session's notes and approvals are known yet (a
        session the server refuses has none to load: its banner says why, the panels stay empty)."""
        lists = "loaded" if self.core.refused is not None else self.core.lists
        for widget in (self.approvals_panel, self.notes_panel, self.header):
            widget.set_lists(lists)

    def _box_closed(self) -> None:
        """Nothing can be sent any more: the note box closes or goes (``NoteBox.session_over``)."""
        reason = "Session ended" if self.unavailable is None else "Session not available"
        if self.note_box.session_over(reason) and self.focused in (None, self.composer):
            self.view.focus()
        self.refresh_bindings()

    def action_approve(self) -> None:
        """Approve the highlighted approval (the agent's tool call goes ahead); a risky one asks first."""
        self.decider.approve(self.approvals_panel.selected, self.core.describe())

    def action_decline(self) -> None:
        """Ask for an optional comment, then decline."""
        self.decider.decline(self.approvals_panel.selected, self.core.describe())

    def action_allow_like(self) -> None:
        """``A``: allow (or mute) calls like the highlighted one for a while (a rule; it asks first)."""
        self.decider.allow_like(self.approvals_panel.selected, self.core.describe())

    @on(TimelineView.Resized)
    def _timeline_resized(self) -> None:
        """Any change of the timeline's window (the notes line, "following paused", the keys line, the
        terminal): a view opened at "new since you last looked" opens there again, as the size allows."""
        self.last_looked.relaid()

    @on(ApprovalsPanel.Decide)
    def _panel_decide(self, event: ApprovalsPanel.Decide) -> None:
        event.stop()
        if event.decision == "approve":
            self.decider.approve(event.approval, self.core.describe())
        else:
            self.action_decline()

    def _decided(self, outcome: DecideOutcome) -> None:
        self._draw(self.core.record(outcome), announce=False)  # its own notice tells it

    def _kept(self, approval: Approval, kept: KeptComment) -> None:
        self.note_box.keep(kept.text, kept.line)  # a comment that decides nothing now: send it as a note

    def action_expand_args(self) -> None:
        """Show the whole of the highlighted approval's call (the card shows its first lines)."""
        self.approvals_panel.show_call()

    @on(ApprovalsPanel.ShowCall)
    def _show_call(self, event: ApprovalsPanel.ShowCall) -> None:
        event.stop()
        where = None if self.read_only else "from the approvals panel"
        self.app.push_screen(whole_call(event.approval, self.core.describe(), self.steering, where=where))

    @on(Composer.Submitted)
    def _composer_submitted(self, event: Composer.Submitted) -> None:
        """Send, unless the typing this Enter ends began before the box could be read (then say so)."""
        event.stop()
        pace = pace_of(self.app)
        if pace is not None and not self.box_guard.ready(pace.run_began()):
            self.note_box.hint(ENTER_KEPT)
            return
        self.send_note(event.text)

    def take_typing(self, text: str) -> bool:
        """Typing that reached no text box (``tui.keypace``): into the note box, which takes the focus and
        says so. False when no note box is on screen to take it."""
        box = self.note_box
        if self.read_only or not box.display or not self.composer.can_focus or self.has_class("-too-small"):
            return False
        if not self.composer.has_focus:
            self.set_focus(self.composer)
        self.composer.type_in(text)
        box.hint(TYPING_GOES)
        return True

    def keep_typing(self, text: str) -> bool:
        """Typing meant for this session while its note box is not on screen: into its draft. False when
        it keeps none (read-only)."""
        if self.read_only or not self.composer.is_mounted:
            return False
        self.composer.type_in(text)
        return True

    def enter_kept(self) -> bool:
        """An Enter that ended typing given to the note box was not taken: the line says so. False when
        the box is not on screen to say it."""
        if not self.note_box.display or self.has_class("-too-small"):
            return False
        self.note_box.hint(ENTER_KEPT)
        return True

    @work(exclusive=True, group="attach-send")
    async def send_note(self, text: str) -> None:
        """Send the composer's text; on failure it stays in the box with the server's reason above it."""
        outcome: SendOutcome | None = None
        self.note_box.sending()
        try:
            outcome = await self.steering.send_note(text, session_id=self.session_id)
        finally:
            self.note_box.answered(text, outcome)
        self._draw(self.core.record(outcome))
        tell(self, steering_notice(outcome))

    def save_draft(self) -> None:
        """Keep what is in the note box for this session (re-attach, restart and crash all find it)."""
        self.composer.save_draft()

    def action_withdraw(self) -> None:
        """Withdraw a pending note: the highlighted one if the notes list has the focus, else the only
        pending one, else ask which; a yes/no question comes first (the picker is one itself)."""
        choice = self.notes_panel.withdraw_choice()
        if choice is None:
            self.action_withdraw_none()
        elif isinstance(choice, str):
            self.notify(choice, severity="warning", markup=False)
        else:
            ask_withdraw(self.app, choice, self._clock(), clock=self._monotonic, withdraw=self.withdraw)

    def action_withdraw_none(self) -> None:
        """``w`` with nothing it can withdraw: say why rather than do nothing."""
        tell(self, nothing_to_withdraw(self.backend.capabilities.withdraw_notes))

    @work(group="attach-withdraw")
    async def withdraw(self, note: Note) -> None:
        """Ask the server to cancel the note; a refusal (it was already picked up) says why."""
        outcome = await self.steering.withdraw(note.note_id, known=note)
        self._draw(self.core.record(outcome))
        tell(self, steering_notice(outcome))

    def action_jump_then(self) -> None:
        """Did it listen? Show what the agent did first after reading the highlighted (or newest read)
        note: the timeline scrolls there and stops following."""
        note = self.notes_panel.highlighted_note
        self.body.pane.show_entry(*self.core.then_of(note.note_id if note is not None else None))

    @work(group="attach-export")
    async def action_export(self) -> None:
        """Write the session as Markdown (what the screen holds) for the post-incident review."""
        try:
            path = await self.core.export_markdown(exports_dir(), self._clock())
        except OSError as exc:
            self.notify(f"Could not write the export: {exc.strerror or exc}", severity="error", markup=False)
        else:
            self.notify(f"Saved to {path}", title="Session exported", markup=False, timeout=10)

    def action_focus_composer(self) -> None:
        """Put the cursor in the note box."""
        self.composer.focus()

    def action_leave_composer(self) -> None:
        """Escape in the note box: keep the draft, move to the timeline so the letter keys act (a box that
        can no longer send goes away now: the operator has seen that it is closed)."""
        self.view.focus()
        self.note_box.leave()
        self.note_box.hint("")

    async def action_help_from_box(self) -> None:
        """F1 from the note box, where ``?`` is just a character: the same help screen."""
        await self.app.run_action("help")

    def action_back(self) -> None:
        """Escape outside the note box: back to the sessions list (the session keeps running)."""
        self._leave(False)

    def action_detach(self) -> None:
        """Stop watching; the session itself keeps running."""
        self._leave(True)

    def shown_again(self) -> None:
        """A followed session comes back on screen (list, inbox, ``b``, ``s``): the note box takes the focus
        again, as on a first attach. Scroll, folds and the draft stay as they were."""
        self._reshown = True

    def on_screen_resume(self) -> None:
        self.guard.arm()  # shown again, or a dialog above it closed: the next keys were typed for that
        self.box_guard.arm()
        if self._reshown:
            self._reshown = False
            if self.check_action("focus_composer", ()):
                self.composer.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer a key (footer, palette) only when it can do something in the screen's current state."""
        can, typing, decidable = self.backend.capabilities, self.composer.has_focus, bool(self.core.pending)
        notes = bool(self.notes_panel.pending_notes)
        if action in ("approve", "decline", "allow_like"):  # not while too small to show the call
            return can.approvals and not self.read_only and decidable and not self.has_class("-too-small")
        if action in ("withdraw", "withdraw_none"):  # withdraw_none (hidden) answers w with why not
            return not self.read_only and (can.withdraw_notes and notes) == (action == "withdraw")
        if action == "focus_composer":  # not offered while typing, where n is a letter of the note
            return can.notes and not (self.read_only or self.ended or self.unavailable is not None or typing)
        if action in ("leave_composer", "help_from_box", "back"):  # F1 is listed only while typing
            return typing == (action != "back")
        return decidable if action == "expand_args" else True

    @on(NotesPanel.OptionHighlighted)
    def _note_highlighted(self) -> None:
        self._footer.keys_changed()
