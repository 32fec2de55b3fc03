"""Who decided, who looked and what it cost, against the fake Preloop built on 0.17.1's shapes (issue 24).

Preloop names a decider only in an approval's history (captures 119-121: a colleague's vote, a quorum of
two with an escalation, an AI reviewer); its session rows carry ``token_usage`` and ``estimated_cost``.
Through the real backend and the real ``preloop`` command line, in process.
"""

from __future__ import annotations

import json

import pytest

from cli.main import main
from client.backends.preloop import PreloopBackend
from client.backends.preloop.trail import apply_history
from client.errors import NotFound
from client.listing import with_trails
from client.models import Approval
from client.present import decision_words
from client.steering import AlreadySettled, Steering
from tests.fake_preloop import MAIN_SESSION, TOKEN, FakePreloop
from tests.fake_preloop.app import ALICE_ID, DANA_EMAIL, load_capture

pytestmark = pytest.mark.usefixtures("isolated_dirs")  # preloop's folders under tmp_path


def _recorded_approval() -> Approval:
    return Approval.model_validate(load_capture("071_approval_get")["body"])


def test_the_history_names_the_colleague_who_decided_and_who_looked() -> None:
    decided = _recorded_approval().model_copy(
        update={"status": "approved", "approver_comment": "looks fine", "decided_by_human": True}
    )
    trail = apply_history(decided, load_capture("119_approval_history_decided_by_colleague")["body"])
    assert trail.decider is not None
    assert (trail.decider.kind, trail.decider.name, trail.decider.channel) == (
        "person",
        DANA_EMAIL,
        "console",
    )
    assert trail.decider.user_id == "5b1f6c2e-8d4a-4f0e-9b7c-2a6e1d3c4f58"
    assert trail.viewed_by == [DANA_EMAIL, "alice113619@example.com"]
    assert trail.votes is None  # a quorum of one is no vote count worth showing
    assert decision_words(trail).startswith(f"approved by {DANA_EMAIL} ")


def test_a_quorum_in_progress_counts_votes_and_an_escalation_is_dated() -> None:
    pending = _recorded_approval()
    trail = apply_history(pending, load_capture("120_approval_history_quorum_escalated")["body"])
    assert trail.decider is None  # still pending: one vote of two is no decision
    assert trail.votes is not None and (trail.votes.approvals, trail.votes.required) == (1, 2)
    assert trail.escalated_at is not None and trail.viewed_by == ["erin@example.com"]


def test_an_ai_decision_names_the_model() -> None:
    decided = _recorded_approval().model_copy(update={"status": "approved", "decided_by_ai": True})
    trail = apply_history(decided, load_capture("121_approval_history_ai_decided")["body"])
    assert trail.decider is not None and (trail.decider.kind, trail.decider.name) == ("ai", "gpt-4o-mini")
    assert decision_words(trail).startswith("approved by an AI reviewer (gpt-4o-mini) ")


def test_a_history_this_client_cannot_read_leaves_the_approval_as_it_was() -> None:
    decided = _recorded_approval().model_copy(update={"status": "declined"})
    assert apply_history(decided, ["nonsense", {"event_type": 5}]).decider is None


async def test_a_race_lost_to_a_colleague_says_their_name(fake: FakePreloop, client: PreloopBackend) -> None:
    approval_id = fake.request_approval("git push origin main")
    fake.colleague_decides(approval_id, "approve", "looks fine")
    outcome = await Steering(client).decide(approval_id, "decline", "no")
    assert isinstance(outcome, AlreadySettled) and not outcome.by_you
    who = outcome.approval.decider
    assert who is not None and (who.name, who.kind) == (DANA_EMAIL, "person")
    assert decision_words(outcome.approval).endswith(": “looks fine”")
    assert DANA_EMAIL in outcome.approval.viewed_by


async def test_a_decision_made_here_reads_you_through_users_me(
    fake: FakePreloop, client: PreloopBackend
) -> None:
    approval_id = fake.request_approval("ls")
    await client.approve(approval_id, "ok")
    steering = Steering(client)
    await steering.decisions.learn_me(client)
    assert steering.decisions.me == ALICE_ID
    [settled] = await with_trails(client, [await client.get_approval(approval_id)])
    assert settled.decider is not None and settled.decider.user_id == ALICE_ID
    assert steering.decisions.by_you(settled)


