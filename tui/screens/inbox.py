"""The attention inbox: every session's pending approvals and undelivered notes on one screen.

The app keeps one :class:`client.inbox.Inbox` fed by ``Backend.watch_attention()`` (pushed by our
server, polled elsewhere) for as long as it runs; this screen only draws it and acts on it. Approvals
are oldest first with their session, tool, risk, call in one line (the command, the file edited and its
+/− counts, ...; cut to the column with an ellipsis: ``x`` shows the whole call) and expiry countdown; a
terminal 120 columns wide or more shows the highlighted call's preview (``client.preview``: a diff, a
command, the arguments) beside the list; ``a`` approves, ``d`` declines with an optional comment (the
same ``tui.screens.decide.Decider`` as the attach screen), Enter opens the session.
Below them: the notes that ended expired, failed or undeliverable in the last hours, the approvals that
were settled elsewhere while the inbox was open, and the sessions followed in the app, each with how many
events are new since the operator last looked there and what needs them (``client.marks.News``).
Opening the inbox marks its notes as seen.

Many at once: space marks (or unmarks) the highlighted approval and ``M`` marks every one (or, all marked,
none); the title counts the marked ones and each marked row shows ● before its waiting time. With rows
marked, ``a`` and ``d`` decide the marked set, never only the highlighted row: one dialog names how many,
which tools, which sessions, the highest risk and every risky call (``tui.screens.decide.Decider``), and
a decline's comment goes with each. The rows being decided show …; then each marked approval's result is
listed under the table (decided; already decided, by whom and when as far as the server says; expired;
not decided and why): those decided or settled leave the list, those not decided stay, still marked.

``a`` and ``d`` are ignored for half a second after the inbox opens, comes back from a dialog, or the
terminal gets the focus back (``tui.typeahead``): the inbox opens with a key (``i``, F2), and the letters
typed right after it were not meant for it. The one-key approve of a low-risk call is guarded the same way.
``A`` opens "allow calls like this for …" for the highlighted approval (``tui.screens.allow``), a key
guarded like ``a`` and ``d``; the banner under the title says which allow rules (or a Preloop kill
switch) hold. Its letters (``a``, ``d``, ``A``, ``o``, ``x``, ``i``) act only when pressed alone
(``tui.keypace``); a burst of typing here is text, kept in the draft of the session the inbox was opened
from, and the Enter ending it opens nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from client.inbox import Inbox
from client.marks import News
from client.models import Approval
from client.present import describe_session
from client.status import Connecting, Live, LoginNeeded, Reconnecting, Refused, StreamStatus
from client.steering import AlreadySettled, BatchDecision, Decided, DecideOutcome, Steering
from client.stream_words import status_line, status_words
from tui.screens.arguments import whole_call
from tui.screens.decide import Decider
from tui.screens.decline_comment import KeptComment
from tui.typeahead import Monotonic
from widgets.batch_view import batch_results, marked_in_order
from widgets.call_preview import CallPreviewPane
from widgets.inbox_view import (
    DECIDING,
    MARKED,
    InboxApprovals,
    InboxBadge,
    agent_of,
    decided_elsewhere_text,
    failed_notes_text,
    followed_text,
    update_static,
)
from widgets.standing import StandingBanner

TICK_SECONDS = 1.0
PREVIEW_PANE_WIDTH = 120
"""From this many columns the inbox shows the highlighted approval's call beside the list."""


def feed_state(status: StreamStatus | None, synced: bool) -> Text:
    """How fresh the inbox is: live, (re)connecting, or refused."""
    if isinstance(status, Refused):
        return Text(f"✗ {status_line(status)}", style="bold red")
    if isinstance(status, Reconnecting):
        return Text(f"◌ {status_line(status)}", style="yellow")
    if isinstance(status, LoginNeeded):
        return Text(f"⚠ {status_words(status)} (`preloop login`)", style="bold yellow")
    if isinstance(status, Connecting) or not synced:
        return Text("◌ connecting…", style="yellow")
    if isinstance(status, Live) or synced:
        return Text("● live", style="green")
    return Text("")


