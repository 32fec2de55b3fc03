"""Steering, written once: send and withdraw notes, approve and decline approvals, and say what came of it.

Every front end steers through here: the attach screen, the inbox, ``--plain`` / ``--json`` attach and
the ``preloop notes`` / ``preloop approvals`` commands. A call never raises for an outcome an operator
must be told about; it returns one of the outcome types below and each front end words it for its medium:

* a note: :class:`Sent`, :class:`NotSent` (nothing was created: the text is handed back with the error,
  so it is never lost) or :class:`OutcomeUnknown` (the request went out and no answer came back: the note
  may exist, so it is not sent again blindly);
* a withdrawal: :class:`Withdrawn`, :class:`TooLate` (the note was no longer pending: picked up,
  delivered, expired, or withdrawn already; its row says which) or :class:`WithdrawFailed`;
* a decision: :class:`Decided`, :class:`AlreadySettled` (lost the race to another operator, or expired:
  the approval's current row, fetched at once with its trail (``Backend.approval_trail``), says who or
  what settled it and with which comment),
  :class:`AlreadyDeciding` (a decision from here is on its way) or :class:`DecisionFailed`;
* one decision for many approvals (:meth:`Steering.decide_many`, the inbox's marked rows and
  ``preloop approvals approve ID ID ...``): a :class:`BatchDecision`, one of those outcomes per approval,
  in order. Each approval is decided on its own (the backend's wire: Preloop's and our server's
  ``decide-batch``, a Dendrux app's one call per id), so one that fails costs that one only, and is never
  told as decided.

:class:`Decisions` is the one record, per app or command, of the approvals decided *here*: the inbox, every
attach screen and the plain attach share it, so nothing decided in this process is ever called "decided
elsewhere". Short ids typed by people are resolved by :mod:`client.ids`.

A decision typed as a command rather than taken on a screen that shows the call (``--plain``'s
``/approve``) names its approval's id for a call at one of :data:`NAME_RISKS`, and approving one at
:data:`ASK_RISKS` asks once more, naming the call (:func:`risk_of` reads an approval's level).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from client.backends.base import BatchItem
from client.errors import (
    AuthError,
    ClientError,
    InvalidResponse,
    NoteOutcomeUnknown,
    NotFound,
    PermissionDenied,
    RateLimited,
    TransportError,
    Unsupported,
    UsageError,
    ValidationFailed,
)
from client.models import Approval
from client.present import colleague_of

if TYPE_CHECKING:
    from client.backends.base import ApprovalDesk, Backend
    from client.models import Note

__all__ = [
    "ASK_RISKS",
    "NAME_RISKS",
    "AlreadyDeciding",
    "AlreadySettled",
    "BatchDecision",
    "DecideOutcome",
    "Decided",
    "DecisionFailed",
    "Decisions",
    "NotSent",
    "OutcomeUnknown",
    "SendOutcome",
    "Sent",
    "Steering",
    "SteeringOutcome",
    "TooLate",
    "Verb",
    "WithdrawFailed",
    "WithdrawOutcome",
    "Withdrawn",
    "final_record",
    "risk_of",
]

Verb = Literal["approve", "decline"]

NAME_RISKS = frozenset({"high", "danger", "critical"})
"""A typed decision on a call at these risk levels must name the approval's id: "the one waiting" may not
be the one the operator read."""

ASK_RISKS = frozenset({"danger", "critical"})
"""Approving a call at these risk levels by a typed command asks once more, naming the call ([y/N])."""

# ------------------------------------------------------------------------------------------- outcomes


@dataclass(frozen=True, slots=True)
class Sent:
    """The server created the note (``note`` is its row)."""

    note: Note


@dataclass(frozen=True, slots=True)
class NotSent:
    """Nothing was created; ``text`` is what the operator wrote, to keep (``error`` says why)."""

    text: str
    error: ClientError


@dataclass(frozen=True, slots=True)
class OutcomeUnknown:
    """The note left and no answer came: it may exist. Never sent again blindly (``error`` says how to
    check)."""

    text: str
    error: NoteOutcomeUnknown


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """The note is cancelled: the agent will not see it."""

    note: Note


@dataclass(frozen=True, slots=True)
class TooLate:
    """The note was no longer pending (its row: claimed, delivered, expired, withdrawn already...), so
    nothing changed."""

    note: Note


@dataclass(frozen=True, slots=True)
class WithdrawFailed:
    """The server could not be asked, or refused (``error``); the note is as it was."""

    note_id: str
    error: ClientError


@dataclass(frozen=True, slots=True)
class Decided:
    """Decided here: ``approval`` is the decided row."""

    approval: Approval
    verb: Verb


@dataclass(frozen=True, slots=True)
class AlreadySettled:
    """Someone or something else settled it first (another operator, its expiry, the session ending):
    ``approval`` is its current row (status, comment, who decided as far as the server says);
    ``by_you`` when the server says this very operator did (from another terminal)."""

    approval: Approval
    verb: Verb
    by_you: bool = False


@dataclass(frozen=True, slots=True)
class AlreadyDeciding:
    """A decision on this approval from here is on its way: a second key press sends nothing."""

    approval_id: str


@dataclass(frozen=True, slots=True)
class DecisionFailed:
    """Not decided (``error`` says why) and, as far as could be read, still pending."""

    approval_id: str
    verb: Verb
    error: ClientError


SendOutcome = Sent | NotSent | OutcomeUnknown
WithdrawOutcome = Withdrawn | TooLate | WithdrawFailed
DecideOutcome = Decided | AlreadySettled | AlreadyDeciding | DecisionFailed
SteeringOutcome = SendOutcome | WithdrawOutcome | DecideOutcome


@dataclass(frozen=True, slots=True)
class BatchDecision:
    """One decision for many approvals: one outcome per approval, in the order asked (duplicates once)."""

    verb: Verb
    outcomes: tuple[DecideOutcome, ...]

    @property
    def decided(self) -> list[Decided]:
        """The approvals this call decided."""
        return [o for o in self.outcomes if isinstance(o, Decided)]

    @property
    def all_decided(self) -> bool:
        """Every approval asked about was decided by this call (nothing settled first, nothing failed)."""
        return len(self.decided) == len(self.outcomes)

    @property
    def settled(self) -> list[Approval]:
        """The rows that stopped waiting, by this call or before it (to drop from a list of pending)."""
        return [o.approval for o in self.outcomes if isinstance(o, Decided | AlreadySettled)]


_NOTHING_HAPPENED = (AuthError, PermissionDenied, UsageError, Unsupported, ValidationFailed, RateLimited)
"""Refusals that leave an approval as it was and say nothing about it: no need to read it again."""

READ_AT_ONCE = 4
"""How many approvals a batch reads back at a time (the ones it could not decide)."""


# ------------------------------------------------------------------------------------------- decisions


class Decisions:
    """The approvals decided in this process (one per app or command): an approval's echo from a feed is
    "decided here" from the moment its decision leaves until the server says it lost; remembered in a
    bounded window (the oldest forgotten first). ``me`` is this operator's user id on the server
    (``Backend.whoami``, set once known): a decision the server says that user made is "you" too, made
    from another terminal or before a restart."""

    def __init__(self, remember: int = 2000) -> None:
        self._remember = remember
        self._here: OrderedDict[str, None] = OrderedDict()
        self._in_flight: set[str] = set()
        self.me: str | None = None

    def by_you(self, approval: Approval) -> bool:
        """Whether this operator decided ``approval``: here, or as the server's decider names them."""
        if approval.status not in ("approved", "declined"):
            return False
        if self.here(approval.id):
            return True
        decider = approval.decider
        return self.me is not None and decider is not None and decider.user_id == self.me

    def colleague(self, note: Note) -> str | None:
        """The colleague who wrote ``note``, by name; None for this operator's own and unnamed notes."""
        return colleague_of(note, self.me)

    async def learn_me(self, backend: Backend) -> None:
        """Ask the server once who this token acts for (nothing when it cannot say)."""
        if self.me is None:
            me = await backend.whoami()
            self.me = me.id if me is not None else None

    def start(self, approval_id: str) -> bool:
        """A decision leaves now; False when one from here is already on its way (send nothing)."""
        if approval_id in self._in_flight:
            return False
        self._in_flight.add(approval_id)
        self._keep(approval_id)
        return True

    def finish(self, approval_id: str, *, decided: bool) -> None:
        """The server answered: decided here, or not (lost the race, failed): then it was not ours."""
        self._in_flight.discard(approval_id)
        if decided:
            self._keep(approval_id)
        else:
            self._here.pop(approval_id, None)

    def here(self, approval_id: str) -> bool:
        """Whether this process decided it (or is deciding it right now)."""
        return approval_id in self._here

    def deciding(self, approval_id: str) -> bool:
        """Whether a decision from here is on its way."""
        return approval_id in self._in_flight

    def _keep(self, approval_id: str) -> None:
        self._here[approval_id] = None
        self._here.move_to_end(approval_id)
        while len(self._here) > self._remember:
            self._here.popitem(last=False)


