"""Deciding an approval from a screen, written once for every screen that decides one.

The attach screen and the inbox both approve and decline, through one :class:`Decider` each. A decision
is deliberate: it happens only on a screen that shows the call (the approval card, the inbox row, the
dialog), on a key pressed alone (``tui.keypace``: a letter of a burst of typing is text, never a
command), at least half a second after that screen appeared (``tui.typeahead``: an earlier key is not a
decision, and it says so once; the time counted is when the key was pressed, not when its command ran).
A risky call asks "are you sure?" (``ConfirmScreen``); a decline asks for an optional comment
(``DeclineCommentScreen``); both dialogs name the call in their first lines (tool, session, the first line
of its arguments: :func:`widgets.approvals_panel.call_first_line`, the one place that writes it) and ignore
their decision keys for half a second after they open. This holds at every risk level, also when
``PRELOOP_CONFIRM_RISK=none`` makes ``a`` approve at once. The decision itself goes
through ``client.steering`` in a worker of the screen, and its outcome is told in one notice (decided,
lost the race or expired, failed). When the approval is settled elsewhere while a dialog about it is
open, :func:`settle_open_dialogs` turns that dialog into a notice instead of letting it decide something
that no longer waits.

Many approvals at once (the inbox's marked rows) take the same path: the key pressed alone, not too soon,
then always a dialog, at every risk level, that names how many, which tools, which sessions and the
highest risk, and lists every call at a risk that asks (``confirm_risks``, and always danger and critical)
by name (:class:`widgets.batch_view.ManyCalls`); approving asks ``y`` as the "are you sure?" does,
declining takes one optional comment for all. ``Steering.decide_many`` then decides each on its own, and
the screen is told the whole :class:`client.steering.BatchDecision` to show each row's result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textual.app import App
from textual.screen import Screen

from client.models import Approval
from client.present import approval_outcome
from client.steering import ASK_RISKS, BatchDecision, DecideOutcome, Steering, Verb
from client.textsafe import safe_line
from tui.keypace import pace_of
from tui.screens.confirm import ConfirmScreen
from tui.screens.decline_comment import DeclineAnswer, DeclineCommentScreen, KeptComment
from tui.typeahead import Monotonic, TypeAheadGuard
from widgets.approvals_panel import call_title, decision_card
from widgets.batch_view import ManyCalls
from widgets.notices import steering_notice, tell

CONFIRM_RISKS = frozenset({"high", "danger", "critical"})
"""Approvals at these risk levels ask "are you sure?" before ``a`` approves them; lower risk stays one key.
``PRELOOP_CONFIRM_RISK`` changes the set (see ``tui.app``)."""


def needs_confirmation(approval: Approval, confirm_risks: frozenset[str]) -> bool:
    """Whether approving this call asks "are you sure?" first (its risk level is one of ``confirm_risks``)."""
    return (approval.risk_level or "").strip().lower() in confirm_risks


def ask_approve(
    app: App[Any],
    approval: Approval,
    session: str,
    *,
    confirm_risks: frozenset[str],
    clock: Monotonic | None,
    approve: Callable[[], object],
) -> None:
    """Approve at once (low risk), or after a yes to a question that names what is approved."""
    if not needs_confirmation(approval, confirm_risks):
        approve()
        return
    risk = safe_line(approval.risk_level or "", 12).strip().lower()
    tool = safe_line(approval.tool_name or "tool", 40)

    def _answered(yes: bool | None) -> None:
        if yes:
            approve()

    app.push_screen(
        ConfirmScreen(
            f"Approve this {risk}-risk {tool} call?",
            decision_card(approval, session, named=True),
            named=call_title(approval, session),
            yes="Approve",
            no="Keep pending",
            subject=approval.id,
            clock=clock,
        ),
        _answered,
    )


def ask_decline(
    app: App[Any],
    approval: Approval,
    session: str,
    *,
    clock: Monotonic | None,
    answered: Callable[[DeclineAnswer], None],
) -> None:
    """Ask for the decline's optional comment; ``answered`` gets what the dialog ended with."""
    app.push_screen(DeclineCommentScreen(approval, session, clock=clock), answered)


def settle_open_dialogs(app: App[Any], approval: Approval, *, you: bool = False) -> bool:
    """An approval stopped waiting (decided elsewhere, expired, cancelled): every open dialog about it
    says so, naming who settled it when the server does, and decides nothing. True when one was open."""
    line = approval_outcome(approval, elsewhere=True, you=you)
    found = False
    for screen in app.screen_stack:
        if isinstance(screen, ConfirmScreen | DeclineCommentScreen) and screen.subject == approval.id:
            if screen.settled is None:
                screen.settle(line)
            found = True
    return found


