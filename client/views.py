"""Views of a timeline: which entries an operator wants to see at one time (pure: no UI, no I/O).

An on-call operator reading a 5,000-event session rarely wants all of it: first what went wrong, then what
was said to the agent and decided for it, sometimes only the tool calls. A :class:`View` is a named
predicate over :mod:`client.timeline` entries; the timeline widget shows the entries it keeps, the header
names it (:attr:`View.label`), and ``f`` cycles through them (:meth:`View.next`).

What counts as a problem (:func:`is_problem`) is defined once here, because the problems view and the
"next / previous problem" jumps (which work in every view) must agree:

* a tool call that failed or was denied (a refusal by policy or by a human);
* a run that failed or was cancelled;
* an approval that was declined or expired (the decision entry; the request line only says "now ...");
* a note that failed, expired or could not be delivered;
* an event this client does not know whose type says error or failure (a server's own warning kinds).

Steering (:func:`is_steering`) is what the operator sent or decided: notes, approval requests and decisions.
The dropped-entries marker belongs to no view: the widget shows it on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from client.timeline import (
    ApprovalEntry,
    NoteEntry,
    RunEntry,
    RunStatus,
    TimelineEntry,
    ToolEntry,
    ToolState,
    UnknownEntry,
)

__all__ = ["View", "is_problem", "is_steering", "is_tool"]

_BAD_TOOL = frozenset({ToolState.FAILED, ToolState.DENIED})
_BAD_RUN = frozenset({RunStatus.FAILED, RunStatus.CANCELLED})
_BAD_DECISION = frozenset({"declined", "expired"})
_BAD_NOTE = frozenset({"failed", "expired", "undeliverable"})
_BAD_WORDS = ("error", "fail")


def is_problem(entry: TimelineEntry) -> bool:
    """Something went wrong here that an operator may have to act on (the module docstring lists what)."""
    if isinstance(entry, ToolEntry):
        return entry.state in _BAD_TOOL
    if isinstance(entry, RunEntry):
        return entry.status in _BAD_RUN
    if isinstance(entry, ApprovalEntry):
        return entry.decided and entry.status in _BAD_DECISION
    if isinstance(entry, NoteEntry):
        return entry.state in _BAD_NOTE
    if isinstance(entry, UnknownEntry):
        kind = entry.event_type.lower()
        return any(word in kind for word in _BAD_WORDS)
    return False


def is_steering(entry: TimelineEntry) -> bool:
    """What the operator said to the agent or decided for it: notes, approval requests and decisions."""
    return isinstance(entry, NoteEntry | ApprovalEntry)


def is_tool(entry: TimelineEntry) -> bool:
    """A tool call, whatever its outcome."""
    return isinstance(entry, ToolEntry)


class View(StrEnum):
    """A named filter over timeline entries; ``EVERYTHING`` keeps all of them."""

    EVERYTHING = "everything"
    PROBLEMS = "problems"
    STEERING = "steering"
    TOOLS = "tools"

    @property
    def label(self) -> str:
        """How the header and the empty-view line name it."""
        return _LABELS[self]

    @property
    def nothing(self) -> str:
        """The one line a view with no entry in it shows instead of an empty screen."""
        return _NOTHING[self]

    @property
    def predicate(self) -> Callable[[TimelineEntry], bool] | None:
        """The test an entry must pass to be shown; None for ``EVERYTHING`` (no test at all: cheaper)."""
        return _PREDICATES[self]

    def shows(self, entry: TimelineEntry) -> bool:
        """Whether this view keeps ``entry``."""
        test = _PREDICATES[self]
        return test is None or test(entry)

    def next(self) -> View:
        """The view after this one, wrapping: what ``f`` switches to."""
        order = list(View)
        return order[(order.index(self) + 1) % len(order)]


_LABELS = {
    View.EVERYTHING: "everything",
    View.PROBLEMS: "problems only",
    View.STEERING: "steering only",
    View.TOOLS: "tools only",
}
_NOTHING = {
    View.EVERYTHING: "nothing yet",
    View.PROBLEMS: "no problems so far",
    View.STEERING: "no notes, approvals or decisions yet",
    View.TOOLS: "no tool calls yet",
}
_PREDICATES: dict[View, Callable[[TimelineEntry], bool] | None] = {
    View.EVERYTHING: None,
    View.PROBLEMS: is_problem,
    View.STEERING: is_steering,
    View.TOOLS: is_tool,
}
