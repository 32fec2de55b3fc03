"""What a run costs and why an approval is asked, as pure functions (``client.costs``, ``client.why``), and
the usage every server kind's model calls carry into the timeline and a followed session's live cost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from client.backends.dendrux.mapping import llm_usage
from client.backends.preloop.mapping import model_usage
from client.costs import Cost, cost_json, cost_words, money, row_cost, tokens
from client.events import event_from_dict
from client.models import Approval, CallUsage, Session, TokenUsage
from client.session import SessionCore
from client.why import redaction, rule_words, why_rows

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"
T0 = datetime(2026, 3, 1, 14, 0, tzinfo=UTC)


def test_money_and_tokens_read_at_a_glance_and_never_as_zero_dollars() -> None:
    assert [money(x) for x in (None, 0.0, 0.004, 0.42, 12.3, 1234.5)] == [
        None,
        None,
        "<$0.01",
        "$0.42",
        "$12.30",
        "$1,234",
    ]
    assert [tokens(n) for n in (950, 1000, 9_800, 12_400, 1_200_000, 2_000_000)] == [
        "950",
        "1k",
        "9.8k",
        "12k",
        "1.2M",
        "2M",
    ]
    assert cost_words(Cost(12_000, 9_800, 2_200, 0.42)) == "$0.42 · 12k tokens (9.8k in / 2.2k out)"
    assert cost_words(Cost(12_000, None, None, None)) == "12k tokens"
    assert cost_words(Cost()) is None and cost_words(None) is None


def test_a_row_says_its_cost_only_when_it_has_one() -> None:
    zeros = Session(id=SID, token_usage=TokenUsage(), estimated_cost=0.0)  # Preloop, no gateway calls
    assert row_cost(zeros) is None and row_cost(Session(id=SID)) is None
    unpriced = Session(id=SID, token_usage=TokenUsage(input_tokens=450, output_tokens=60))  # Dendrux, null
    assert cost_words(row_cost(unpriced)) == "510 tokens (450 in / 60 out)"
    priced = unpriced.model_copy(update={"estimated_cost": 0.0021})
    assert cost_json(row_cost(priced)) == {
        "input_tokens": 450,
        "output_tokens": 60,
        "total_tokens": 510,
        "cost_usd": 0.0021,
    }


def test_calls_add_up_and_a_call_without_a_price_adds_only_its_tokens() -> None:
    calls = [
        CallUsage(input_tokens=100, output_tokens=20, cost_usd=0.01),
        CallUsage(total_tokens=500),
        CallUsage(input_tokens=50, output_tokens=5),
    ]
    total = Cost.of_calls(calls)
    assert total is not None and (total.total_tokens, total.usd) == (675, 0.01)
    assert Cost.of_calls([]) is None


def test_usage_is_read_from_dendrux_and_preloop_calls_tolerantly() -> None:
    assert llm_usage({"input_tokens": 120, "output_tokens": 20, "cost_usd": None, "model": "m"}) == {
        "input_tokens": 120,
        "output_tokens": 20,
        "cost_usd": None,
        "model": "m",
    }
    assert llm_usage({"usage_reported": False, "input_tokens": 5}) is None
    assert llm_usage({"input_tokens": -3, "cost_usd": float("inf")}) is None  # nonsense is unknown, not 0
    assert model_usage({"total_tokens": 1500, "estimated_cost": 0.0}) == {
        "input_tokens": None,
        "output_tokens": None,
        "total_tokens": 1500,
        "cost_usd": None,  # Preloop's 0.0: no price known
    }
    assert model_usage({"metadata": {"prompt_tokens": 10, "completion_tokens": 2}, "model_alias": "x"}) == {
        "input_tokens": 10,
        "output_tokens": 2,
        "total_tokens": None,
        "cost_usd": None,
        "model": "x",
    }
    assert model_usage({"text": "no figures"}) is None


def _step(seq: int, at: datetime, iteration: int, usage: dict[str, Any] | None) -> Any:
    body: dict[str, Any] = {
        "seq": seq,
        "type": "model.step",
        "session_id": SID,
        "at": at.isoformat(),
        "iteration": iteration,
        "phase": "commentary",
    }
    if usage is not None:
        body["usage"] = usage
    return event_from_dict(body)


def test_a_followed_sessions_cost_is_its_row_plus_the_calls_since_the_row() -> None:
    core = SessionCore(SID)
    assert core.cost is None
    core.apply_events([_step(1, T0, 1, {"input_tokens": 1000, "output_tokens": 100, "cost_usd": 0.01})])
    assert core.cost == Cost(1100, 1000, 100, 0.01)  # no row yet: the calls seen
    row = Session(
        id=SID,
        token_usage=TokenUsage(input_tokens=1000, output_tokens=100, total_tokens=1100),
        estimated_cost=0.01,
        last_request_at=T0,
    )
    core.row_loaded(row)
    assert core.cost == Cost(1100, 1000, 100, 0.01)  # the call is in the row: not counted twice
    later = T0 + timedelta(seconds=30)
    core.apply_events([_step(2, later, 2, {"input_tokens": 2000, "output_tokens": 50, "cost_usd": 0.02})])
    cost = core.cost
    assert cost is not None and (cost.total_tokens, round(cost.usd or 0, 4)) == (3150, 0.03)
    # A step reported again (a Dendrux step, then the same step with its text) counts once.
    core.apply_events([_step(3, later, 2, {"input_tokens": 2000, "output_tokens": 50, "cost_usd": 0.02})])
    assert core.cost is not None and core.cost.total_tokens == 3150


def _approval(**fields: Any) -> Approval:
    return Approval.model_validate({"id": "a1", "tool_name": "Bash", **fields})


def test_why_rows_say_the_reasoning_the_ask_the_rule_and_what_was_hidden() -> None:
    approval = _approval(
        agent_reasoning="Refund the customer.",
        summary="Allow Bash with command=curl …?",
        rule_context={"rule_name": "Card numbers", "explanation": "A card number is in the call."},
        tool_args={
            "command": "curl -d card=[REDACTED:credit_card] --user [REDACTED:email] [REDACTED:email]",
            "_preloop_sealed_args": "gAAAA…",
        },
    )
    assert why_rows(approval) == [
        ("Why", "Refund the customer."),
        ("Asks", "Allow Bash with command=curl …?"),
        ("Rule", "Card numbers: A card number is in the call."),
        ("Redacted", "credit card, email ×2 redacted by the server · o: the originals (kept until decided)"),
    ]
    decided = approval.model_copy(update={"status": "declined"})
    assert why_rows(decided)[-1][1].endswith("the server keeps no originals")


def test_a_reference_only_call_and_a_plain_call() -> None:
    reference = _approval(tool_args={"_preloop_reference": True, "arg_keys": ["amount", "iban"]})
    hidden = redaction(reference)
    assert hidden is not None and hidden.words == "the server kept no arguments (keys: amount, iban)"
    plain = _approval(tool_args={"command": "ls"}, summary="Allow Bash?")
    assert redaction(plain) is None and rule_words(plain) is None
    assert why_rows(plain) == [("Asks", "Allow Bash?")]


@pytest.mark.parametrize("hostile", ["\x1b[2J[REDACTED:email]", "[red]x[/red]"])
def test_why_rows_are_terminal_safe(hostile: str) -> None:
    rows = why_rows(_approval(agent_reasoning=hostile, rule_context={"rule_name": hostile}))
    assert all("\x1b" not in words for _, words in rows)