async def test_reading_the_history_is_not_a_view_but_the_detail_is(
    fake: FakePreloop, client: PreloopBackend
) -> None:
    approval_id = fake.request_approval("ls")
    pending = (await client.list_approvals(session_id=MAIN_SESSION)).items[0]
    await client.approval_trail(pending)
    assert not any(e["event_type"] == "viewed" for e in fake.history[approval_id])
    shown = await client.approval_trail(await client.get_approval(approval_id))
    assert shown.viewed_by == ["alice113619@example.com"]


async def test_originals_come_while_pending_and_then_are_gone(
    fake: FakePreloop, client: PreloopBackend
) -> None:
    approval_id = fake.request_approval(redacted=True)
    gated = await client.get_approval(approval_id)
    assert "[REDACTED:credit_card]" in gated.tool_args["command"]
    assert (
        gated.rule_context is not None and gated.rule_context["rule_name"] == "Card numbers in shell commands"
    )
    original = await client.original_args(approval_id)
    assert "4111111111111111" in original["command"]
    await client.decline(approval_id, "not with a card number in the command")
    with pytest.raises(NotFound) as refused:
        await client.original_args(approval_id)
    assert "No original arguments are available for this request" in str(refused.value)
    plain = fake.request_approval("ls")
    with pytest.raises(NotFound):
        await client.original_args(plain)


async def test_the_session_row_cost_reaches_the_client_and_zeros_say_nothing(
    fake: FakePreloop, client: PreloopBackend
) -> None:
    from client.costs import cost_words, row_cost

    row = await client.get_session(MAIN_SESSION)
    assert row_cost(row) is None  # the recorded row: every token count 0, estimated_cost 0.0
    fake.spend(input_tokens=9800, output_tokens=2200, cost=0.42)
    row = await client.get_session(MAIN_SESSION)
    assert cost_words(row_cost(row)) == "$0.42 · 12k tokens (9.8k in / 2.2k out)"


def test_approvals_list_decided_names_who_decided_each(
    fake: FakePreloop, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--url", base_url, "--token", TOKEN]
    colleague = fake.request_approval("git push origin main")
    mine = fake.request_approval("ls")
    fake.colleague_decides(colleague, "decline", "not on main")
    assert main(["approvals", "approve", mine, "--comment", "fine", *flags]) == 0
    capsys.readouterr()
    assert main(["approvals", "list", "--decided", *flags]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "SESSION", "TOOL", "OUTCOME", "BY", "AT", "COMMENT"]
    by_id = {line.split()[0]: line for line in lines[1:]}
    assert " you " in by_id[mine] and "fine" in by_id[mine]
    assert DANA_EMAIL in by_id[colleague] and "not on main" in by_id[colleague]
    assert main(["approvals", "list", "--decided", "--json", *flags]) == 0
    items = {a["id"]: a for a in json.loads(capsys.readouterr().out)["items"]}
    assert items[colleague]["decided_by"]["name"] == DANA_EMAIL
    assert items[mine]["decided_by"]["you"] is True


def test_approvals_show_marks_what_was_redacted_and_fetches_the_originals(
    fake: FakePreloop, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--url", base_url, "--token", TOKEN]
    approval_id = fake.request_approval(redacted=True)
    assert main(["approvals", "show", approval_id, *flags]) == 0
    out = capsys.readouterr().out
    assert "Why       Issue the refund the customer was promised in ticket 4411.\n" in out
    assert "Rule      Card numbers in shell commands: Sensitive data rule cards-in-shell matched" in out
    assert (
        "Redacted  credit card, email redacted by the server · --original: the originals (kept until decided)"
        in out
    )
    assert "[REDACTED:credit_card]" in out and "4111111111111111" not in out
    assert "Viewed by alice113619@example.com" in out  # reading the detail is a view, and it says so
    assert main(["approvals", "show", approval_id, "--original", *flags]) == 0
    out = capsys.readouterr().out
    before, _, after = out.partition("Original arguments, before the server redacted them")
    assert "4111111111111111" not in before and "card=4111111111111111" in after
    assert main(["approvals", "show", approval_id, "--original", "--json", *flags]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["why"]["redacted"] == {
        "types": {"credit_card": 1, "email": 1},
        "reference_only": False,
        "originals_kept": True,
    }
    assert "dana@example.com" in data["original_args"]["command"]
    fake.colleague_decides(approval_id, "decline", "not with a card number in it")
    assert main(["approvals", "show", approval_id, *flags]) == 0
    out = capsys.readouterr().out
    assert f"Decided   declined by {DANA_EMAIL} " in out and "the server keeps no originals" in out
    assert main(["approvals", "show", approval_id, "--original", *flags]) == 1
    assert "No original arguments are available for this request" in capsys.readouterr().err
