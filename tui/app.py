"""The Textual app: a sessions list and a live attach view over any ``client.backends.base.Backend``.

Entry points (the CLI calls these; nothing here parses arguments or reads configuration)::

    await run_app(backend, *, session_id=None, read_only=False) -> int
        Runs the app in the caller's event loop (Textual's ``run_async``) until the user quits. With
        ``session_id`` it opens that session's attach screen first (``preloop sessions attach <id>``), else
        the sessions list (``preloop``, ``preloop sessions``, ``preloop demo``). ``session_id`` must be a
        full id (resolve short ids with ``client.ids.resolve_session`` first). The backend stays the
        caller's (one loop, one connection per command). Returns the process exit code (0; 130 after
        Ctrl+C; 143 or 129 after SIGTERM or SIGHUP, which end the app cleanly, terminal restored). A
        message for the shell (e.g. "Detached from ...; it keeps running") is printed after the terminal
        is restored.

    PreloopApp(backend, *, start_session_id=None, read_only=False, clock=None, refresh_interval=5.0,
               close_backend=False, follow=True, drafts=None, marks=None)
        The app object itself (tests drive it with ``run_test``). ``clock`` returns the current UTC time
        (tests freeze it); ``refresh_interval`` is the sessions list timer (0 turns it off); ``follow=False``
        skips the live stream (snapshot tests feed events themselves); ``drafts`` keeps unsent notes per
        session (default: in memory; ``run_app`` uses files in the state dir, so a crash loses no draft);
        ``marks`` where the operator last looked at each session (``client.marks``; the same: in memory,
        or the state dir's ``marks/`` from ``run_app``), which the sessions list's NEW column, the inbox's
        followed sessions and the attach screen's "new since you last looked" read.

The app keeps the attention inbox (``client.inbox.Inbox``) fed from ``backend.watch_attention()`` while it
runs (``attention=False`` skips it), shows its count in every header (and in the sessions list's PENDING
column, which follows it), opens ``InboxScreen`` on ``i`` / F2 and raises alerts (``client.alerts``;
``alert_write`` receives the bytes, by default the terminal). One ``client.steering.Steering`` serves every
screen, with the one record of the approvals decided in this app (``Decisions``), which the inbox shares:
nothing decided here is ever called "decided elsewhere". An approval that leaves the inbox without its
final record is read once, so it is told as approved, declined or expired. A notice identical to one still
on screen is not shown again.

Screens: ``SessionsScreen`` (list), ``AttachScreen`` (one session), ``InboxScreen`` (every session's
approvals), ``HelpScreen`` (``?``), and the modal
``ConfirmScreen`` / ``DeclineCommentScreen`` / ``SwitchScreen``. Escape on the attach screen returns to the
list; ``q`` there detaches (the session keeps running); ``q`` on the list quits. Ctrl+C quits from any
screen or dialog, as in any terminal program (Ctrl+Q too): every followed session's draft is saved first,
no session is stopped, and the shell is told so; with text selected (the note box, a dialog's field, the
mouse) Ctrl+C copies it instead and lets go of the selection, so a second Ctrl+C quits.

Keys: every key the terminal sends passes the app's one ``tui.keypace.KeyPace`` before Textual dispatches
it (``on_event``), on the app's one monotonic clock (``monotonic``, shared with the type-ahead guards): a
burst of typing is text, never a command (:meth:`PreloopApp.take_typing` puts it in the note box of the
session on screen, or that session's draft), and a letter command runs only when pressed alone.

Standing decisions: while an allow rule (ours, or a Preloop approval bypass) or a Preloop account's kill
switch holds, every screen shows it in a banner (``widgets.standing.StandingBanner``, following
``standing``, which the app reads from ``backend.standing()`` every ``standing_interval`` seconds and at
once after a rule is made or ended). ``A`` on an approval (its card, the inbox) opens "allow calls like
this for …" (``tui.screens.allow``; the app makes the rule and says what came of it), ``R`` lists the
rules and ends them (``tui.screens.rules``); on a server without rules both say so. An approval a
``mute`` rule covers raises no alert.

Quick switch: every attach screen opened is installed and kept while its session is followed (at most
``tui.following.FOLLOW_LIMIT``, the least recently shown let go first), so Escape, ``b`` (previous
session) and ``s`` (the followed list) come back to it with its scroll, folds and draft as they were, and
its stream kept following meanwhile. ``q`` stops following it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from textual import events, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, TextArea

# The live feeds' code (SSE decoding and the events' validators): loaded with the app, not lazily in the
# middle of its first frame (scripted commands, which never stream, never import this module).
import client.backends.local.attention
import client.backends.local.feed  # noqa: F401
from client.alerts import Alerter, AlertSettings, load_alert_settings
from client.backends.base import Backend
from client.clipboard import clipboard_route, copy_words
from client.drafts import DraftStore
from client.errors import ClientError, Unsupported
from client.ids import short_id
from client.inbox import ApprovalAdded, ApprovalExpiring, ApprovalGone, Inbox, InboxChange, closing_feed
from client.marks import MarkStore, News, news_of
from client.models import Approval, AttentionSnapshot, NoteState, RuleSpec, Session, Standing
from client.paths import state_dir
from client.present import session_title
from client.rules import banner_line, muted
from client.status import Connecting, Live, LoginNeeded, Refused, StreamStatus
from client.steering import Steering, final_record
from tui.following import Following
from tui.keypace import KeyPace
from tui.palette import PreloopCommands
from tui.screens.allow import AllowScreen
from tui.screens.attach import CONFIRM_RISKS, AttachScreen
from tui.screens.decide import settle_open_dialogs
from tui.screens.help import HelpScreen
from tui.screens.inbox import InboxScreen
from tui.screens.rules import RulesScreen
from tui.screens.sessions import SessionsScreen
from tui.screens.switch import SwitchRow, SwitchScreen
from tui.typeahead import Monotonic, default_clock

STATUS_TYPES = tuple(StreamStatus.__args__)

EXPIRY_CHECK_SECONDS = 1.0
"""How often the inbox is asked for approvals about to expire (each raises one alert)."""

STANDING_SECONDS = 10.0
"""How often the banner's standing (allow rules, a kill switch) is read again; a rule made or ended here
shows at once, one made elsewhere within this long."""


_WAITING = (NoteState.PENDING, NoteState.CLAIMED)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def settle_imports() -> None:
    """Once per process, when its first app is made: what exists then (the imported modules, mostly:
    Textual, Rich, pydantic, the client) is moved out of the garbage collector's reach (``gc.freeze``).
    It lives as long as the process, and a full collection would otherwise walk all of it: one ran during
    the attach screen's first frame with events, 65-90 ms of it (``benchmarks/bench_attach_catchup.py``).
    Only what already exists is frozen; everything the app makes later is collected as before. The
    command line calls it itself right after importing this module, with collection held off during the
    import (``cli.commands.tui_entry.open_app``); then the app's own call finds it done."""
    if not gc.get_freeze_count():
        gc.freeze()


