"""The words an operator reads on the attach screen (issue 10 item 6): what the agent is doing, a lost
connection, an approval that stopped waiting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from client.models import Approval, Session
from client.present import agent_state, approval_outcome, connection_lost

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def _row(**kw: object) -> Session:
    return Session(id="s", started_at=NOW - timedelta(hours=1), **kw)  # type: ignore[arg-type]


def test_an_agent_waiting_on_an_approval_is_waiting_not_idle() -> None:
    quiet = _row(last_activity_at=NOW - timedelta(minutes=9))
    assert agent_state(quiet, 1, NOW) == ("waiting", "waiting for approval")


def test_live_means_the_agent_is_alive_however_quiet() -> None:
    assert agent_state(_row(last_activity_at=NOW - timedelta(seconds=30)), 0, NOW) == (
        "live",
        "live · working",
    )
    assert agent_state(_row(last_activity_at=NOW - timedelta(minutes=14)), 0, NOW) == (
        "live",
        "live · quiet for 14m",
    )
    ended = _row(last_activity_at=NOW, ended_at=NOW)
    assert agent_state(ended, 2, NOW) == ("ended", "ended")


def test_connection_lost_is_said_once() -> None:
    assert connection_lost("connection lost (RemoteProtocolError)") == "Connection lost (RemoteProtocolError)"
    assert connection_lost("read timeout") == "Connection lost (read timeout)"
    assert connection_lost("connection closed (1006)") == "Connection closed (1006)"
    assert connection_lost("") == "Connection lost"


def _settled(tool: str, status: str, **fields: object) -> Approval:
    return Approval.model_validate({"id": "a1", "tool_name": tool, "status": status, **fields})


def test_approval_outcome_grammar() -> None:
    assert (
        approval_outcome(_settled("Bash", "expired"), elsewhere=True)
        == "The Bash approval expired before anyone decided."
    )
    assert (
        approval_outcome(_settled("Bash", "approved"), elsewhere=True)
        == "The Bash approval was approved elsewhere."
    )
    assert (
        approval_outcome(_settled("Edit", "declined"), elsewhere=False) == "The Edit approval was declined."
    )


def test_a_race_lost_to_a_colleague_names_them_with_the_time_and_comment() -> None:
    at = datetime(2026, 3, 1, 14, 2, tzinfo=UTC)
    lost = _settled(
        "Bash",
        "approved",
        approver_comment="looks fine",
        resolved_at=at,
        decider={"kind": "person", "name": "dana", "user_id": "u-dana", "at": at},
    )
    hhmm = at.astimezone().strftime("%H:%M")
    assert (
        approval_outcome(lost, elsewhere=True)
        == f"The Bash approval was approved by dana {hhmm}: “looks fine”."
    )
    assert approval_outcome(lost, elsewhere=True, you=True).startswith(
        "The Bash approval was approved by you "
    )
    ai = _settled("Bash", "approved", decided_by_ai=True, ai_model="judge-1", resolved_at=at)
    assert (
        approval_outcome(ai, elsewhere=True)
        == f"The Bash approval was approved by an AI reviewer (judge-1) {hhmm}."
    )


def test_an_approval_a_preloop_bypass_allowed_reads_by_rule_seen_or_not() -> None:
    """Capture 138: a call Preloop's approval bypass approved. Whether or not this client has seen the
    bypass (the rules list names it with its scope), every place says "by rule <its id>" as a local allow
    rule's decision does (timeline and find, plain attach, digest, export), never a made-up person."""
    import json
    from pathlib import Path

    from client.backends.preloop.bypasses import rule_of_bypass
    from client.entry_words import entry_words
    from client.events import ApprovalDecided
    from client.present import decided_by, decision_words, event_line
    from client.timeline import ApprovalEntry

    captures = Path(__file__).parents[1] / "fake_preloop" / "captures"
    body = json.loads((captures / "138_approval_get_auto_approved_by_bypass.json").read_text())["body"]
    bypass = json.loads((captures / "130_approval_bypass_create.json").read_text())["body"]
    unseen = Approval.model_validate(body)
    seen = unseen.model_copy(update={"rule": rule_of_bypass(bypass)})
    for approval in (unseen, seen):
        entry = ApprovalEntry(id=1, seq=1, at=None, approval=approval, decided=True, status="approved")
        event = ApprovalDecided(
            type="approval.decided", session_id="s", seq=1, at=approval.resolved_at, approval=approval
        )
        said = [
            decision_words(approval),
            event_line(event)[1],
            " ".join(entry_words(entry)),
            str(decided_by(approval)["detail"]),  # type: ignore[index]
        ]
        assert all("by rule 7c1e5a40" in words or words.startswith("rule 7c1e5a40") for words in said), said
        assert decided_by(approval)["kind"] == "rule"  # type: ignore[index]
    assert "every tool of agent" in decision_words(seen)