class Decider:
    """One screen's way to decide approvals (see the module docstring). ``just_shown`` finishes the
    sentence of an ignored key ("the inbox had only just opened"); ``keep`` takes the words of a decline
    comment whose approval was settled meanwhile (to keep as a draft note); ``decided`` is told every
    outcome before its notice (to update what the screen shows)."""

    def __init__(
        self,
        screen: Screen[Any],
        steering: Steering,
        *,
        confirm_risks: frozenset[str],
        clock: Monotonic | None,
        just_shown: str,
        keep: Callable[[Approval, KeptComment], None],
        decided: Callable[[DecideOutcome], None],
        read_only: bool = False,
    ) -> None:
        self.screen = screen
        self.steering = steering
        self.confirm_risks = frozenset(r.lower() for r in confirm_risks)
        self.clock = clock
        self.guard = TypeAheadGuard(clock)
        """Decision keys typed within half a second of the screen coming up are not decisions."""
        self.read_only = read_only
        self._just_shown = just_shown
        self._keep = keep
        self._decided = decided

    def settled(self, approval: Approval, *, news: bool) -> None:
        """An approval stopped waiting, not by this screen: an open dialog about it says so and decides
        nothing; else, when it is ``news`` (settled elsewhere just now), one notice says so."""
        you = self.steering.decisions.by_you(approval)
        if not settle_open_dialogs(self.screen.app, approval, you=you) and news:
            said = approval_outcome(approval, elsewhere=True, you=you)
            self.screen.notify(said, title="Approval no longer pending", markup=False)

    def arm_on_app_focus(self) -> None:
        """The terminal window getting the focus back arms the guard: the next keys may have been typed
        for another window."""
        self.screen.watch(self.screen.app, "app_focus", self._app_focus, init=False)

    def _app_focus(self, focused: bool) -> None:
        if focused:
            self.guard.arm()

    def too_soon(self, verb: str) -> bool:
        """A decision key pressed within half a second of the screen coming up (or of leaving the note
        box) was meant for what was there before: ignore it, and say so once."""
        pace = pace_of(self.screen.app)
        if self.guard.ready(pace.pressed_at() if pace is not None else None):
            return False
        if self.guard.tell_once():
            self.screen.notify(
                f"Ignored: {self._just_shown}. Press the key again to {verb}.",
                title="Key not taken",
                severity="warning",
                markup=False,
            )
        return True

    def approve(self, approval: Approval | None, session: str) -> None:
        """``a``: approve at once (low risk) or after a yes to a question naming what is approved."""
        if approval is None or self.too_soon("approve"):
            return
        ask_approve(
            self.screen.app,
            approval,
            session,
            confirm_risks=self.confirm_risks,
            clock=self.clock,
            approve=lambda: self.decide(approval, "approve", None),
        )

    def decline(self, approval: Approval | None, session: str) -> None:
        """``d``: ask for an optional comment, then decline."""
        if approval is None or self.too_soon("decline"):
            return

        def _answered(answer: DeclineAnswer) -> None:
            if isinstance(answer, KeptComment):
                self._keep(approval, answer)
            elif answer is not None:
                self.decide(approval, "decline", answer or None)

        ask_decline(self.screen.app, approval, session, clock=self.clock, answered=_answered)

    def allow_like(self, approval: Approval | None, session: str) -> None:
        """``A``: "allow calls like this for …" (``tui.screens.allow``). A decision-class key: pressed
        alone, and not within half a second of the screen appearing; the app opens the dialog."""
        if approval is None or self.read_only or self.too_soon("open the allow dialog"):
            return
        ask = getattr(self.screen.app, "ask_allow", None)
        if callable(ask):
            ask(approval, session)

    def many(self, approvals: Sequence[Approval]) -> ManyCalls:
        """The calls of a marked set as its dialog names them (the risky ones one by one)."""
        return ManyCalls(tuple(approvals), self.confirm_risks | ASK_RISKS)

    def approve_many(
        self,
        approvals: Sequence[Approval],
        *,
        started: Callable[[], None],
        decided: Callable[[BatchDecision], None],
    ) -> None:
        """``a`` with rows marked: after a yes to the dialog naming them all, approve every one."""
        if not approvals or self.read_only or self.too_soon("approve the marked calls"):
            return
        many = self.many(approvals)
        count = many.count

        def _answered(yes: bool | None) -> None:
            if yes:
                self.decide_many(approvals, "approve", None, started=started, decided=decided)

        self.screen.app.push_screen(
            ConfirmScreen(
                f"Approve these {count} calls?",
                many.card(),
                named=many.title(),
                yes=f"Approve {count}",
                no="Keep pending",
                clock=self.clock,
                scroll_detail=True,
            ),
            _answered,
        )

    def decline_many(
        self,
        approvals: Sequence[Approval],
        *,
        started: Callable[[], None],
        decided: Callable[[BatchDecision], None],
    ) -> None:
        """``d`` with rows marked: one optional comment, then decline every one."""
        if not approvals or self.read_only or self.too_soon("decline the marked calls"):
            return

        def _answered(answer: DeclineAnswer) -> None:
            if isinstance(answer, str):
                self.decide_many(approvals, "decline", answer or None, started=started, decided=decided)

        self.screen.app.push_screen(
            DeclineCommentScreen(None, clock=self.clock, many=self.many(approvals)), _answered
        )

    def decide_many(
        self,
        approvals: Sequence[Approval],
        verb: Verb,
        comment: str | None,
        *,
        started: Callable[[], None],
        decided: Callable[[BatchDecision], None],
    ) -> None:
        """Send one decision for all of them from a worker of the screen: ``started`` is told it left,
        ``decided`` gets the batch (each approval's outcome)."""
        if not self.read_only:
            started()
            self.screen.run_worker(self._decide_many(approvals, verb, comment, decided), group="decide")

    async def _decide_many(
        self,
        approvals: Sequence[Approval],
        verb: Verb,
        comment: str | None,
        decided: Callable[[BatchDecision], None],
    ) -> None:
        batch = await self.steering.decide_many([a.id for a in approvals], verb, comment, known=approvals)
        decided(batch)

    def decide(self, approval: Approval, verb: Verb, comment: str | None) -> None:
        """Send the decision from a worker of the screen (a second one on its way sends nothing)."""
        if not self.read_only:
            self.screen.run_worker(self._decide(approval, verb, comment), group="decide")

    async def _decide(self, approval: Approval, verb: Verb, comment: str | None) -> None:
        outcome = await self.steering.decide(approval.id, verb, comment)
        self._decided(outcome)
        tell(self.screen, steering_notice(outcome, approval))
