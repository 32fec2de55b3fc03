"""Snapshots of what a call will change (issue 24, section 1), where an operator decides it.

At 80×24 the attach screen's approval card (the side column under the timeline) and, for an edit, the
"are you sure?" dialog and the whole call (``x``); at 120×32 the inbox with the highlighted call's preview
beside the list. The calls: an ``Edit`` diff, a ``Write``, an ``apply_patch``, a ``Bash`` command and a
hostile edit (markup, escape sequences, control and bidi characters in the file name and the lines).
Data comes from the scripted ``FakeBackend``, the clock frozen at ``fakes.NOW``.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from client.models import Approval, AttentionSnapshot
from client.status import Live
from tests.tui import data
from tests.tui.fakes import FakeBackend
from tests.tui.test_inbox_snapshots import _open_inbox, approval
from tests.tui.test_tui_snapshots import _app, _attach_app, _settle, _wait_quiet
from tui.screens.arguments import ArgumentsScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.inbox import InboxScreen

EDIT_OLD = '''def total(cart):
    """The amount to charge."""
    amount = 0
    for item in cart:
        amount += item.price * item.quantity
    return amount
'''
EDIT_NEW = '''def total(cart: Cart) -> Decimal:
    """The amount to charge, rounded to the cent."""
    amount = Decimal(0)
    for item in cart:
        amount += item.price * item.quantity
    return amount.quantize(CENT)
'''
WRITE = "".join(
    [
        "# Runbook: invoice lookups\n",
        "\n",
        "1. Check the index exists: `\\d invoices`.\n",
        "2. If not, run `alembic upgrade head` on staging first.\n",
        *(f"{n}. Step {n} of the rollout.\n" for n in range(3, 41)),
    ]
)
PATCH = """*** Begin Patch
*** Update File: src/payments/refund.py
@@ def refund(order):
-    if order.paid:
-        gateway.refund(order.id)
+    if order.paid and not order.refunded:
+        gateway.refund(order.id, idempotency_key=order.id)
+        order.refunded = True
*** Add File: tests/test_refund.py
+def test_refund_twice_is_one_refund(order):
+    refund(order)
+    refund(order)
+    assert gateway.calls == 1
*** End Patch
"""
COMMAND = "cd /srv/repos/payments &&\n  alembic upgrade head &&\n  systemctl restart payments"
HOSTILE_LINE = (
    "[bold red]pwned[/] \x1b]0;evil title\x07\x1b[2J\u202eesrever\u202c [link=http://x]click[/link]\r"
)

CALLS: dict[str, tuple[str, dict[str, Any], str]] = {
    "edit": (
        "Edit",
        {"file_path": "src/checkout/total.py", "old_string": EDIT_OLD, "new_string": EDIT_NEW},
        "Round the total to the cent",
    ),
    "write": ("Write", {"file_path": "docs/runbooks/invoices.md", "content": WRITE}, "Write the runbook"),
    "apply_patch": ("apply_patch", {"input": PATCH}, "Refund once"),
    "bash": (
        "Bash",
        {"command": COMMAND, "cwd": "/srv/repos/payments", "timeout": 600, "description": "Migrate, restart"},
        "Run database migration on staging",
    ),
    "hostile": (
        "Edit",
        {
            "file_path": f"src/[red]x[/red]\x1b[31m{HOSTILE_LINE}.py",
            "old_string": f"safe = True\n{HOSTILE_LINE}\n",
            "new_string": f"safe = False\n{HOSTILE_LINE}\n\x1b[?1049h\x07[/]\n",
        },
        data.HOSTILE,
    ),
}


def _approval(name: str, **update: Any) -> Approval:
    tool, args, summary = CALLS[name]
    return data.approval(tool_name=tool, tool_args=args, summary=summary, **update)


@pytest.mark.parametrize("name", list(CALLS))
def test_approval_card_at_80x24(snap_compare: Any, name: str) -> None:
    """The attach screen's card: the call's first lines (diff with +/− counts, command, ...), then how many
    more there are and that x shows them all."""
    app = _attach_app([Live(), *data.streaming_script()], approvals=[_approval(name)])
    assert snap_compare(app, run_before=_settle, terminal_size=(80, 24))


@pytest.mark.parametrize("name", list(CALLS))
def test_inbox_preview_pane_at_120x32(snap_compare: Any, name: str) -> None:
    """The inbox at 120 columns: the highlighted approval's call beside the list, as much as fits."""
    first = approval(
        0, **{k: v for k, v in zip(("tool_name", "tool_args", "summary"), CALLS[name], strict=True)}
    )
    snap = AttentionSnapshot(at=data.NOW, approvals=[first, approval(1), approval(2)])
    app = _app(FakeBackend(sessions=data.sessions(), attention=[Live(), snap]))
    assert snap_compare(app, run_before=_open_inbox, terminal_size=(120, 32))


def test_are_you_sure_names_the_edit_at_80x24(snap_compare: Any) -> None:
    """Approving a high-risk edit asks first, the dialog showing the diff it approves."""

    async def _approve(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "a")
        await _wait_quiet(pilot)
        assert isinstance(pilot.app.screen, ConfirmScreen)

    app = _attach_app([Live(), *data.streaming_script()], approvals=[_approval("edit")])
    assert snap_compare(app, run_before=_approve, terminal_size=(80, 24))


def test_whole_call_of_a_patch_at_80x24(snap_compare: Any) -> None:
    """x on the attach screen: the whole patch, every file and line, in a view that scrolls."""

    async def _whole(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "x")
        await _wait_quiet(pilot)
        assert isinstance(pilot.app.screen, ArgumentsScreen)

    app = _attach_app([Live(), *data.streaming_script()], approvals=[_approval("apply_patch")])
    assert snap_compare(app, run_before=_whole, terminal_size=(80, 24))


async def test_the_pane_follows_the_cursor_and_leaves_a_narrow_terminal() -> None:
    """At 120 columns the pane shows the highlighted call and follows the cursor; at 100 it is gone and
    the list has the width."""
    snap = AttentionSnapshot(at=data.NOW, approvals=[_approval("edit", id="e1"), _approval("bash", id="b1")])
    app = _app(FakeBackend(sessions=data.sessions(), attention=[Live(), snap]))
    async with app.run_test(size=(120, 32)) as pilot:
        await _open_inbox(pilot)
        screen = app.screen
        assert isinstance(screen, InboxScreen)
        pane = screen.query_one("#inbox-preview")
        text = str(pane.render())
        assert pane.display and "src/checkout/total.py  +4 −4" in text
        await pilot.press("down")
        await pilot.pause()
        assert "$ cd /srv/repos/payments &&" in str(pane.render())
        await pilot.resize_terminal(100, 32)
        await pilot.pause()
        assert not pane.display