# ------------------------------------------------------------------------------------------- steering


class Steering:
    """Sends what an operator decided to a backend and says what came of it (see the module docstring)."""

    def __init__(self, backend: Backend, decisions: Decisions | None = None) -> None:
        self.backend = backend
        self.decisions = decisions if decisions is not None else Decisions()

    async def send_note(self, text: str, **target: Any) -> SendOutcome:
        """Send one note exactly once (a correlation id lets a retry find the first one on our server).
        ``target`` is what ``Backend.send_note`` takes: one of ``session_id``, ``agent_id`` or
        ``execution_id``, and optionally ``expires_in_seconds``."""
        try:
            note = await self.backend.send_note(text, correlation_id=uuid.uuid4().hex, **target)
        except NoteOutcomeUnknown as exc:
            return OutcomeUnknown(text, exc)
        except ClientError as exc:
            return NotSent(text, exc)
        return Sent(note)

    async def withdraw(self, note_id: str, *, known: Note | None = None) -> WithdrawOutcome:
        """Withdraw a pending note. Servers answer a withdraw of any other note with it unchanged (even
        one withdrawn before), so its state is read first unless the caller just saw it (``known``); a
        server that cannot withdraw at all is asked anyway, to say so in its own words."""
        try:
            can = self.backend.capabilities.withdraw_notes
            if can and (known is None or known.note_id != note_id):
                known = await self.backend.get_note(note_id)
            if known is not None and known.state != "pending":
                return TooLate(known)
            note = await self.backend.withdraw_note(note_id)
        except ClientError as exc:
            return WithdrawFailed(note_id, exc)
        return Withdrawn(note) if note.state == "cancelled" else TooLate(note)

    async def decide(self, approval_id: str, verb: Verb, comment: str | None = None) -> DecideOutcome:
        """Approve or decline; a refusal is followed by one read of the approval's :func:`final_record`,
        so that losing a race (or an expiry) is told as what happened rather than as an error."""
        if not self.decisions.start(approval_id):
            return AlreadyDeciding(approval_id)
        try:
            if verb == "approve":
                result = await self.backend.approve(approval_id, comment)
            else:
                result = await self.backend.decline(approval_id, comment)
        except ClientError as exc:
            self.decisions.finish(approval_id, decided=False)
            try:
                settled = await final_record(self.backend, approval_id)
            except ClientError:
                settled = None
            if settled is not None:
                return await self._settled_first(settled, verb)
            return DecisionFailed(approval_id, verb, exc)
        self.decisions.finish(approval_id, decided=True)
        return Decided(result, verb)

    async def decide_many(
        self,
        approval_ids: Sequence[str],
        verb: Verb,
        comment: str | None = None,
        *,
        known: Iterable[Approval] = (),
    ) -> BatchDecision:
        """One decision (and comment) for many approvals, through the backend's batch wire
        (``Backend.decide_batch``). Each approval gets its own outcome, as :meth:`decide` would give it:
        one not decided is read once afterwards (unless the refusal says nothing about it: a 403, a
        malformed id), so a race lost or an expiry is told as what happened, by whom where the server
        says. ``known`` are rows the caller holds (the inbox's): a server whose batch answer carries
        only statuses (Preloop) has them named with their tool and session."""
        rows = {a.id: a for a in known}
        ids = list(dict.fromkeys(approval_ids))
        starting = [aid for aid in ids if self.decisions.start(aid)]
        items: dict[str, BatchItem] = {}
        if starting:
            try:
                answered = await self.backend.decide_batch(
                    starting, approve=verb == "approve", comment=comment
                )
            except ClientError as exc:  # nothing was sent
                answered = [BatchItem(aid, decided=False, error=exc) for aid in starting]
            items = {item.approval_id: item for item in answered}
        gate = asyncio.Semaphore(READ_AT_ONCE)

        async def outcome(aid: str) -> DecideOutcome:
            if aid not in starting:
                return AlreadyDeciding(aid)
            item = items.get(aid)
            if item is None:  # a backend that skipped it: not decided, as far as anyone said
                self.decisions.finish(aid, decided=False)
                return DecisionFailed(aid, verb, InvalidResponse(f"no answer for approval {aid}"))
            self.decisions.finish(aid, decided=item.decided)
            if item.decided:
                return Decided(_decided_row(item, rows.get(aid), verb, comment), verb)
            async with gate:
                return await self._not_decided(item, rows.get(aid), verb)

        outcomes = await asyncio.gather(*(outcome(aid) for aid in ids))
        return BatchDecision(verb, tuple(outcomes))

    async def _not_decided(self, item: BatchItem, known: Approval | None, verb: Verb) -> DecideOutcome:
        """What came of an approval the batch did not decide: settled first (by whom, as the server says
        on one read of it), or not decided (``DecisionFailed``, still pending as far as could be read)."""
        aid = item.approval_id
        error = item.error or ClientError("the server did not decide it")
        row = item.approval
        if row is not None and not row.pending:
            return await self._settled_first(row, verb)
        quiet = isinstance(error, _NOTHING_HAPPENED) or (isinstance(error, TransportError) and not error.sent)
        settled_as = item.status if item.status and item.status != "pending" else None
        if not quiet or settled_as is not None:
            try:
                record = await final_record(self.backend, aid)
            except ClientError:
                record = None
            if record is not None:
                return await self._settled_first(record, verb)
        if settled_as is not None:  # the server said what it is, the read did not answer
            base = row or known or Approval(id=aid)
            return AlreadySettled(base.model_copy(update={"status": settled_as}), verb)
        return DecisionFailed(aid, verb, error)

    async def _settled_first(self, row: Approval, verb: Verb) -> AlreadySettled:
        """An approval settled before this decision reached it: by whom, "you" from another terminal."""
        await self.decisions.learn_me(self.backend)
        return AlreadySettled(row, verb, self.decisions.by_you(row))

    async def current(self, approval_id: str) -> Approval | None:
        """The approval's row as the server has it now, with who settled it when it is no longer pending
        (a race lost to a colleague names them); None when it cannot be read."""
        try:
            approval = await self.backend.get_approval(approval_id)
        except ClientError:
            return None
        return approval if approval.pending else await self.backend.approval_trail(approval)


