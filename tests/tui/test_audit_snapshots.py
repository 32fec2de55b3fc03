"""Snapshots of why a call is asked, who decided it and what the run costs (issue 24, sections 2 to 4).

At 80×24 and 120×32: a call Preloop redacted (its reasoning, the rule that asked, the redacted spans
standing out and how to see the originals) on the attach screen's card, with the run's cost in the header;
a decided approval naming its decider in the timeline; the sessions list with its COST column. At 80×24
the whole call (``x``) of the redacted approval, with who looked. Data comes from the scripted
``FakeBackend`` (the redacted approval from the fake Preloop's capture 124), the clock frozen at
``fakes.NOW``, local times in UTC.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from textual.pilot import Pilot

from client.models import Approval, ApprovalDecider, Session, TokenUsage
from client.status import Live
from tests.fake_preloop.app import load_capture
from tests.tui import data
from tests.tui.fakes import Script, ago
from tests.tui.test_tui_snapshots import _app, _attach_app, _listing, _settle, _wait_quiet
from tui.screens.arguments import ArgumentsScreen

SIZES = [(80, 24), (120, 32)]


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Decisions say their local time: the same picture on every machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _priced(row: Session, input_tokens: int, output_tokens: int, cost: float | None) -> Session:
    usage = TokenUsage(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
    )
    return row.model_copy(update={"token_usage": usage, "estimated_cost": cost})


def _redacted() -> Approval:
    """Preloop's approval gated by a sensitive-data rule (capture 124), on the scripted session."""
    body = load_capture("124_approval_get_redacted")["body"]
    return data.approval(
        tool_name="Bash",
        tool_args=body["tool_args"],
        summary=body["summary"],
        agent_reasoning=body["agent_reasoning"],
        rule_context=body["rule_context"],
        risk_level="danger",
        viewed_by=["dana@example.com"],
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_redacted_call_on_its_card(snap_compare: Any, size: tuple[int, int]) -> None:
    """The card says why (the agent's reasoning), which rule asked, what the server redacted (the spans
    stand out in the command) and that x then o shows the originals; the header, the run's cost."""
    session = _priced(data.session(), 182_400, 9_650, 0.69)
    app = _attach_app([Live(), *data.streaming_script()], approvals=[_redacted()], session=session)
    assert snap_compare(app, run_before=_settle, terminal_size=size)


def test_the_whole_redacted_call_says_who_looked_and_how_to_see_the_originals(snap_compare: Any) -> None:
    """x: every row of why, the redaction and its key (o), who has viewed it, then the call."""

    async def _whole(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("escape", "x")
        await _wait_quiet(pilot)
        assert isinstance(pilot.app.screen, ArgumentsScreen)

    app = _attach_app([Live(), *data.streaming_script()], approvals=[_redacted()])
    assert snap_compare(app, run_before=_whole, terminal_size=(80, 24))


def _decided_script() -> list[Any]:
    """A run whose approval a colleague approved, with a comment, then a call dana's approval let run."""
    ev = Script(data.SID, ago(minutes=3))
    asked = data.approval(
        id="ap-9",
        tool_name="Bash",
        summary="Allow Bash with command=git push origin hotfix?",
        requested_at=ago(minutes=2),
    )
    decided = asked.model_copy(
        update={
            "status": "approved",
            "approver_comment": "looks fine, ship it",
            "resolved_at": ago(seconds=90),
            "decided_by_human": True,
            "decider": ApprovalDecider(kind="person", name="dana", user_id="u-dana", at=ago(seconds=90)),
        }
    )
    return [
        Live(),
        ev("run.started", run_id="r1", task="Publish the hotfix"),
        ev("model.delta", run_id="r1", iteration=1, text="Pushing the branch needs a human yes."),
        ev("model.step", run_id="r1", iteration=1, phase="commentary", tool_calls=1),
        ev("approval.requested", approval=asked.model_dump(mode="json")),
        ev("approval.decided", approval=decided.model_dump(mode="json")),
        ev("tool.started", run_id="r1", call_id="c1", iteration=1, name="Bash", args_summary="git push"),
        ev(
            "tool.completed",
            run_id="r1",
            call_id="c1",
            name="Bash",
            duration_ms=1200,
            result_summary="pushed",
        ),
    ]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_decided_approval_names_its_decider(snap_compare: Any, size: tuple[int, int]) -> None:
    """The timeline's decided line: approved by dana, with the comment."""
    app = _attach_app(_decided_script())
    assert snap_compare(app, run_before=_settle, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_sessions_list_with_cost(snap_compare: Any, size: tuple[int, int]) -> None:
    """COST: what each session's model calls cost and their tokens; tokens alone where the server gives
    no price; "-" for a session whose server says nothing (never $0.00)."""
    first, second, third = data.sessions()
    rows = [
        _priced(first, 182_400, 9_650, 0.69),
        _priced(second, 2_350_000, 118_000, None),
        third,
    ]
    assert snap_compare(_app(_listing(rows)), run_before=_settle, terminal_size=size)
