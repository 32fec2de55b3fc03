"""What an operator reads about an approval: the arguments the tool gets, not the server's bookkeeping."""

from __future__ import annotations

from rich.console import Console

from client.inbox import ApprovalGone
from client.models import Approval
from client.present import NOT_RECORDED
from widgets.approvals_panel import approval_prompt
from widgets.inbox_view import args_cell, decided_elsewhere_text


def _plain(approval: Approval) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(approval_prompt(approval))
    return console.export_text()


def test_internal_fields_are_not_shown_as_arguments() -> None:
    approval = Approval(
        id="ap",
        tool_name="Bash",
        status="pending",
        tool_args={"command": "git push", "cwd": "/srv/app", "_preloop_source": "claude_code"},
    )
    text = _plain(approval)
    assert "git push" in text and "/srv/app" in text
    assert "_preloop_source" not in text and "claude_code" not in text


def test_an_expiry_is_not_told_as_a_decision_made_elsewhere() -> None:
    """Issue 18: the inbox said "expired elsewhere". An expiry is no one's decision; a decision made by
    another operator is "elsewhere"; one that vanished without its final record is "no longer pending"."""
    expired = Approval(id="a1", tool_name="Bash", status="expired", runtime_session_id="s1")
    approved = Approval(id="a2", tool_name="Write", status="approved", runtime_session_id="s1")
    vanished = Approval(id="a3", tool_name="Read", status="pending", runtime_session_id="s1")
    lines = decided_elsewhere_text(
        [ApprovalGone(a, elsewhere=True) for a in (expired, approved, vanished)]
    ).plain.splitlines()
    assert "Bash" in lines[0] and "expired before anyone decided" in lines[0] and "elsewhere" not in lines[0]
    assert "was approved elsewhere" in lines[1]
    assert "is no longer pending" in lines[2] and "gone" not in lines[2]


def test_the_inbox_arguments_end_in_an_ellipsis_where_they_are_cut() -> None:
    """Issue 18: at 60-80 columns the ARGUMENTS cell read `{ "co`, cut with no sign of it."""
    approval = Approval(id="a1", tool_name="Bash", tool_args={"command": "git push origin hotfix/discount"})
    cell = args_cell(approval, 14)
    assert cell.plain == "git push orig…" and cell.cell_len == 14
    assert args_cell(approval, 80).plain == "git push origin hotfix/discount"  # the call's first line


def test_the_inbox_row_names_the_file_an_edit_changes() -> None:
    """Issue 24: the row shows the call's first line, an edit's file and its +/− counts, not its JSON."""
    args = {"file_path": "src/app.py", "old_string": "a = 1", "new_string": "a = 2"}
    approval = Approval(id="a2", tool_name="Edit", tool_args=args)
    assert args_cell(approval, 80).plain == "src/app.py +1 −1"


def test_a_decision_made_elsewhere_on_a_server_that_keeps_no_decider_says_so() -> None:
    """On Dendrux (``Capabilities.names_decider`` False) the inbox's "settled elsewhere" line of a decision
    says nobody is recorded for it, in the words the CLI and the timeline use, instead of ending there; an
    expiry (nobody decided) and a server that names deciders say nothing of the kind."""
    declined = Approval(id="a1", tool_name="refund_order", status="declined", runtime_session_id="s1")
    expired = Approval(id="a2", tool_name="Bash", status="expired", runtime_session_id="s1")
    gone = [ApprovalGone(a, elsewhere=True) for a in (declined, expired)]
    lines = decided_elsewhere_text(gone, names_decider=False).plain.splitlines()
    assert lines[0].endswith(f"was declined elsewhere ({NOT_RECORDED})"), lines[0]
    assert NOT_RECORDED not in lines[1]
    assert NOT_RECORDED not in decided_elsewhere_text(gone).plain