async def final_record(desk: ApprovalDesk, approval_id: str) -> Approval | None:
    """The final record of an approval that stopped waiting where this client could not see how (it left
    a pending list between two polls or over a reconnect, or a decision from here lost a race): its row,
    read once now, saying approved, declined or expired, by whom and with which comment. None while it
    still reads pending (the two reads raced) or when it is gone for good (not found, no longer visible
    to this token); any other failure raises, so the caller chooses to try again or to say "gone"."""
    try:
        row = await desk.get_approval(approval_id)
    except (NotFound, PermissionDenied):
        return None
    return None if row.pending else await desk.approval_trail(row)  # Preloop names the decider there


def _decided_row(item: BatchItem, known: Approval | None, verb: Verb, comment: str | None) -> Approval:
    """The row of an approval a batch decided: the server's when it sent one, else the caller's (or a
    bare one) marked with the decision it took."""
    if item.approval is not None:
        return item.approval
    status = item.status or ("approved" if verb == "approve" else "declined")
    base = known or Approval(id=item.approval_id)
    return base.model_copy(update={"status": status, "approver_comment": comment, "decided_by_human": True})


def risk_of(approval: Approval) -> str:
    """An approval's risk level as compared with :data:`NAME_RISKS` / :data:`ASK_RISKS` ("" if none)."""
    return (approval.risk_level or "").strip().lower()