class PreloopApp(App[str | None]):
    """Holds the backend and the options; screens get what they need through their constructors."""

    TITLE = "preloop"
    CSS_PATH = Path(__file__).with_name("app.tcss")
    COMMANDS = App.COMMANDS | {PreloopCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", show=False, id="app.help", tooltip="All keys"),
        # F1 also works where ? is text (the note box, the filter box).
        Binding("f1", "help", "Help", show=False, id="app.help_f1", tooltip="All keys"),
        # The inbox from anywhere: i where keys are commands, F2 also while typing.
        Binding("i", "inbox", "Inbox", show=False, id="app.inbox", tooltip="Every session's approvals"),
        Binding("f2", "inbox", "Inbox", show=False, id="app.inbox_f2", tooltip="Every session's approvals"),
        # The allow rules that hold (the banner names the key): list them, end them.
        Binding("R", "rules", "Rules", show=False, id="app.rules", tooltip="Allow rules: list and end them"),
        # Ctrl+C quits, as in any terminal program, from every screen and dialog (a priority binding: a
        # modal dialog would stop an ordinary one); with text selected it copies instead (see
        # action_interrupt). Textual's own Ctrl+C only says "Press ctrl+q to quit".
        Binding(
            "ctrl+c",
            "interrupt",
            "Quit",
            show=False,
            priority=True,
            id="app.ctrl_c",
            tooltip="Quit (with text selected: copy it)",
        ),
    ]

    standing: var[Standing] = var(Standing)
    """What decides or silences for the operator now (allow rules, a kill switch): every screen's
    ``StandingBanner`` follows it."""

    inbox_count: var[int] = var(0)
    """Approvals waiting plus failed notes not yet seen, across all sessions (every header shows it; a
    ``var``, not a ``reactive``: a new count redraws the badges, not the whole screen)."""

    def __init__(
        self,
        backend: Backend,
        *,
        start_session_id: str | None = None,
        read_only: bool = False,
        clock: Callable[[], datetime] | None = None,
        refresh_interval: float = 5.0,
        close_backend: bool = False,
        follow: bool = True,
        drafts: DraftStore | None = None,
        marks: MarkStore | None = None,
        handle_signals: bool = False,
        confirm_risks: frozenset[str] = CONFIRM_RISKS,
        attention: bool = True,
        alert_settings: AlertSettings | None = None,
        alert_write: Callable[[str], None] | None = None,
        notes_window: timedelta = timedelta(hours=6),
        attention_poll_interval: float = 3.0,
        monotonic: Monotonic | None = None,
        standing_interval: float = STANDING_SECONDS,
    ) -> None:
        settle_imports()
        super().__init__()
        self.monotonic: Monotonic = monotonic or default_clock()
        """The one clock of the type-ahead guards and the key pace (``tui.typeahead``, ``tui.keypace``);
        tests type on a fake one."""
        self.key_pace = KeyPace(
            self, clock=self.monotonic, typed=self.take_typing, enter_kept=self.typing_enter_kept
        )
        """Every key passes it first: a burst of typing is text, a letter command runs only alone."""
        self.confirm_risks = confirm_risks
        self.handle_signals = handle_signals
        """SIGTERM / SIGHUP end the app cleanly (terminal restored, drafts saved); ``run_app`` sets it."""
        self.drafts = drafts if drafts is not None else DraftStore()
        """Unsent notes per session; ``run_app`` keeps them in the state dir so a crash loses none."""
        self.marks = marks if marks is not None else MarkStore()
        """Where the operator last looked at each session (``client.marks``); ``run_app`` keeps them in the
        state dir, so a restart comes back to "new since you last looked"."""
        self.backend = backend
        self.start_session_id = start_session_id
        self.read_only = read_only
        self.clock: Callable[[], datetime] = clock or _utcnow
        self.refresh_interval = refresh_interval
        self.close_backend = close_backend
        self.follow = follow
        self.attention = attention
        self.steering = Steering(backend)
        """Steering for every screen, with the one record of the approvals decided in this app."""
        self.inbox = Inbox(notes_window, self.steering.decisions)
        self.attention_status: StreamStatus | None = None
        self.attention_poll_interval = attention_poll_interval
        self.alerter = Alerter(alert_settings or load_alert_settings(), alert_write or self._write_terminal)
        self.standing_interval = standing_interval
        self._standing_due = asyncio.Event()
        self.following = Following()
        """Sessions followed in this app, most recent first (quick switch: ``s`` lists, ``b`` goes back)."""
        self._followed_screens: dict[str, AttachScreen] = {}
        self._token_refused = False
        self._notices: dict[tuple[str, str, str], float] = {}
        """Notices on screen, until when (identical ones are not stacked)."""

    def on_mount(self) -> None:
        if self.handle_signals:
            self._install_signal_handlers()
        if self.start_session_id:
            self.push_screen(self._attach_screen(self.start_session_id))
        else:
            self.push_screen(self._sessions_screen())
        # Who this operator is on the server, so a decision the server names them for reads "you".
        self.call_after_refresh(self.learn_me)
        if self.attention:
            # The screen the user asked for starts loading first; the inbox after its first frame.
            self.call_after_refresh(self.watch_inbox)
            self.set_interval(EXPIRY_CHECK_SECONDS, self.check_expiring)
            can = self.backend.capabilities
            if can.rules is not None or can.halts:
                self.call_after_refresh(self.follow_standing)

    @work(group="whoami", exclusive=True)
    async def learn_me(self) -> None:
        """Ask the server once who this token acts for (``Decisions.me``); a failure leaves "you" to the
        decisions made in this app."""
        with contextlib.suppress(ClientError):
            await self.steering.decisions.learn_me(self.backend)

    async def on_event(self, event: events.Event) -> None:
        """Every key the terminal sends passes the key pace first (``tui.keypace``): a letter command
        waits to stand alone, and a burst of typing that reached no text box becomes text."""
        if isinstance(event, events.Key) and not event.is_forwarded and await self.key_pace.take(event):
            return
        await super().on_event(event)

    # ------------------------------------------------------------------ typing that reached no text box

    def take_typing(self, text: str) -> None:
        """A burst of typing reached no text box (``tui.keypace``): it goes into the note box of the
        session on screen, dialogs over it closing first (deciding nothing); with no note box on screen
        (the inbox, a closed or hidden box) into that session's draft, the inbox staying; the session is
        the one on screen, else the one under the inbox. With no session (the list) it is not taken."""
        stack = self.screen_stack
        base = next((s for s in reversed(stack) if not isinstance(s, ModalScreen)), None)
        if base is None:
            return
        below = stack[: stack.index(base)]
        session = base if isinstance(base, AttachScreen) else None
        if session is None:
            session = next((s for s in reversed(below) if isinstance(s, AttachScreen)), None)
        for _ in range(len(stack)):  # the dialogs over it close, answering nothing
            if self.screen is base:
                break
            self.screen.dismiss()
        if session is base and session.take_typing(text):
            return
        if session is not None and session.keep_typing(text):
            self.notify(
                f"Typing is text, never a command: it went to the draft of {session.core.describe()} "
                "(no note box here). Open the session to read and send it.",
                title="Typing kept as a draft",
                severity="warning",
                markup=False,
            )
            return
        self.notify(
            "Typing is text, never a command, and this screen has no note box: the keys were not taken. "
            "Open a session to write a note.",
            title="Keys not taken",
            severity="warning",
            markup=False,
        )

    def typing_enter_kept(self) -> None:
        """An Enter ended a burst that reached no text box: it sent and opened nothing; say so."""
        screen = self.screen
        if isinstance(screen, AttachScreen) and screen.enter_kept():
            return
        self.notify(
            "That Enter came with the typing before it: it did nothing.",
            title="Enter not taken",
            severity="warning",
            markup=False,
        )

    # ------------------------------------------------------------------ the attention inbox

    @work(group="attention", exclusive=True)
    async def watch_inbox(self) -> None:
        """Keep the inbox in step with every session for as long as the app runs (the feed reconnects
        by itself and starts each connection with a fresh snapshot)."""
        try:
            feed = self.backend.watch_attention(
                notes_window=self.inbox.notes_window, poll_interval=self.attention_poll_interval
            )
            async with closing_feed(feed):
                async for item in feed:
                    if isinstance(item, AttentionSnapshot):
                        self.inbox_updated(self.inbox.reset(item))
                    elif isinstance(item, STATUS_TYPES):
                        self.feed_status(item)
                        if not (
                            isinstance(item, Connecting) and isinstance(self.attention_status, LoginNeeded)
                        ):
                            self.attention_status = item  # a retry's Connecting: still "token refused"
                        self.inbox_updated([])
                        if isinstance(item, Refused):
                            return
                    else:
                        version = self.inbox.version
                        changes = self.inbox.apply(item)  # type: ignore[arg-type]
                        if changes or self.inbox.version != version:  # an update in place too
                            self.inbox_updated(changes)
        except ClientError as exc:
            self.attention_status = Refused(exc.hint)
            self.inbox_updated([])

    # ------------------------------------------------------------------ standing decisions (the banner)

    @work(group="standing", exclusive=True)
    async def follow_standing(self) -> None:
        """Read what decides or silences for the operator (``backend.standing()``) every
        ``standing_interval`` seconds, or at once when :meth:`refresh_standing` asks; a failed read keeps
        what the banner shows (the next one may do), a server without rules stops it."""
        while True:
            self._standing_due.clear()
            try:
                self.standing = await self.backend.standing()
            except Unsupported:
                return
            except ClientError:
                pass
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._standing_due.wait(), self.standing_interval)

    def refresh_standing(self) -> None:
        """A rule was made or ended here: read the standing again now."""
        self._standing_due.set()

    def _muted(self, change: object) -> bool:
        """A new approval (or one about to expire) that a ``mute`` rule covers raises no alert."""
        if isinstance(change, ApprovalAdded | ApprovalExpiring):
            return muted(change.approval, self.standing.rules, self.clock())
        return False

    def _no_rules(self) -> bool:
        """Say so when the server keeps no allow rules (True: nothing to open)."""
        if self.backend.capabilities.rules is not None:
            return False
        self.notify(
            f"A {self.backend.server_kind} server keeps no allow rules: every call it asks about is decided "
            "one by one.",
            title="No allow rules",
            severity="warning",
            markup=False,
        )
        return True

    def ask_allow(self, approval: Approval, session: str) -> None:
        """From an approval (its card, the inbox): "allow calls like this for …", then the rule."""
        rules = self.backend.capabilities.rules
        if self._no_rules() or rules is None:
            return

        def _answered(spec: RuleSpec | None) -> None:
            if spec is not None:
                self.make_rule(spec)

        self.push_screen(AllowScreen(approval, session, rules, clock=self.monotonic), _answered)

    @work(group="rules-make")
    async def make_rule(self, spec: RuleSpec) -> None:
        """Send a rule the operator made and say what came of it (the call it started from still waits)."""
        try:
            rule = await self.backend.create_rule(spec)
        except ClientError as exc:
            self.notify(f"No rule made: {exc.hint}", title="Rule refused", severity="error", markup=False)
            return
        self.notify(
            f"{banner_line(rule, self.clock())}. The call on screen still waits for you (a / d); R lists "
            "the rules.",
            title="Rule made",
            timeout=10,
            markup=False,
        )
        self.refresh_standing()

    def action_rules(self) -> None:
        """List the allow rules that hold and end them (``R``); again: close the list."""
        if isinstance(self.screen, RulesScreen):
            self.screen.dismiss(None)
            return
        if self._no_rules():
            return
        self.push_screen(
            RulesScreen(
                self.backend, clock=self.clock, changed=self.refresh_standing, monotonic=self.monotonic
            )
        )

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notice passes here; one identical to a notice still on screen is not shown again, so a
        key pressed five times (``e``: export) leaves one notice, not a column of them over the screen."""
        now = time.monotonic()
        self._notices = {key: until for key, until in self._notices.items() if until > now}
        key = (title, message, severity)
        if key in self._notices:
            return
        self._notices[key] = now + (self.NOTIFICATION_TIMEOUT if timeout is None else timeout)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def feed_status(self, status: StreamStatus) -> None:
        """Every live feed's state (the inbox's, each attach screen's) passes here, so what holds for the
        whole app is said once: the token refused (every feed waits, keeps what it shows, and resumes by
        itself) and, when the first feed is live again, that it is over."""
        if isinstance(status, LoginNeeded) and not self._token_refused:
            self._token_refused = True
            self.notify(status.reason, title="Token refused", severity="warning", timeout=15, markup=False)
        elif isinstance(status, Live) and self._token_refused:
            self._token_refused = False
            self.notify(
                "The server accepts the token again; everything resumed.",
                title="Token accepted",
                markup=False,
            )

    def inbox_updated(self, changes: list[InboxChange] | None = None) -> None:
        """After the inbox or its feed changed: update every header's count, the inbox screen, and alert
        for what is new outside the session on screen."""
        if not self.is_running:
            # The app is closing: its screens are being taken down part by part (a screen can still be on
            # the stack with its table gone). The feed and the final-record worker run on until cancelled;
            # what they bring now is not drawn.
            return
        changes = changes or []
        self.alerter.changes([c for c in changes if not self._muted(c)], viewing=self._viewing())
        for change in changes:
            if isinstance(change, ApprovalGone):
                you = self.steering.decisions.by_you(change.approval)
                settle_open_dialogs(self, change.approval, you=you)
                if change.approval.pending:  # it went without its final record: read it once
                    self.final_record(change.approval)
        # The inbox screen first, then the headers' count (the inbox screen may have marked notes seen):
        # the first widget to report a change starts the next frame, and the inbox table's new size must
        # be in it, or the new row waits a frame for its layout.
        for screen in self.screen_stack:
            if isinstance(screen, InboxScreen):
                screen.inbox_changed(self.attention_status)
        shown = self._shown()
        if isinstance(shown, SessionsScreen):  # (one under another screen follows when shown)
            shown.inbox_changed()
        self.inbox_count = self.inbox.count

    @work(group="attention-final")
    async def final_record(self, approval: Approval) -> None:
        """An approval that left the inbox without its final record (a poll or a reconnect saw it go):
        read once, so the inbox says approved, declined or expired rather than "gone"."""
        with contextlib.suppress(ClientError):  # unread, the inbox says it is gone
            record = await final_record(self.backend, approval.id)
            if record is not None and self.inbox.resolved(record):
                self.inbox_updated()

    def _viewing(self) -> str | None:
        """The session on screen (no alert for what the operator is looking at)."""
        shown = self._shown()
        return shown.session_id if isinstance(shown, AttachScreen) else None

    def _shown(self) -> Screen[Any] | None:
        """The screen on top, or none: the app's own workers (the inbox feed, a final record) run on
        while the app closes, after its screens are gone, where ``App.screen`` raises."""
        return self.screen_stack[-1] if self.screen_stack else None

    def check_expiring(self) -> None:
        """Once a second: an approval about to expire raises one alert, before it is too late."""
        expiring = [e for e in self.inbox.expiring(self.clock()) if not self._muted(e)]
        if expiring:
            self.alerter.changes(expiring, viewing=self._viewing())

    def keep_as_draft(self, session_id: str, text: str, why: str) -> None:
        """Words typed for a decision that no longer waits become (part of) the session's draft note: in
        its note box when the session is followed here, else in the drafts kept for it."""
        screen = self._followed_screens.get(session_id)
        if screen is not None and screen.is_mounted:
            screen.note_box.keep(text, why)
            return
        current = (self.drafts.get(session_id) or "").rstrip("\n")
        self.drafts.put(session_id, f"{current}\n{text}" if current else text)
        self.notify(
            f"{why} Your comment is kept as a draft note for {short_id(session_id)}: open the session to "
            "send it.",
            title="Not declined",
            severity="warning",
            markup=False,
        )

    def _write_terminal(self, data: str) -> None:
        """Alerts go straight to the controlling terminal in one write (never in a headless test run)."""
        if self.is_headless:
            return
        try:
            fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
        except OSError:
            return
        try:
            os.write(fd, data.encode("utf-8", "replace"))
        except OSError:
            pass
        finally:
            os.close(fd)

    def action_inbox(self) -> None:
        """Open the attention inbox (every session's approvals and failed notes); again: close it."""
        if isinstance(self.screen, InboxScreen):
            self.screen.dismiss(None)
            return
        screen = InboxScreen(
            self.steering,
            self.inbox,
            open_session=self.open_session,
            clock=self.clock,
            read_only=self.read_only,
            confirm_risks=self.confirm_risks,
            monotonic=self.monotonic,
            keep_as_draft=self.keep_as_draft,
            followed=self.followed_news,
        )
        screen.status = self.attention_status
        self.push_screen(screen, lambda _: self.inbox_updated())
        self.inbox_count = self.inbox.count

    def _install_signal_handlers(self) -> None:
        # Without this a SIGTERM (kill, systemd, a closing tmux pane's SIGHUP) ends Python at once: the
        # terminal stays in the alternate screen with mouse reporting on, and only `reset` fixes it.
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signum, self.stop_on_signal, signum)

    def stop_on_signal(self, signum: int) -> None:
        """Leave as ``q`` would (drafts saved, terminal restored), with the exit code 128 + signal."""
        name = signal.Signals(signum).name
        self.leave_app(f"Stopped by {name}; any session keeps running.", return_code=128 + signum)

    def leave_app(self, message: str | None, *, return_code: int = 0) -> None:
        """The one way out of the app (Ctrl+C, Ctrl+Q, ``q`` on the list, a signal): the draft of every
        followed session is saved and flushed first, whichever screen or dialog is on top; ``message``
        is printed once the terminal is restored. No session is stopped."""
        for screen in self._followed_screens.values():
            if screen.is_mounted:
                screen.save_draft()
                # where the operator last looked, to the disk: the one on screen was looked at until now
                screen.last_looked.leave(saw=self.app_focus and screen.last_looked.shown)
        self.exit(message, return_code=return_code)

    async def action_quit(self) -> None:
        """Quit (Ctrl+Q, Ctrl+C, ``q`` on the list), drafts kept; the message says no session stopped."""
        self.leave_app(self._quit_message())

    def _quit_message(self) -> str | None:
        """What to tell the shell on quitting: the session on screen (or under the dialog on top) keeps
        running, or has ended; nothing when no session was followed."""
        screen = next((s for s in reversed(self.screen_stack) if isinstance(s, AttachScreen)), None)
        if screen is not None:
            return self._leave_message(screen)
        if self._followed_screens:
            return "Quit; no session was stopped."
        return None

    def action_interrupt(self) -> None:
        """Ctrl+C: quit, as operators expect from a terminal program (drafts kept, no session stopped).
        With text selected (in the note box, a dialog's field, or by mouse) it copies that text instead
        and lets go of the selection, so a second Ctrl+C quits."""
        copied = self._copy_selection()
        if copied:
            what = f"{copied} character{'s' if copied != 1 else ''}"
            said, title, arrived = copy_words(what, clipboard_route())  # the truth inside tmux too
            severity: SeverityLevel = "information" if arrived else "warning"
            self.notify(f"{said}; Ctrl+C again quits.", title=title, severity=severity, markup=False)
            return
        # 130, as from any terminal program interrupted by Ctrl+C (the README's exit codes); Ctrl+Q and
        # ``q`` quit with 0.
        self.leave_app(self._quit_message(), return_code=128 + signal.SIGINT)

    def _copy_selection(self) -> int:
        """Copy the selected text, if any, to the clipboard and clear the selection; how many characters
        were copied (0: nothing was selected)."""
        screen = self.screen
        focused = screen.focused
        text = ""
        if isinstance(focused, TextArea) and focused.selected_text:
            text = focused.selected_text
            focused.move_cursor(focused.selection.end)
        elif isinstance(focused, Input) and focused.selected_text:
            text = focused.selected_text
            focused.cursor_position = focused.cursor_position  # the selection shrinks to the cursor
        else:
            text = screen.get_selected_text() or ""
            screen.clear_selection()
        if text:
            self.copy_to_clipboard(text)
        return len(text)

    async def on_unmount(self) -> None:
        if self.handle_signals:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.remove_signal_handler(signum)
        if self.close_backend:
            await self.backend.aclose()

    def _sessions_screen(self, highlight: str | None = None) -> SessionsScreen:
        return SessionsScreen(
            self.backend,
            open_session=self.open_session,
            clock=self.clock,
            refresh_interval=self.refresh_interval,
            pending=self.inbox.pending_by_session,
            news=self.session_news,
            highlight=highlight,
        )

    def session_news(self, row: Session) -> News:
        """What a session holds for the operator (the sessions list's NEW column, the inbox's followed
        sessions): new events since they last looked when it is followed here, approvals waiting and a
        problem as the list and the live inbox tell it, a note the agent read since."""
        return self._news(row.id, row)

    def followed_news(self) -> list[tuple[str, str | None, News]]:
        """Each followed session (most recent first) with its agent and news, for the inbox."""
        out: list[tuple[str, str | None, News]] = []
        for session_id in self.following.recent:
            screen = self._followed_screens.get(session_id)
            row = screen.core.session if screen is not None else None
            out.append(
                (session_id, row.agent_label if row is not None else None, self._news(session_id, row))
            )
        return out

    def _news(self, session_id: str, row: Session | None) -> News:
        counts = self.inbox.pending_by_session()
        failed = sum(1 for note in self.inbox.notes if note.runtime_session_id == session_id)
        screen = self._followed_screens.get(session_id)
        ended = row is not None and row.ended_at is not None
        return news_of(
            row,
            pending=counts.get(session_id, 0) if counts is not None and not ended else None,
            failed_notes=failed,
            core=screen.core if screen is not None else None,
            mark=self.marks.get(session_id),
        )

    def _attach_screen(self, session_id: str) -> AttachScreen:
        """The session's attach screen: the live one when it is followed already (its scroll, folds and
        draft as they were), else a new one, installed so that leaving it keeps it following."""
        screen = self._followed_screens.get(session_id)
        if screen is None:
            screen = AttachScreen(
                self.backend,
                session_id,
                leave=lambda detach: self.leave_session(session_id, detach=detach),
                clock=self.clock,
                read_only=self.read_only,
                follow=self.follow,
                drafts=self.drafts,
                confirm_risks=self.confirm_risks,
                monotonic=self.monotonic,
                steering=self.steering,
                marks=self.marks,
            )
            self._followed_screens[session_id] = screen
            self.install_screen(screen, name=f"attach-{session_id}")
        for dropped in self.following.touch(session_id):
            self._stop_following(dropped)
        return screen

    def _stop_following(self, session_id: str) -> None:
        """Close a followed session's screen (stream, timeline) once it is off the stack."""
        self.following.forget(session_id)
        screen = self._followed_screens.pop(session_id, None)
        if screen is None or screen in self.screen_stack:
            return
        self.uninstall_screen(screen)
        if screen.is_attached:
            screen.remove()

    def open_session(self, session_id: str) -> None:
        """Show a session's live view: on top of the list (or inbox), or in place of the session on screen."""
        current = self.screen
        target = self._attach_screen(session_id)
        if target is current:
            return
        if target.is_mounted:
            target.shown_again()
        if isinstance(current, AttachScreen):
            self.switch_screen(target)
        else:
            self.push_screen(target)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``s`` (switch) is offered once there is another followed session to switch to."""
        if action == "switch_session":
            return len(self.following) > 1
        return True

    def action_previous_session(self) -> None:
        """Jump back to the session shown before this one (like ``cd -``)."""
        current = self.screen.session_id if isinstance(self.screen, AttachScreen) else None
        target = self.following.previous(current)
        if target is None:
            self.notify("No other session followed yet: attach to one from the list.", markup=False)
            return
        self.open_session(target)

    def action_switch_session(self) -> None:
        """List the followed sessions, the previous one highlighted; Enter shows the chosen one."""
        current = self.screen.session_id if isinstance(self.screen, AttachScreen) else None
        rows = [self._switch_row(sid, current) for sid in self.following.recent]
        previous = self.following.previous(current)
        highlight = self.following.recent.index(previous) if previous is not None else 0

        def _chosen(session_id: str | None) -> None:
            if session_id is not None:
                self.open_session(session_id)

        self.push_screen(SwitchScreen(rows, highlight=highlight), _chosen)

    def _switch_row(self, session_id: str, current: str | None) -> SwitchRow:
        core = self._followed_screens[session_id].core
        row = core.session
        return SwitchRow(
            session_id=session_id,
            short=short_id(session_id),
            agent=row.agent_label if row is not None else "?",
            title=session_title(row) if row is not None else "",
            state="ended" if core.ended else "live",
            pending_approvals=len(core.pending),
            waiting_notes=sum(
                1 for n in core.notes.values() if n.state in (NoteState.PENDING, NoteState.CLAIMED)
            ),
            current=session_id == current,
        )

    def leave_session(self, session_id: str, *, detach: bool) -> None:
        """Back to the list (Escape) or detach (``q``); either way the session keeps running."""
        below = self.screen_stack[-2] if len(self.screen_stack) >= 2 else None
        leaving = self.screen
        message = (
            self._leave_message(leaving)
            if isinstance(leaving, AttachScreen)
            else f"Detached from {short_id(session_id)}; the session keeps running."
        )
        if isinstance(below, InboxScreen | SessionsScreen):  # opened from the inbox or the list: back there
            self.pop_screen()
            if detach:
                self._stop_following(session_id)  # q: stop following; Escape keeps it for quick switch
                self.notify(message, title="Left the session", markup=False)
            if isinstance(below, SessionsScreen):
                below.load()
        elif detach:
            self.exit(message)
        else:  # opened by `sessions attach ID`: the list, with the session just left highlighted
            self.switch_screen(self._sessions_screen(highlight=session_id))
            self.notify(message, title="Left the session", markup=False)

    @staticmethod
    def _leave_message(screen: AttachScreen) -> str:
        """What leaving a session's screen means for that session (it keeps running, it has ended, or it
        was never there)."""
        short = short_id(screen.session_id)
        if screen.unavailable is not None:
            return f"Left {short} ({screen.unavailable.title})."  # an unknown session does not "keep running"
        if screen.ended:
            return f"Left {short}; that session has ended."
        return f"Detached from {short}; the session keeps running."

    def action_help(self) -> None:
        """Show every key; a second ``?`` closes it."""
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
        else:
            self.push_screen(HelpScreen())


def confirm_risks_from_env() -> frozenset[str]:
    """``PRELOOP_CONFIRM_RISK``: the risk levels whose approval asks first, comma-separated
    (default ``high,danger,critical``; ``none`` approves everything with one key)."""
    raw = os.environ.get("PRELOOP_CONFIRM_RISK")
    if raw is None:
        return CONFIRM_RISKS
    levels = {part.strip().lower() for part in raw.split(",") if part.strip()}
    return frozenset(levels - {"none"})


async def run_app(
    backend: Backend,
    *,
    session_id: str | None = None,
    read_only: bool = False,
) -> int:
    """Run the full-screen app in the caller's event loop until the user quits; returns the exit code (see
    the module docstring). The backend stays the caller's to close."""
    app = PreloopApp(
        backend,
        start_session_id=session_id,
        read_only=read_only,
        drafts=DraftStore(state_dir() / "drafts"),
        marks=MarkStore(state_dir() / "marks"),
        handle_signals=True,
        confirm_risks=confirm_risks_from_env(),
    )
    message = await app.run_async()
    if message:
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            print(message)
    return app.return_code or 0
