"""The attach screen: watch one session live and steer it (notes, approvals) without stopping it.

Layout: header (who, session state, connection state, pending approvals), a banner for states that must
not be missed (reconnecting, refused, ended), the timeline (``widgets.timeline_view``) beside a side column
with pending approvals and notes, and the note composer at the bottom (hidden in read-only mode and once
the session ended).

Data flow. As soon as the screen is composed (before its widgets are laid out) one worker asks for the
session row, its notes (``list_notes``) and pending approvals (``list_approvals``) and a second, exclusive
worker starts iterating ``backend.follow(session_id)``, all at once; answers wait for the mount, and a
refusal that both the row and the stream bring is reported once, by the row. Events are not
applied one by one: they are buffered and applied to the ``client.timeline.Timeline`` model in a batch at
most once per frame (``FRAME``), after which the view is synced once and the panels take the note and
approval changes of that batch. ``StreamStatus`` values drive the header and the banner. Both workers
belong to this screen. The app keeps the screen of every followed session (``tui.following``): Escape
and quick switch (``s``, ``b``) leave it following in the background, as it was; ``q`` (detach) removes
it, which cancels the workers and closes the stream.

Focus. The note box has the focus on attach, so whatever the user types becomes a note and never a key
action (``a`` approves!). Escape leaves the box (the draft stays); then the letter keys act (``a``/``d``
approve/decline, ``w`` withdraw, ``x`` arguments, ``c`` commentary, ``n`` back to the box, ``q`` detach)
and a second Escape returns to the sessions list. Which keys apply is gated in ``check_action`` by state
(read-only, ended, anything pending, the highlighted note's state) and shown in the footer.

Typed text never becomes a key command. When the session ends or is refused while the note box has the
focus, the box stays, keeps the focus and the draft, and takes whatever is still typed, saying "session
ended — your draft is kept; Esc to leave" until the operator presses Escape (even a box not painted yet:
the list's Enter may be followed at once by the note's first words). Nothing else moves the focus by
itself. And ``a`` / ``d`` (and the panel's buttons) are ignored for half a second after the screen is
shown, gets the terminal's focus back, or the focus leaves the note box (``tui.typeahead``): a key typed
for what was there before is not a decision.

Every server call goes through the ``client.backend.Backend`` protocol and every failure is a
``client.errors.ClientError`` whose sentence is shown to the user; nothing the user typed is lost on
failure.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import MountError, Widget
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from client.backend import Backend
from client.drafts import DraftStore
from client.errors import ApiError, AuthError, ClientError, NotFound, PermissionDenied
from client.events import ApprovalDecided, ApprovalRequested, Event, NoteEvent, SessionEnded
from client.models import Approval, Note, NoteState, Session
from client.present import approval_outcome, connection_lost, describe_session, short_id
from client.status import (
    Connecting,
    Ended,
    Live,
    LoginNeeded,
    Missed,
    Reconnecting,
    Refused,
    Skipped,
    StreamStatus,
)
from client.streaming.policy import login_reason
from client.textsafe import safe_line
from client.timeline import Timeline, then_line
from tui.screens.confirm import ConfirmScreen
from tui.screens.decide import ask_approve, ask_decline, settle_open_dialogs
from tui.screens.decline_comment import DeclineAnswer, KeptComment
from tui.screens.withdraw_pick import WithdrawPickScreen
from tui.typeahead import Monotonic, TypeAheadGuard
from widgets.approvals_panel import ApprovalsPanel
from widgets.banner import Banner
from widgets.composer import Composer
from widgets.inbox_view import InboxBadge
from widgets.notes_panel import NotesPanel
from widgets.session_header import SessionHeader
from widgets.timeline_view import TimelineView

FRAME = 1 / 60
"""Events are applied and the view synced at most this often."""

HISTORY_EVENTS = 5_000
"""How much history to read when attaching: the newest this many stored events (where the server can send
only a tail). The view keeps about as much; a session of 100,000 events then opens at once, its first line
saying how many earlier events were not loaded."""

FIRST_PAINT_WAIT = 0.25
"""After the first event is applied, the backlog waits (at most this long) until that frame is painted."""

FOOTER_AT_THE_LATEST = 0.5
"""The keys line is mounted once the first events are painted, or this long after the mount (no events)."""

YIELD_EVERY = 100
"""While a backlog streams in, the stream worker lets the screen run after this many events."""

BINDINGS_EVERY = 0.2
"""Key availability (and so the footer) is re-checked at most this often while events pour in."""

COMPACT_BELOW = 100
"""Narrower than this the footer drops its padding and the ``^p palette`` hint (help lists Ctrl+P), so
every key, ``? Help`` included, fits at 80 columns."""

DRAFT_SAVE_DELAY = 0.5
"""The note box is written to the draft store on every edit (a killed app loses nothing); this long after
an edit (at most twice a second while typing), and at once on leaving, it is also flushed to the disk
(see client.drafts)."""

CONFIRM_RISKS = frozenset({"high", "danger", "critical"})
"""Approvals at these risk levels ask "are you sure?" before ``a`` (or the button) approves them; lower
risk stays one key. ``PRELOOP_CONFIRM_RISK`` changes the set (see ``tui.app``)."""

SIDE_PANEL_BELOW = 90
"""Narrower than this the side column would squeeze the timeline (and read "Approv/Declin"): it moves
under the timeline at full width, approvals only, and the notes list is a toggle (``p``)."""

MIN_SIZE = (50, 14)
"""Below this many columns × rows nothing is readable: one notice says so instead of a crushed layout."""

STALE_NOTICE_WINDOW = timedelta(seconds=10)
"""An approval decided elsewhere is announced only if the decision is this recent (not replayed history)."""


class AttachScreen(Screen[None]):
    """One session, live. ``leave(detach)`` is the app's callback for Escape (False) and ``q`` (True)."""

    AUTO_FOCUS = "#composer"
    """Typing goes into the note box from the start: single-letter keys (a approves!) only act once the
    user has left it (Escape, Tab or a click), never because they started typing a note."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve", id="attach.approve", tooltip="Approve the highlighted approval"),
        Binding("d", "decline", "Decline", id="attach.decline", tooltip="Decline (with an optional comment)"),
        Binding(
            "x",
            "expand_args",
            "Args",
            show=False,
            id="attach.expand",
            tooltip="Expand or collapse tool arguments",
        ),
        Binding("w", "withdraw", "Withdraw", id="attach.withdraw", tooltip="Withdraw a pending note"),
        # With nothing pending, w still answers (and says so) but is not offered in the footer.
        Binding("w", "withdraw_none", "Withdraw", show=False, id="attach.withdraw_none"),
        Binding("n", "focus_composer", "Note", id="attach.note", tooltip="Write a note to the agent"),
        Binding("c", "toggle_commentary", "Commentary", id="attach.commentary", tooltip="Collapse narration"),
        Binding(
            "p",
            "toggle_notes",
            "Notes",
            show=False,  # the "✉ Notes … p shows them" line under the timeline says it where it matters
            id="attach.notes",
            tooltip="Narrow terminal: show the notes list instead of the timeline, or back",
        ),
        Binding(
            "l",
            "toggle_wrap",
            "Wrap",
            show=False,
            id="attach.wrap",
            tooltip="Wrap long tool and approval lines in the timeline instead of cutting them",
        ),
        Binding(
            "escape",
            "leave_composer",
            "Leave note",
            id="attach.leave_composer",
            tooltip="Stop typing; then a, d, w and the other keys act",
        ),
        Binding("escape", "back", "Sessions", id="attach.back", tooltip="Back to the sessions list"),
        Binding("q", "detach", "Detach", id="attach.detach", tooltip="Leave; the session keeps running"),
        Binding("s", "app.switch_session", "Switch", id="attach.switch", tooltip="The sessions you follow"),
        Binding(
            "b",
            "app.previous_session",
            "Previous",
            show=False,
            id="attach.previous",
            tooltip="Back to the session shown before this one",
        ),
        Binding(
            "t",
            "jump_then",
            "Then",
            show=False,
            id="attach.then",
            tooltip="Jump to what the agent did first after reading the highlighted note",
        ),
        Binding(
            "e",
            "export",
            "Export",
            show=False,
            id="attach.export",
            tooltip="Write this session as Markdown for the post-incident review",
        ),
        Binding("question_mark", "app.help", "Help", id="attach.help", tooltip="All keys"),
        Binding(
            "f1", "help_from_box", "Help", id="attach.help_f1", tooltip="All keys (? is text in the box)"
        ),
    ]

    DEFAULT_CSS = """
    AttachScreen #body { height: 1fr; }
    AttachScreen #header-row { height: auto; }
    AttachScreen #header-row SessionHeader { width: 1fr; }
    AttachScreen #main { width: 1fr; height: 1fr; }
    AttachScreen TimelineView { width: 1fr; height: 1fr; }
    AttachScreen #follow-hint {
        display: none; height: 1; width: 1fr; padding: 0 1; background: $accent-muted; color: $text;
        text-style: bold;
    }
    AttachScreen #follow-hint.-shown { display: block; }
    AttachScreen #side { width: 40%; min-width: 30; max-width: 70; height: 1fr; }
    AttachScreen #send-error { display: none; height: auto; padding: 0 1; color: $error; }
    AttachScreen #send-error.-shown { display: block; }
    AttachScreen.-no-composer Composer { display: none; }
    /* Notices go top-left, over the oldest lines in view: never over the note box, the keys or the
       newest lines, where the operator is reading and typing. */
    AttachScreen #textual-toastrack { dock: top; align: left top; margin: 1 0 0 1; }
    /* Narrow: the side column goes under the timeline, full width; notes only on request (p). */
    AttachScreen.-narrow #body { layout: vertical; }
    AttachScreen.-narrow #side { width: 1fr; min-width: 0; max-width: 100%; height: auto; max-height: 60%; }
    AttachScreen.-narrow #side ApprovalsPanel { max-height: 100%; }
    AttachScreen.-narrow #side ApprovalsPanel.-expanded { height: auto; }
    AttachScreen.-narrow #side ApprovalsPanel.-expanded > OptionList { height: auto; max-height: 100%; }
    AttachScreen.-narrow #notes { display: none; }
    AttachScreen.-narrow.-show-notes #main { display: none; }
    AttachScreen.-narrow.-show-notes #side { height: 1fr; max-height: 100%; }
    AttachScreen.-narrow.-show-notes #notes { display: block; }
    AttachScreen #notes-hint { display: none; height: 1; padding: 0 1; color: $text-muted; }
    AttachScreen.-narrow #notes-hint { display: block; }
    AttachScreen #too-small { display: none; }
    AttachScreen.-too-small > * { display: none; }
    AttachScreen.-too-small > #too-small {
        display: block; width: 1fr; height: 1fr; content-align: center middle; text-align: center;
        padding: 0 1;
    }
    """

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
    ) -> None:
        super().__init__()
        self.confirm_risks = frozenset(r.lower() for r in confirm_risks)
        self._monotonic = monotonic
        self.guard = TypeAheadGuard(monotonic)
        """Decision keys typed within half a second of the screen coming up are not decisions."""
        self.drafts = drafts if drafts is not None else DraftStore()
        self._draft_timer: Timer | None = None
        self._focus_before_small: Widget | None = None
        self.backend = backend
        self.session_id = session_id
        self.read_only = read_only
        self._leave = leave
        self._clock = clock
        self._follow = follow
        self.timeline = Timeline()
        self.session: Session | None = None
        self.status: StreamStatus | None = None
        self.ended = False
        self.unavailable: ApiError | None = None
        """Set when the server refused the session outright (no such id, no access): nothing to watch."""
        self._buffer: list[Event] = []
        self._flush_scheduled = False
        self._flushed_once = False
        # Note and approval changes the stream brought before the panels' own lists arrived: applied
        # on top of those lists (they are newer), so the history can stream in while the lists load.
        self._panels_loaded = False
        self._early_notes: dict[str, Note] = {}
        self._early_approvals: dict[str, tuple[Approval, datetime]] = {}
        self._decided_here: set[str] = set()
        self._deciding: set[str] = set()
        """Approvals with a decision on its way: a second key press meanwhile must not send another."""
        self._attached_at = clock()
        self._bindings_refresh_scheduled = False
        self._refusal_shown = False
        self._reshown = False
        self._mounted = asyncio.Event()
        """Set once the widgets are mounted: answers that arrive earlier wait for it before touching them."""
        self._row_known = asyncio.Event()
        """Set once the session row's request has settled: a refusal from the stream waits for it, so a
        refused session is reported once (by the row), not twice."""
        self._loading_started = False

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        # Widgets are kept by reference: workers and timers may still touch them while the screen is
        # being torn down, when a query would no longer find them.
        self._header = SessionHeader(
            self.session_id, read_only=self.read_only, clock=self._clock, id="header"
        )
        self._banner = Banner(id="banner")
        self._view = TimelineView(self.timeline, id="timeline")
        self._approvals = ApprovalsPanel(read_only=self.read_only, id="approvals")
        self._notes = NotesPanel(clock=self._clock, id="notes")
        self._send_error = Static("", id="send-error")
        self._composer = Composer(id="composer")
        self._composer.can_focus = not self.read_only
        with Horizontal(id="header-row"):  # the inbox count (all sessions) sits at the header's right
            yield self._header
            yield InboxBadge(id="inbox-badge")
        yield self._banner
        self._follow_hint = Static("", id="follow-hint")
        with Horizontal(id="body"):
            with Vertical(id="main"):
                yield self._view
                yield self._follow_hint
            with Vertical(id="side"):
                yield self._approvals
                yield self._notes
                self._notes_hint = Static("", id="notes-hint")
                yield self._notes_hint
        yield self._send_error
        yield self._composer
        self._too_small = Static("", id="too-small")
        yield self._too_small
        narrow = self.app.size.width < COMPACT_BELOW
        # The keys line comes a frame later: it is composed again each time the keys change (focus
        # moves, the screen is shown), three times while the screen opens, and the events go first.
        self._footer = Footer(compact=narrow, show_command_palette=not narrow)
        if not self._loading_started:
            # The requests leave now, before the widgets are mounted and laid out (the longest part of
            # opening the screen): the server answers meanwhile, and its answers wait for the mount.
            self._loading_started = True
            self.load_initial()
            if self._follow:
                self.follow_stream()

    def on_resize(self) -> None:
        self._fit_layout()
        narrow = self.app.size.width < COMPACT_BELOW
        footer = self._footer
        if footer.show_command_palette == narrow:
            footer.compact = narrow
            footer.show_command_palette = not narrow
            if footer.is_mounted:  # (it is mounted after the first frame: it then composes as it is)
                footer.refresh(recompose=True)  # the Footer reads show_command_palette only when composing

    def _fit_layout(self) -> None:
        """Pick the layout for the terminal's size: side by side, stacked (narrow), or "too small"."""
        width, height = self.app.size
        narrow = width < SIDE_PANEL_BELOW
        if narrow != self.has_class("-narrow"):
            self.set_class(narrow, "-narrow")
            if not narrow:
                self.remove_class("-show-notes")
            self.refresh_bindings()
        min_width, min_height = MIN_SIZE
        small = width < min_width or height < min_height
        if small:
            self._too_small.update(
                Text(
                    f"Terminal too small ({width}×{height}): the session view needs at least "
                    f"{min_width}×{min_height}. Enlarge the window; q detaches, the session keeps running."
                )
            )
        if small and not self.has_class("-too-small"):
            # Keys must reach the screen (q detaches), not a hidden note box that would swallow them.
            self._focus_before_small = self.focused
            self.set_focus(None)
        elif not small and self.has_class("-too-small"):
            if self._focus_before_small is not None and self._focus_before_small.is_attached:
                self.set_focus(self._focus_before_small)
            self._focus_before_small = None
        self.set_class(small, "-too-small")

    @on(NotesPanel.Counted)
    def _notes_counted(self, event: NotesPanel.Counted) -> None:
        event.stop()
        self._update_notes_hint()

    def _update_notes_hint(self) -> None:
        title = str(self._notes.border_title or "Notes")
        where = "p: back to the timeline" if self.has_class("-show-notes") else "p shows them"
        self._notes_hint.update(Text(f"✉ {title} · {where}"))

    def action_toggle_notes(self) -> None:
        """Narrow terminal: the notes list takes the timeline's place, or gives it back, and takes the focus
        with it (focus left on the hidden timeline is lost, and after a dialog it would land in the note
        box, where the next letter keys would be typed instead of acting)."""
        self.toggle_class("-show-notes")
        (self._notes if self.has_class("-show-notes") else self._view).focus()
        self._update_notes_hint()
        self.refresh_bindings()

    def action_toggle_wrap(self) -> None:
        """Long tool and approval lines are cut to the width; wrap them in full, or cut them again."""
        self._view.wrap_lines = not self._view.wrap_lines

    def on_mount(self) -> None:
        self._fit_layout()
        self._update_notes_hint()
        self.watch(self._view, "following", self._show_follow_hint)
        self.watch(self._view, "unseen", self._show_follow_hint)
        self._update_composer_visibility()
        if self.read_only:
            self._view.focus()
        else:
            self._restore_draft()
        if self.status is not None:
            self.header.set_status(self.status)  # "connecting": the stream started before the mount
        self.guard.arm()
        self.watch(self.app, "app_focus", self._app_focus_changed, init=False)
        self.watch(self, "focused", self._focus_moved, init=False)
        self._mounted.set()
        # The keys line once the first events are on screen (see ``follow_stream``), or after a moment
        # when no event comes (not following, or nothing stored yet).
        self.set_timer(FOOTER_AT_THE_LATEST, self._mount_footer)

    def _app_focus_changed(self, focused: bool) -> None:
        if focused:  # the terminal window is back: the next keys may have been meant for another window
            self.guard.arm()

    def _focus_moved(self, old: Widget | None, new: Widget | None) -> None:
        if old is self._composer and new is not self._composer:
            self.guard.arm()  # the operator was typing a note a moment ago

    async def _mount_footer(self) -> None:
        """The keys line, after the first frame (see ``compose``); it lists keys once told they changed."""
        if self._footer.parent is not None or not self.is_attached:
            return
        try:
            await self.mount(self._footer)
        except MountError:  # the screen was being taken apart meanwhile: nothing to show keys for
            return
        self.refresh_bindings()

    def on_unmount(self) -> None:
        self.save_draft()

    @property
    def composer(self) -> Composer:
        """The note box (kept by reference: it answers even while the screen is torn down)."""
        return self._composer

    @property
    def notes_panel(self) -> NotesPanel:
        """Every note sent to this session, by reference like the other parts."""
        return self._notes

    @property
    def approvals_panel(self) -> ApprovalsPanel:
        """The approvals waiting for a decision, by reference like the other parts."""
        return self._approvals

    @property
    def header(self) -> SessionHeader:
        """Who, session state and connection state, by reference like the other parts."""
        return self._header

    @property
    def banner(self) -> Banner:
        """The line for states that must not be missed, by reference like the other parts."""
        return self._banner

    @property
    def view(self) -> TimelineView:
        """The timeline view, by reference like the other parts."""
        return self._view

    # ------------------------------------------------------------------ loading and streaming

    @work(exclusive=True, group="attach-load")
    async def load_initial(self) -> None:
        """Session row, notes and pending approvals, requested together with the stream (see
        ``compose``); the row is shown as soon as it comes, and a refused row stops the stream."""
        lists = asyncio.gather(
            self.backend.list_notes(session_id=self.session_id),
            self.backend.list_approvals(session_id=self.session_id),
            return_exceptions=True,  # both finish before either failure is looked at
        )
        try:
            try:
                row: Session | ClientError = await self.backend.get_session(self.session_id)
            except ClientError as exc:
                row = exc
            await self._mounted.wait()
            refused = isinstance(row, ClientError) and self._load_failed(row)
            self._row_known.set()  # after a refusal is on screen: the stream's own then stays unsaid
            if refused:
                self.workers.cancel_group(self, "attach-stream")
                return
            if isinstance(row, Session):
                self._set_session(row)
            notes, approvals = await lists
            if isinstance(notes, BaseException):
                raise notes
            if isinstance(approvals, BaseException):
                raise approvals
        except ClientError as exc:
            if self._load_failed(exc):
                return
        else:
            self.notes_panel.upsert_many(notes.notes)
            self.approvals_panel.set_pending(approvals.items)
            self._pending_changed()
        finally:
            lists.cancel()  # when the row was refused or the screen went away: nothing left waiting
        self._panels_loaded = True
        early_notes, self._early_notes = self._early_notes, {}
        early_approvals, self._early_approvals = self._early_approvals, {}
        self._apply_panel_changes(early_notes, early_approvals)

    def _load_failed(self, exc: ClientError) -> bool:
        """Say why loading failed. True for a definite no (404/403: following would only be refused
        again, and a note could not be sent); False when the stream should keep trying (server down, or
        a refused token: a login in another terminal fixes it, and the stream waits for it)."""
        cancelled = get_current_worker().is_cancelled
        if isinstance(exc, NotFound | PermissionDenied):
            if not cancelled:
                self._refuse(exc)
            return True
        if not cancelled:
            why = login_reason(401) if isinstance(exc, AuthError) else f"Could not load the session: {exc}"
            self.banner.show(why, "warning" if isinstance(exc, AuthError) else "error")
        return False

    @work(exclusive=True, group="attach-stream")
    async def follow_stream(self) -> None:
        """Iterate the follower until the session ends, the server refuses, or the screen goes away."""
        since_yield = 0
        try:
            async for item in self.backend.follow(self.session_id, tail=HISTORY_EVENTS):
                if not self._mounted.is_set():
                    if isinstance(item, Connecting):
                        self.status = item  # the header shows it once mounted; the request goes out now
                        continue
                    await self._mounted.wait()
                if isinstance(item, Refused) and not await self._refusal_is_news():
                    return
                if isinstance(item, StreamStatus):
                    self.apply_status(item)
                    continue
                self._buffer.append(item)
                if not self._flushed_once:
                    # The first event is shown at once, and the screen gets a frame to paint it before
                    # the rest of a backlog is read: the operator sees the session, then it catches up.
                    self._flush()
                    await self._painted()
                    await self._mount_footer()
                    continue
                if not self._flush_scheduled:
                    self._flush_scheduled = True
                    self.set_timer(FRAME, self._flush)  # then at most once per frame
                since_yield += 1
                if since_yield >= YIELD_EVERY:
                    # A backlog arrives faster than it is read: let the screen paint between chunks.
                    since_yield = 0
                    await asyncio.sleep(0)
        except ClientError as exc:
            if await self._refusal_is_news():
                self.apply_status(Refused(str(exc)))
        except Exception as exc:  # a bug below us must not take the operator's screen down with it
            self.apply_status(Refused(f"the event stream stopped unexpectedly ({type(exc).__name__}: {exc})"))

    async def _painted(self) -> None:
        """Wait until the app has painted what was just applied (at most ``FIRST_PAINT_WAIT``: a screen
        followed in the background is not painted at all)."""
        painted = asyncio.get_running_loop().create_future()

        def done() -> None:
            if not painted.done():
                painted.set_result(None)

        self.app.call_after_refresh(done)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(painted, FIRST_PAINT_WAIT)

    async def _refusal_is_news(self) -> bool:
        """The stream was refused: say so, unless the session row's refusal already did (the row and the
        stream are asked at once, and a session that does not exist refuses both). The row is known only
        once the screen is mounted."""
        await self._row_known.wait()
        return self.unavailable is None

    def _flush(self) -> None:
        self._flush_scheduled = False
        # The view, not the screen: when the screen is taken apart its widgets go first.
        if not self._buffer or not self._view.is_attached:
            return
        self._flushed_once = True
        batch, self._buffer = self._buffer, []
        self.timeline.apply_many(batch)
        # Panels take the net change of the whole batch: one rebuild each, however many events.
        notes: dict[str, Note] = {}
        approvals: dict[str, tuple[Approval, datetime]] = {}
        for event in batch:
            if isinstance(event, NoteEvent):
                notes[event.note.note_id] = event.note
            elif isinstance(event, ApprovalRequested | ApprovalDecided):
                approvals[event.approval.id] = (event.approval, event.at)
            elif isinstance(event, SessionEnded):
                self._set_session(event.session)
                self._mark_ended(event.reason)
        if self._panels_loaded:
            self._apply_panel_changes(notes, approvals)
        else:
            self._early_notes.update(notes)
            self._early_approvals.update(approvals)
        if self.timeline.session is not None and self.timeline.session is not self.session:
            self._set_session(self.timeline.session)
        self._view.sync()

    def _apply_panel_changes(
        self, notes: dict[str, Note], approvals: dict[str, tuple[Approval, datetime]]
    ) -> None:
        """One batch's net note and approval changes into the panels (one rebuild each)."""
        if notes:
            self.notes_panel.upsert_many(notes.values())
            self._bindings_changed()  # withdraw depends on the highlighted note's state
        if approvals:
            left = self.approvals_panel.apply(a for a, _ in approvals.values())
            for approval in left:
                if settle_open_dialogs(self.app, approval):
                    continue  # the open dialog says it; no toast on top
                self._announce_decided_elsewhere(approval, approvals[approval.id][1])
            self._pending_changed()
        self._update_thens()

    def _update_thens(self) -> None:
        """Each delivered note's "then: ..." line follows what the agent did next (its text grows)."""
        for note_id, record in self.timeline.notes.items():
            if record.then_entry_id is not None:
                entry = self.timeline.then_entry(note_id)
                if entry is not None:
                    self.notes_panel.set_then(note_id, then_line(entry, 80))

    def apply_status(self, status: StreamStatus) -> None:
        """Show a connection state change in the header and, when it needs attention, the banner."""
        self.status = status
        self.header.set_status(status)
        feed_status = getattr(self.app, "feed_status", None)  # app-wide news (a refused token) said once
        if feed_status is not None:
            feed_status(status)
        if isinstance(status, LoginNeeded):  # everything stays (box, draft, timeline) and resumes
            self.banner.show(status.reason, "warning")
        elif isinstance(status, Live):
            if not self.ended:
                self.banner.clear()
        elif isinstance(status, Reconnecting):
            # The header counts down to the next attempt; the banner says what happened and what follows.
            self.banner.show(
                f"{connection_lost(status.reason)}. Reconnecting (attempt {status.attempt}); the stream "
                "resumes where it stopped, nothing is missed.",
                "warning",
            )
        elif isinstance(status, Refused):
            code = f" ({status.status})" if status.status else ""
            self.banner.show(f"The server refused the stream{code}: {status.reason}", "error")
            self.notify(safe_line(status.reason, 300), title="Stream refused", severity="error", markup=False)
        elif isinstance(status, Ended):
            self._flush()
            self._mark_ended(None)
        elif isinstance(status, Missed):
            self.notify(
                f"{status.count} event(s) could not be recovered after reconnecting.",
                severity="warning",
                markup=False,
            )
        elif isinstance(status, Skipped):
            self.notify(
                f"Skipped an unreadable event ({safe_line(status.reason, 120)}); {status.total} so far.",
                severity="warning",
                markup=False,
            )

    def _show_follow_hint(self) -> None:
        """Scrolled up to read: say that following is paused, how much arrived below, and how to resume."""
        view = self._view
        unseen = view.unseen
        if unseen:
            self._follow_hint.update(Text(f"↓ {unseen} new · End to follow"))
        else:
            self._follow_hint.update(Text("⏸ following paused · End to follow"))
        self._follow_hint.set_class(not view.following, "-shown")

    def _refuse(self, exc: ApiError) -> None:
        """The session cannot be watched at all: one banner says why and where to go; no stream, no box."""
        self.unavailable = exc
        self.header.set_status(Refused(str(exc), exc.status))
        self.banner.show(str(exc), "error", hint="Escape: back to the sessions list")
        self._update_composer_visibility()
        self.refresh_bindings()

    def leave_message(self) -> str:
        """What to tell the user on leaving: an ended or unknown session does not "keep running"."""
        short = short_id(self.session_id)
        if self.unavailable is not None:
            return f"Left {short} ({self.unavailable.title})."
        if self.ended:
            return f"Left {short}; that session has ended."
        return f"Detached from {short}; the session keeps running."

    def _set_session(self, session: Session) -> None:
        self.session = session
        self.header.set_session(session)
        if session.ended:
            self._mark_ended(None)

    def _mark_ended(self, reason: str | None) -> None:
        if self.ended and reason is None:
            return
        self.ended = True
        why = f" ({safe_line(reason, 80)})" if reason else ""
        self.banner.show(f"Session ended{why}. The transcript stays; notes can no longer be sent.", "info")
        self._update_composer_visibility()
        self.refresh_bindings()

    def _update_composer_visibility(self) -> None:
        """Show the note box only where a note can be sent; but a box the operator may be typing into is
        never taken away from under their fingers: it closes instead (keeps the focus, the draft and what
        is still typed) until they press Escape."""
        closed = self.ended or self.unavailable is not None
        composer = self._composer
        # Focus may still be on its way to the box (focus is applied after the current message).
        if closed and not self.read_only and composer.closed is None and self.focused in (None, composer):
            composer.close("Session ended" if self.unavailable is None else "Session not available")
            if self.focused is None:
                composer.focus()
            return
        if composer.closed is not None and composer.has_focus:
            return  # stays until Escape
        hidden = self.read_only or closed
        self.set_class(hidden, "-no-composer")
        if hidden and self.focused in (None, self._composer):
            self._view.focus()

    # ------------------------------------------------------------------ approvals

    def _announce_decided_elsewhere(self, approval: Approval, at: datetime) -> None:
        """A shown approval stopped being pending and not by this screen: say so (unless it is history)."""
        if approval.id in self._decided_here or at < self._attached_at - STALE_NOTICE_WINDOW:
            return
        if not self.is_current:
            return  # followed in the background (quick switch): its panel shows it when switched back
        self.notify(
            approval_outcome(approval.tool_name or "tool", approval.status, elsewhere=True),
            title="Approval no longer pending",
            markup=False,
        )

    def _pending_changed(self) -> None:
        count = self.approvals_panel.count
        if count != self.header.pending_approvals:
            self.header.set_pending(count)
            self._bindings_changed()

    def _bindings_changed(self) -> None:
        """Re-check which keys apply, at most every ``BINDINGS_EVERY`` s: the footer re-composes each time."""
        if not self._bindings_refresh_scheduled:
            self._bindings_refresh_scheduled = True
            self.set_timer(BINDINGS_EVERY, self._refresh_bindings_now)

    def _refresh_bindings_now(self) -> None:
        self._bindings_refresh_scheduled = False
        self.refresh_bindings()

    def _too_soon(self, verb: str) -> bool:
        """A decision key typed within half a second of the screen coming up (or of leaving the note box)
        was meant for what was there before: ignore it, and say so once."""
        if self.guard.ready():
            return False
        if self.guard.tell_once():
            self.notify(
                f"Ignored: the screen had only just changed. Press the key again to {verb}.",
                title="Key not taken",
                severity="warning",
                markup=False,
            )
        return True

    def action_approve(self) -> None:
        """Approve the highlighted approval (the agent's tool call goes ahead); a risky one asks first."""
        approval = self.approvals_panel.selected
        if approval is not None and not self._too_soon("approve"):
            self._approve(approval)

    def _approve(self, approval: Approval) -> None:
        ask_approve(
            self.app,
            approval,
            self.describe(),
            confirm_risks=self.confirm_risks,
            clock=self._monotonic,
            approve=lambda: self.decide(approval, "approve", None),
        )

    def action_decline(self) -> None:
        """Ask for an optional comment, then decline."""
        approval = self.approvals_panel.selected
        if approval is None or self._too_soon("decline"):
            return

        def _answered(answer: DeclineAnswer) -> None:
            if isinstance(answer, KeptComment):
                self.keep_as_draft(answer.text, answer.line)
            elif answer is not None:
                self.decide(approval, "decline", answer or None)

        ask_decline(self.app, approval, self.describe(), clock=self._monotonic, answered=_answered)

    def keep_as_draft(self, text: str, why: str) -> None:
        """Words typed for a decision that no longer waits go into the note box, so they can still be sent
        as a note: added to the draft, the box focused, a line saying what happened."""
        composer = self._composer
        current = composer.text.rstrip("\n")
        composer.load_text(f"{current}\n{text}" if current else text)
        composer.move_cursor(composer.document.end)
        self.save_draft()
        self.remove_class("-no-composer")
        composer.focus()
        self._show_send_error(f"{why} Your comment is in the note box: Enter sends it as a note.")
        self._refusal_shown = True

    def action_expand_args(self) -> None:
        """Show all of the highlighted approval's arguments (or collapse them)."""
        self.approvals_panel.toggle_expanded()

    @on(ApprovalsPanel.Decide)
    def _panel_decide(self, event: ApprovalsPanel.Decide) -> None:
        event.stop()
        if event.decision == "approve":
            if not self._too_soon("approve"):
                self._approve(event.approval)
        else:
            self.action_decline()

    @work(group="attach-decide")
    async def decide(self, approval: Approval, decision: str, comment: str | None) -> None:
        """Send a decision; a decision that lost a race is shown as such and the approval leaves the list."""
        if self.read_only or approval.id in self._deciding:
            return
        tool = safe_line(approval.tool_name or "tool", 40)
        self._decided_here.add(approval.id)
        self._deciding.add(approval.id)
        try:
            if decision == "approve":
                result = await self.backend.approve(approval.id, comment)
            else:
                result = await self.backend.decline(approval.id, comment)
        except ClientError as exc:
            self._deciding.discard(approval.id)
            self._decided_here.discard(approval.id)
            try:
                current = await self.backend.get_approval(approval.id)
            except ClientError:
                current = None
            if current is not None and not current.pending:
                self.approvals_panel.upsert(current)
                self._pending_changed()
                self.notify(
                    approval_outcome(approval.tool_name or "tool", current.status, elsewhere=True),
                    title="Approval no longer pending",
                    severity="warning",
                    markup=False,
                )
            else:
                self.notify(str(exc), title=f"Could not {decision} {tool}", severity="error", markup=False)
            return
        self._deciding.discard(approval.id)
        self.approvals_panel.upsert(result)
        self._pending_changed()
        word = "Approved" if decision == "approve" else "Declined"
        self.notify(f"{word}: {tool}", title="Approval decided", markup=False)

    # ------------------------------------------------------------------ notes

    def action_focus_composer(self) -> None:
        """Put the cursor in the note box."""
        self.composer.focus()

    @on(Composer.Submitted)
    def _composer_submitted(self, event: Composer.Submitted) -> None:
        event.stop()
        self.send_note(event.text)

    @on(Composer.Refused)
    def _composer_refused(self, event: Composer.Refused) -> None:
        event.stop()
        self._show_send_error(event.reason)
        self._refusal_shown = True

    def _restore_draft(self) -> None:
        draft = self.drafts.get(self.session_id)
        if draft and not self._composer.text:
            self._composer.load_text(draft)
            self._composer.move_cursor(self._composer.document.end)

    def save_draft(self) -> None:
        """Keep what is in the note box for this session (re-attach, restart and crash all find it)."""
        if self._draft_timer is not None:
            self._draft_timer.stop()
            self._draft_timer = None
        if not self.read_only:
            self.drafts.put(self.session_id, self._composer.text, durable=True)

    @on(Composer.Changed, "#composer")
    def _composer_changed(self) -> None:
        if not self.read_only:
            self.drafts.put(self.session_id, self._composer.text)  # every keystroke: a kill loses none
        if self._draft_timer is None and not self.read_only:
            self._draft_timer = self.set_timer(DRAFT_SAVE_DELAY, self.save_draft)
        # "Too long" / "empty" describe the text as it was; once it is edited they are stale. A server's
        # reason ("not sent: unreachable") stays until the next attempt: editing does not make it untrue.
        if self._refusal_shown:
            self._refusal_shown = False
            self._show_send_error("")

    def _show_send_error(self, reason: str) -> None:
        line = self._send_error
        line.update(Text(f"✗ {safe_line(reason, 300)}"))
        line.set_class(bool(reason), "-shown")

    @work(exclusive=True, group="attach-send")
    async def send_note(self, text: str) -> None:
        """Send the composer's text; on failure it stays in the box with the server's reason under it."""
        composer = self.composer
        # Never read-only meanwhile: a read-only box passes letters on to the screen's keys (a approves).
        composer.start_sending()
        try:
            note = await self.backend.send_note(text, session_id=self.session_id)
        except ClientError as exc:
            # One place only: under the box that still holds the text (a toast would cover the line).
            self._show_send_error(f"Not sent, your text is kept: {exc}")
            self.app.bell()
            return
        finally:
            composer.done_sending()
        composer.accept(text)
        self.save_draft()  # the draft is gone with the note it became
        self._show_send_error("")
        self.notes_panel.upsert(note)
        self._bindings_changed()
        self.notify(
            "Note sent; the agent reads it at its next tool or model call.", title="Note queued", markup=False
        )

    def action_withdraw(self) -> None:
        """Withdraw a pending note: the highlighted one if the notes list has the focus, else the only
        pending one, else ask which; a yes/no question comes first (the picker is one itself)."""
        pending = self.notes_panel.pending_notes
        if not pending:
            self.action_withdraw_none()
            return
        highlighted = self.notes_panel.highlighted_note
        if self.notes_panel.has_focus and highlighted is not None:
            if highlighted.state != NoteState.PENDING:
                self.notify(
                    f"Only a pending note can be withdrawn; this one is {highlighted.state}.",
                    severity="warning",
                    markup=False,
                )
                return
            self._confirm_withdraw(highlighted)
        elif len(pending) == 1:
            self._confirm_withdraw(pending[0])
        else:

            def _picked(note: Note | None) -> None:
                if note is not None:
                    self.withdraw(note)

            self.app.push_screen(WithdrawPickScreen(pending, self._clock()), _picked)

    def action_withdraw_none(self) -> None:
        """``w`` with nothing it can withdraw: say why (no pending note, or a server that cannot withdraw)
        rather than do nothing."""
        if not self.backend.capabilities.withdraw_notes:
            self.notify(
                "This server cannot withdraw a note once it is sent: the note stays until the agent reads "
                "it or the session ends.",
                markup=False,
            )
            return
        self.notify("Nothing pending to withdraw.", markup=False)

    def _confirm_withdraw(self, note: Note) -> None:
        preview = safe_line(note.text, 160)

        def _answered(yes: bool | None) -> None:
            if yes:
                self.withdraw(note)

        self.app.push_screen(
            ConfirmScreen("Withdraw this note?", preview, yes="Withdraw", no="Keep", clock=self._monotonic),
            _answered,
        )

    @work(group="attach-withdraw")
    async def withdraw(self, note: Note) -> None:
        """Ask the server to cancel the note; a refusal (it was already picked up) says why."""
        try:
            result = await self.backend.withdraw_note(note.note_id)
        except ClientError as exc:
            self.notify(str(exc), title="Note not withdrawn", severity="error", markup=False)
            return
        self.notes_panel.upsert(result)
        self._bindings_changed()
        if result.state == NoteState.CANCELLED:
            self.notify("Note withdrawn; the agent will not see it.", title="Withdrawn", markup=False)
        else:
            self.notify(
                f"Too late: the note was already {safe_line(result.state, 20)}, so it was not withdrawn.",
                title="Note not withdrawn",
                severity="warning",
                markup=False,
            )

    # ------------------------------------------------------------------ navigation and gating

    def action_toggle_commentary(self) -> None:
        """``c`` from the side panels too (the timeline answers ``c`` itself when it has the focus)."""
        self._view.action_toggle_commentary()

    def action_jump_then(self) -> None:
        """Did it listen? Show what the agent did first after reading the highlighted (or newest read)
        note: the timeline scrolls there and stops following."""
        note = self.notes_panel.highlighted_note
        if note is None or self.timeline.notes.get(note.note_id, None) is None:
            read = [r for r in self.timeline.notes.values() if r.then_entry_id is not None]
            if not read:
                self.notify("No note has been read by the agent yet.", markup=False)
                return
            note = read[-1].note
        record = self.timeline.notes.get(note.note_id)
        entry = self.timeline.then_entry(note.note_id)
        if entry is not None and self._view.scroll_to_entry(entry.id):
            self._view.focus()
            return
        if record is None or record.delivered_entry_id is None:
            message = f"This note is {safe_line(note.state, 20)}: the agent has not read it."
        elif record.then_entry_id is None:
            message = "The agent read this note and has not done anything since."
        else:
            message = "What the agent did next is no longer in the timeline (older entries were dropped)."
        self.notify(message, markup=False)

    @work(group="attach-export")
    async def action_export(self) -> None:
        """Write the session as Markdown (what the screen holds) for the post-incident review."""
        from client.export import build_export, export_file_name, to_markdown, write_atomically
        from client.paths import exports_dir

        now = self._clock()
        doc = build_export(
            self.session_id,
            self.timeline,
            session=self.session,
            notes=list(self.notes_panel.notes.values()),
            exported_at=now,
        )
        target = exports_dir() / export_file_name(self.session_id, now, "md")
        try:
            await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
            await asyncio.to_thread(write_atomically, target, to_markdown(doc))
        except OSError as exc:
            self.notify(f"Could not write {target}: {exc.strerror or exc}", severity="error", markup=False)
            return
        self.notify(f"Saved to {target}", title="Session exported", markup=False, timeout=10)

    def shown_again(self) -> None:
        """A followed session comes back on screen (list, inbox, ``b``, ``s``): the note box takes the focus
        again, as on a first attach, so what the user types next is a note, never a key action (``a``
        approves!). Scroll, folds and the draft stay as they were."""
        self._reshown = True

    def on_screen_resume(self) -> None:
        self.guard.arm()  # shown again, or a dialog above it closed: the next keys were typed for that
        if self._reshown:
            self._reshown = False
            if self.check_action("focus_composer", ()):
                self._composer.focus()

    def action_leave_composer(self) -> None:
        """Escape in the note box: keep the draft, move to the timeline so the letter keys act (a box that
        can no longer send goes away now: the operator has seen that it is closed)."""
        self._view.focus()
        if self._composer.closed is not None:
            self.save_draft()
            self.add_class("-no-composer")

    async def action_help_from_box(self) -> None:
        """F1 from the note box, where ``?`` is just a character: the same help screen."""
        await self.app.run_action("help")

    def action_back(self) -> None:
        """Escape outside the note box: back to the sessions list (the session keeps running)."""
        self._leave(False)

    def action_detach(self) -> None:
        """Stop watching; the session itself keeps running."""
        self._leave(True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer a key (footer, palette) only when it can do something in the screen's current state."""
        can = self.backend.capabilities  # what this kind of server can do at all
        if action in ("approve", "decline"):
            # Not while the screen is too small to show what would be decided.
            return (
                can.approvals
                and not self.read_only
                and self.approvals_panel.count > 0
                and not self.has_class("-too-small")
            )
        if action == "expand_args":
            return self.approvals_panel.count > 0
        if action == "withdraw":
            return can.withdraw_notes and not self.read_only and bool(self.notes_panel.pending_notes)
        if action == "withdraw_none":  # hidden; answers w with why nothing can be withdrawn
            return not self.read_only and (not can.withdraw_notes or not self.notes_panel.pending_notes)
        if action == "focus_composer":
            return can.notes and not (self.read_only or self.ended or self.unavailable is not None)
        if action in ("leave_composer", "help_from_box"):
            # F1 is listed only while typing (elsewhere ? is shown); the app's own F1 still answers.
            return self._composer.has_focus
        if action == "back":
            return not self._composer.has_focus
        if action == "toggle_notes":
            return self.has_class("-narrow")
        return True

    @on(NotesPanel.OptionHighlighted)
    def _note_highlighted(self) -> None:
        self._bindings_changed()

    def describe(self) -> str:
        """A one-line name of the session for notices ("a1b2c3d4 (agent)")."""
        return describe_session(self.session_id, self.session.agent_label if self.session else None)