class InboxScreen(Screen[None]):
    """All sessions' approvals and failed notes; updates whenever the app's inbox changes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "Approve", id="inbox.approve", tooltip="Approve the highlighted approval"),
        Binding("d", "decline", "Decline", id="inbox.decline", tooltip="Decline (with an optional comment)"),
        Binding(
            "A",
            "allow_like",
            "Allow like this",
            show=False,
            id="inbox.allow_like",
            tooltip="Allow (or mute) calls like the highlighted one for a while",
        ),
        Binding(
            "o,enter", "open", "Open session", id="inbox.open", tooltip="Attach to this approval's session"
        ),
        Binding("x", "arguments", "Args", id="inbox.arguments", tooltip="The highlighted call in full"),
        Binding(
            "space",
            "mark",
            "Mark",
            show=False,
            id="inbox.mark",
            tooltip="Mark or unmark the highlighted approval: a / d then decide every marked one",
        ),
        Binding(
            "M",
            "mark_all",
            "Mark all",
            show=False,
            id="inbox.mark_all",
            tooltip="Mark every approval listed (all marked already: unmark them)",
        ),
        Binding("escape,i", "back", "Back", id="inbox.back", tooltip="Back to where you were"),
        Binding("question_mark", "app.help", "Help", id="inbox.help", tooltip="All keys"),
    ]

    DEFAULT_CSS = """
    InboxScreen #inbox-top { height: 1; background: $panel; }
    InboxScreen #inbox-title { width: 1fr; padding: 0 1; text-style: bold; }
    InboxScreen #inbox-state { width: auto; padding: 0 1; }
    InboxScreen #inbox-empty { padding: 1 2; color: $text-muted; }
    InboxScreen #inbox-recent { padding: 0 1; margin-top: 1; color: $text-muted; }
    InboxScreen #inbox-batch { padding: 0 1; margin-top: 1; display: none; }
    InboxScreen #inbox-notes { padding: 0 1; margin-top: 1; }
    InboxScreen #inbox-followed { padding: 0 1; margin-top: 1; }
    InboxScreen #inbox-main { height: 1fr; }
    InboxScreen #inbox-preview { display: none; width: 40%; max-width: 72; }
    InboxScreen.-wide #inbox-preview { display: block; }
    """

    def __init__(
        self,
        steering: Steering,
        inbox: Inbox,
        *,
        open_session: Callable[[str], None],
        clock: Callable[[], datetime],
        read_only: bool = False,
        confirm_risks: frozenset[str] = frozenset(),
        monotonic: Monotonic | None = None,
        keep_as_draft: Callable[[str, str, str], None] | None = None,
        followed: Callable[[], Sequence[tuple[str, str | None, News]]] | None = None,
    ) -> None:
        super().__init__()
        self._steering = steering
        self._followed = followed
        """(session id, agent, news) of each session followed in the app: how many events are new since
        the operator last looked, and what needs them (the "Sessions you follow" part)."""
        self._keep_as_draft = keep_as_draft
        """(session id, words, why): a decline comment whose approval was settled meanwhile, kept as a
        draft note of its session."""
        self.decider = Decider(
            self,
            steering,
            confirm_risks=confirm_risks,
            clock=monotonic,
            read_only=read_only,
            just_shown="the inbox had only just opened",
            keep=self._kept,
            decided=self._decided,
        )
        self.guard = self.decider.guard
        """Decision keys typed within half a second of the inbox coming up are not decisions."""
        self.inbox = inbox
        self.open_session = open_session
        self._clock = clock
        self.read_only = read_only
        self.status: StreamStatus | None = None
        self._shown_version = -1
        self._can_act: bool | None = None
        """Whether an approval was highlighted when the keys were last checked (the footer follows it)."""
        self.marked: dict[str, None] = {}
        """The approvals marked to be decided together (space, M), in the order marked."""
        self.deciding: set[str] = set()
        """Marked approvals whose decision is on its way."""
        self.last_batch: BatchDecision | None = None
        """What came of the last decision of marked approvals (listed under the table)."""
        self._batch_rows: dict[str, Approval] = {}
        """The approvals of the last batch as they were listed when it was decided."""
        self._batch_drawn: BatchDecision | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="inbox-top"):
            yield Static("", id="inbox-title")
            yield Static("", id="inbox-state")
            yield InboxBadge(id="inbox-badge")
        yield StandingBanner(id="standing")
        with Horizontal(id="inbox-main"):
            with VerticalScroll(id="inbox-body"):
                yield InboxApprovals(id="inbox-approvals")
                yield Static("", id="inbox-batch")
                yield Static("", id="inbox-empty")
                yield Static("", id="inbox-recent")
                yield Static("", id="inbox-notes")
                yield Static("", id="inbox-followed")
            yield CallPreviewPane(id="inbox-preview")
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        """A terminal at least :data:`PREVIEW_PANE_WIDTH` columns wide shows the highlighted call beside
        the list."""
        self.set_class(event.size.width >= PREVIEW_PANE_WIDTH, "-wide")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_preview()

    def _show_preview(self) -> None:
        approval = self.query_one(InboxApprovals).selected
        pane = self.query_one(CallPreviewPane)
        pane.show(approval, self._session(approval) if approval is not None else "")

    def on_mount(self) -> None:
        self.guard.arm()
        self.refresh_view()
        self.set_interval(TICK_SECONDS, self._tick)
        self.query_one(InboxApprovals).focus()
        self.decider.arm_on_app_focus()

    def on_screen_resume(self) -> None:
        self.guard.arm()
        self.refresh_view()

    # ------------------------------------------------------------------ drawing

    def inbox_changed(self, status: StreamStatus | None) -> None:
        """The app calls this after every change of the inbox or of its feed's connection."""
        self.status = status
        self.refresh_view()

    def refresh_view(self) -> None:
        """Draw the inbox as the model now is, touching only what changed: one new approval is one new
        row and the title's count, not a redraw (and layout) of every part and a new footer."""
        if not self.is_mounted:
            return
        now = self._clock()
        self.inbox.mark_seen()
        approvals = self.inbox.approvals
        # The table first: the first widget to report a change starts the next frame, and a new row needs
        # the table's new size (a layout) in that frame to be seen.
        table = self.query_one(InboxApprovals)
        self._keep_marks(approvals)
        table.show(approvals, now)
        table.set_marks(self._mark_glyphs(), now)
        self._set_display(table, bool(approvals))
        title = Text("Inbox", style="bold")
        where = " · " if self.marked else " across all sessions"  # room for the count at 80 columns
        title.append(
            f"  {len(approvals)} approval{'s' if len(approvals) != 1 else ''} waiting{where}",
            style="" if approvals else "dim",
        )
        if self.marked:
            title.append(f"{len(self.marked)} marked", style="bold yellow")
        self._show_batch()
        update_static(self.query_one("#inbox-title", Static), title, fixed_size=True)
        update_static(self.query_one("#inbox-state", Static), feed_state(self.status, self.inbox.synced))
        empty = self.query_one("#inbox-empty", Static)
        self._set_display(empty, not approvals)
        update_static(
            empty,
            Text(
                "Nothing waits for you: no approval is pending in any session." if self.inbox.synced else ""
            ),
        )
        recent = self.query_one("#inbox-recent", Static)
        self._set_display(recent, bool(self.inbox.recently_gone))
        names_decider = self._steering.backend.capabilities.names_decider
        update_static(
            recent,
            decided_elsewhere_text(
                self.inbox.recently_gone, self.inbox.decisions.by_you, names_decider=names_decider
            ),
        )
        update_static(
            self.query_one("#inbox-notes", Static),
            failed_notes_text(self.inbox.notes, now, self.inbox.notes_window),
        )
        self._show_followed()
        self._shown_version = self.inbox.version
        self._show_preview()
        can_act = table.selected is not None
        if can_act != self._can_act:
            # Approve / decline / open apply only with a highlighted approval: the footer (re-composed on
            # every refresh_bindings) changes only when that does, not with every arrival.
            self._can_act = can_act
            self.refresh_bindings()

    def _show_batch(self) -> None:
        """What came of the last decision of marked rows, drawn once per decision."""
        shown = self.query_one("#inbox-batch", Static)
        self._set_display(shown, self.last_batch is not None)
        if self.last_batch is not None and self._batch_drawn is not self.last_batch:
            shown.update(batch_results(self.last_batch, self._batch_rows))
            self._batch_drawn = self.last_batch

    @staticmethod
    def _set_display(widget: Static | InboxApprovals, shown: bool) -> None:
        if widget.display != shown:
            widget.display = shown

    def _show_followed(self) -> None:
        """The followed sessions and their news (they move with their streams: redrawn every tick)."""
        followed = self.query_one("#inbox-followed", Static)
        items = self._followed() if self._followed is not None else []
        self._set_display(followed, bool(items))
        if items:
            update_static(followed, followed_text(items))

    def _tick(self) -> None:
        if self.inbox.prune(self._clock()):
            self.refresh_view()
        else:
            self.query_one(InboxApprovals).tick(self._clock())
            self._show_followed()

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Approve, decline, mark and open only when an approval is highlighted (and not read-only)."""
        if action in ("approve", "decline", "open", "arguments", "allow_like", "mark", "mark_all"):
            if not self.is_mounted or self.query_one(InboxApprovals).selected is None:
                return None
            if action in ("approve", "decline", "allow_like", "mark", "mark_all") and self.read_only:
                return None
        return True

    # ------------------------------------------------------------------ marks

    def _keep_marks(self, approvals: Sequence[Approval]) -> None:
        """Marks follow what waits: an approval that left (decided, expired) is no longer marked."""
        waiting = {a.id for a in approvals}
        for approval_id in [k for k in self.marked if k not in waiting]:
            del self.marked[approval_id]
        self.deciding &= waiting

    def _mark_glyphs(self) -> dict[str, str]:
        glyphs = dict.fromkeys(self.marked, MARKED)
        glyphs.update(dict.fromkeys(self.deciding, DECIDING))
        return glyphs

    def action_mark(self) -> None:
        """Space: mark the highlighted approval to be decided with the others marked, or unmark it."""
        approval = self.query_one(InboxApprovals).selected
        if approval is None or approval.id in self.deciding:
            return
        if approval.id in self.marked:
            del self.marked[approval.id]
        else:
            self.marked[approval.id] = None
        self.refresh_view()

    def action_mark_all(self) -> None:
        """``M``: mark every approval listed; when all are marked already, unmark them."""
        listed = [a.id for a in self.inbox.approvals if a.id not in self.deciding]
        if listed and all(a in self.marked for a in listed):
            self.marked.clear()
        else:
            self.marked.update(dict.fromkeys(listed))
        self.refresh_view()

    def _marked_approvals(self) -> list[Approval]:
        return marked_in_order(self.inbox.approvals, self.marked)

    def _batch_started(self, approvals: Sequence[Approval]) -> None:
        for approval in approvals:
            self.marked.pop(approval.id, None)
            self.deciding.add(approval.id)
        self.refresh_view()

    def _batch_decided(self, batch: BatchDecision, approvals: Sequence[Approval]) -> None:
        """Each approval's result: those decided or settled leave the inbox now (without their echo),
        those not decided stay, marked again, and the list under the table says what came of each."""
        self.last_batch = batch
        self._batch_rows = {a.id: a for a in approvals}
        ids = {a.id for a in approvals}
        self.deciding -= ids
        settled = {a.id for a in batch.settled}
        for approval in approvals:
            if approval.id not in settled and self.inbox.get(approval.id) is not None:
                self.marked[approval.id] = None
        for approval in batch.settled:
            self.inbox.decided(approval)
        sync = getattr(self.app, "inbox_updated", None)
        if callable(sync):
            sync()
        else:
            self.refresh_view()

    def action_back(self) -> None:
        """Back to the screen the inbox was opened from."""
        self.dismiss(None)

    def action_open(self) -> None:
        """Attach to the highlighted approval's session (Escape there comes back here)."""
        approval = self.query_one(InboxApprovals).selected
        if approval is not None and approval.runtime_session_id:
            self.open_session(approval.runtime_session_id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_arguments(self) -> None:
        """Show the highlighted approval's whole call (its row shows one line of it, cut to the column)."""
        approval = self.query_one(InboxApprovals).selected
        if approval is not None:
            where = None if self.read_only else "from the list"
            steering = self.decider.steering
            self.app.push_screen(whole_call(approval, self._session(approval), steering, where=where))

    @staticmethod
    def _session(approval: Approval) -> str:
        return describe_session(approval.runtime_session_id, agent_of(approval))

    def action_approve(self) -> None:
        """Let the highlighted approval's tool call run; a risky one asks first (as on the attach screen).
        With rows marked: the marked ones, after a dialog that names them."""
        marked = self._marked_approvals()
        if marked:
            self.decider.approve_many(
                marked,
                started=lambda: self._batch_started(marked),
                decided=lambda batch: self._batch_decided(batch, marked),
            )
            return
        approval = self.query_one(InboxApprovals).selected
        self.decider.approve(approval, self._session(approval) if approval else "")

    def action_decline(self) -> None:
        """Ask for an optional comment, then decline the highlighted approval (with rows marked: every
        marked one, with the one comment)."""
        marked = self._marked_approvals()
        if marked:
            self.decider.decline_many(
                marked,
                started=lambda: self._batch_started(marked),
                decided=lambda batch: self._batch_decided(batch, marked),
            )
            return
        approval = self.query_one(InboxApprovals).selected
        self.decider.decline(approval, self._session(approval) if approval else "")

    def action_allow_like(self) -> None:
        """``A``: allow (or mute) calls like the highlighted one for a while (a rule; it asks first)."""
        approval = self.query_one(InboxApprovals).selected
        self.decider.allow_like(approval, self._session(approval) if approval else "")

    def _kept(self, approval: Approval, kept: KeptComment) -> None:
        session_id = approval.runtime_session_id
        if session_id and self._keep_as_draft is not None:
            self._keep_as_draft(session_id, kept.text, kept.line)

    def _decided(self, outcome: DecideOutcome) -> None:
        """A decision's answer: a decided (or lost) approval leaves the inbox now, without its echo."""
        if isinstance(outcome, Decided | AlreadySettled):
            self.inbox.decided(outcome.approval)
            sync = getattr(self.app, "inbox_updated", None)
            if callable(sync):
                sync()
            else:
                self.refresh_view()
