"""What an operator reads about an approval: the arguments the tool gets, not the server's bookkeeping."""

from __future__ import annotations

from rich.console import Console

from client.models import Approval
from widgets.approvals_panel import approval_prompt


def _plain(approval: Approval, *, expanded: bool) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(approval_prompt(approval, expanded=expanded))
    return console.export_text()


def test_internal_fields_are_not_shown_as_arguments() -> None:
    approval = Approval(
        id="ap",
        tool_name="Bash",
        status="pending",
        tool_args={"command": "git push", "cwd": "/srv/app", "_preloop_source": "claude_code"},
    )
    for expanded in (False, True):
        text = _plain(approval, expanded=expanded)
        assert "git push" in text and "/srv/app" in text
        assert "_preloop_source" not in text and "claude_code" not in text
