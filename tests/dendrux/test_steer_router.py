"""The steer router on a real Dendrux app: notes and per-call approval decisions over HTTP."""

from __future__ import annotations

import httpx

from tests.dendrux.conftest import run_status, wait_for
from tests.dendrux_app.server import DendruxAppServer


def _http(app: DendruxAppServer) -> httpx.Client:
    return httpx.Client(base_url=app.url, headers={"Authorization": f"Bearer {app.token}"}, timeout=30)


def test_note_left_mid_run_is_pending_then_delivered(dendrux_app: DendruxAppServer) -> None:
    run_id = dendrux_app.start_run("hold gate=n1: wait for the warehouse")
    with _http(dendrux_app) as http:
        created = http.post(f"/runs/{run_id}/notes", json={"text": "Customer is a VIP, be polite."})
        assert created.status_code == 201
        note = created.json()
        assert note["state"] == "pending" and note["text"] == "Customer is a VIP, be polite."
        dendrux_app.open_gate("n1")
        wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="run to finish")
        notes = http.get(f"/runs/{run_id}/notes").json()["notes"]
        assert [(n["note_id"], n["state"]) for n in notes] == [(note["note_id"], "delivered")]
        assert dendrux_app.get(f"/runs/{run_id}")["answer"].endswith("(Customer is a VIP, be polite.).")
        late = http.post(f"/runs/{run_id}/notes", json={"text": "too late"})
        assert late.status_code == 409 and "terminal" in late.json()["detail"]
        assert http.post(f"/runs/{run_id}/notes", json={"text": ""}).status_code == 422
        assert http.post("/runs/nope/notes", json={"text": "x"}).status_code == 404
        assert http.post(f"/runs/{run_id}/notes", json={"text": "x" * (32 * 1024 + 1)}).status_code == 422


def test_steer_routes_use_the_apps_authorize_hook(dendrux_app: DendruxAppServer) -> None:
    run_id = dendrux_app.start_run("answer: hello")
    with httpx.Client(base_url=dendrux_app.url, timeout=30) as http:
        assert http.get(f"/runs/{run_id}/notes").status_code == 401
        assert http.post(f"/runs/{run_id}/notes", json={"text": "x"}).status_code == 401
        assert (
            http.post(f"/runs/{run_id}/approvals", json={"decisions": {"a": {"approved": True}}}).status_code
            == 401
        )


def test_per_call_decisions_wait_for_every_gated_call_then_resume(dendrux_app: DendruxAppServer) -> None:
    run_id = dendrux_app.start_run("refund voucher=yes: order A-17 arrived broken; refund it.")
    wait_for(lambda: run_status(dendrux_app, run_id) == "waiting_approval", what="the approval pause")
    with _http(dendrux_app) as http:
        items = http.get(f"/runs/{run_id}/approvals").json()["items"]
        assert [(i["tool_name"], i["status"]) for i in items] == [
            ("refund_order", "pending"),
            ("send_voucher", "pending"),
        ]
        refund, voucher = items[0]["call_id"], items[1]["call_id"]
        bad = http.post(f"/runs/{run_id}/approvals", json={"decisions": {"nope": {"approved": True}}})
        assert bad.status_code == 422
        first = http.post(
            f"/runs/{run_id}/approvals",
            json={"decisions": {refund: {"approved": False, "reason": "Refunds over $40 need a manager."}}},
        )
        assert first.status_code == 202 and first.json()["waiting_for"] == [voucher]
        assert run_status(dendrux_app, run_id) == "waiting_approval"
        assert [i["status"] for i in http.get(f"/runs/{run_id}/approvals").json()["items"]] == [
            "declined",
            "pending",
        ]
        second = http.post(f"/runs/{run_id}/approvals", json={"decisions": {voucher: {"approved": True}}})
        assert second.status_code == 202 and second.json()["submitted"] is True
        wait_for(lambda: run_status(dendrux_app, run_id) == "success", what="run to finish")
        decided = [
            e
            for e in dendrux_app.get(f"/runs/{run_id}/events")["items"]
            if e["event_type"] == "approval.decided"
        ]
        assert [(d["call_id"], d["decision"], d.get("reason")) for d in decided[0]["data"]["decisions"]] == [
            (refund, "denied", "Refunds over $40 need a manager."),
            (voucher, "approved", None),
        ]
        again = http.post(f"/runs/{run_id}/approvals", json={"decisions": {voucher: {"approved": True}}})
        assert again.status_code == 409
        # the run's approvals stay listed once decided, as Dendrux recorded them
        history = http.get(f"/runs/{run_id}/approvals").json()["items"]
        assert [(i["call_id"], i["status"], i["reason"]) for i in history] == [
            (refund, "declined", "Refunds over $40 need a manager."),
            (voucher, "approved", None),
        ]
        assert all(i["resolved_at"] and i["requested_at"] and i["params"] for i in history)


def test_the_steer_router_imports_without_the_tui() -> None:
    import subprocess
    import sys

    code = (
        "import sys, preloop_steer.dendrux; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('tui', 'widgets', 'textual')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
