"""``preloop sessions digest`` and the handoff against a real Dendrux app: the run's events read from the
index a time or a mark names (the app has no time filter), and what the app keeps no record of (the
comment of an approval) said, not left blank."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from client.backends.wire import parse_time
from client.marks import Mark, MarkStore
from client.paths import state_dir
from client.timeline import Place
from tests.dendrux.conftest import run_cli, run_status, wait_for
from tests.dendrux_app.server import DendruxAppServer

pytestmark = pytest.mark.usefixtures("isolated_dirs")  # preloop's folders under tmp_path


def test_digest_and_handoff_of_a_dendrux_run(dendrux_app: DendruxAppServer) -> None:
    flags = ["--url", dendrux_app.url, "--token", str(dendrux_app.token), "--server-kind", "dendrux"]
    run_id = dendrux_app.start_run("refund voucher=yes: order A-17 arrived broken; refund it.")
    wait_for(lambda: run_status(dendrux_app, run_id) == "waiting_approval", what="the approval pause")
    paused = next(
        e for e in dendrux_app.get(f"/runs/{run_id}/events")["items"] if e["event_type"] == "run.paused"
    )
    assert run_cli(["notes", "send", "--session", run_id, "Customer is a VIP.", *flags])[0] == 0
    code, listed, _ = run_cli(["approvals", "list", "--session", run_id, "-o", "id", *flags])
    refund, voucher = listed.split()
    assert run_cli(["approvals", "decline", refund, "--comment", "Needs a manager.", *flags])[0] == 0
    assert run_cli(["approvals", "approve", voucher, *flags])[0] == 0
    wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="the resumed run")

    code, out, err = run_cli(["sessions", "digest", run_id, "--since", "30m", "--json", *flags])
    assert code == 0, err
    doc = json.loads(out)
    decided = {
        (d["tool"], d["status"], d["comment"], d["comment_kept_by_server"]) for d in doc["approvals_decided"]
    }
    assert decided == {
        ("refund_order", "declined", "Needs a manager.", True),  # a decline keeps its reason
        ("send_voucher", "approved", None, False),  # Dendrux keeps no comment for an approval
    }
    assert doc["tool_calls"] == 3 and doc["tool_calls_failed"] == 1  # lookup, the declined refund, voucher
    assert [(n["text"], n["state"]) for n in doc["notes"]] == [("Customer is a VIP.", "delivered")]
    assert doc["final_answer"] and doc["final_answer"].startswith("The refund was not approved")
    code, text, err = run_cli(["sessions", "digest", run_id, "--since", "30m", *flags])
    assert code == 0, err
    # Dendrux records no decider: nobody is named, and the digest says so once (issue 24).
    assert "send_voucher approved (this server keeps no comment for an approval)" in text
    assert "refund_order declined: “Needs a manager.”" in text
    assert text.count("this server does not record who decided an approval") == 1

    # Since a mark on the pause (its Dendrux index): what came before it is not read, let alone counted.
    at = parse_time(paused["created_at"]) or datetime.now(UTC)
    index = paused["sequence_index"]
    MarkStore(state_dir() / "marks").put(run_id, Mark(Place(str(index), at, index), at))
    code, out, err = run_cli(["sessions", "digest", run_id, "--since-last", "--json", *flags])
    assert code == 0, err
    since_last = json.loads(out)
    assert since_last["tool_calls"] == 2 and since_last["since_place"]["number"] == index
    assert len(since_last["approvals_decided"]) == 2 and since_last["final_answer"] == doc["final_answer"]

    code, handoff, err = run_cli(["sessions", "digest", "--all", "--since", "1h", *flags])
    assert code == 0, err
    assert "1 session with activity" in handoff
    assert "(Approvals here carry no comment: this server keeps no comment for an approval" in handoff
    assert f"{run_id[:12]} ✗ refund_order declined: “Needs a manager.”" in handoff
    assert handoff.count("this server does not record who decided an approval") == 1
