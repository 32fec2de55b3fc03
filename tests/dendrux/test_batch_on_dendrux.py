"""Many approvals at once on a Dendrux app (issue 25 §2-3, §5): the app has no batch call, so each id is one
call of the steer router (a run's calls one after another: its pause resumes once all are decided), the
outcomes gathered as on every server."""

from __future__ import annotations

import asyncio
import json

import pytest

from client.backends.dendrux import DendruxBackend
from client.connection import Connection
from client.errors import Unsupported
from client.steering import Steering
from tests.dendrux.conftest import run_cli, run_status, wait_for
from tests.dendrux_app.server import DendruxAppServer

pytestmark = pytest.mark.usefixtures("isolated_dirs")  # preloop's folders under tmp_path


def test_decline_every_call_of_two_runs_in_one_command(dendrux_app: DendruxAppServer) -> None:
    """Two runs, each paused on two gated calls: one `decline` of the four resumes both runs, one line per
    call; asked again, each is told as already declined (exit 1)."""
    flags = ["--url", dendrux_app.url, "--token", str(dendrux_app.token), "--server-kind", "dendrux"]
    runs = [
        dendrux_app.start_run(f"refund voucher=yes: order A-{n} arrived broken; refund it.") for n in (1, 2)
    ]
    for run_id in runs:
        wait_for(lambda r=run_id: run_status(dendrux_app, r) == "waiting_approval", what="the approval pause")
    calls: list[str] = []
    for run_id in runs:
        code, out, err = run_cli(["approvals", "list", "--session", run_id, "-o", "id", *flags])
        assert code == 0, err
        calls += out.split()
    assert len(calls) == 4
    code, out, err = run_cli(["approvals", "decline", *calls, "--comment", "Needs a manager.", *flags])
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 4 and all('declined with comment "Needs a manager."' in line for line in lines)
    assert [line.split()[1] for line in lines] == calls
    for run_id in runs:
        wait_for(lambda r=run_id: run_status(dendrux_app, r) == "success", what="the resumed run")
        assert dendrux_app.get(f"/runs/{run_id}")["answer"].startswith("The refund was not approved")

    code, out, err = run_cli(["approvals", "approve", calls[0], calls[3], "--json", *flags])
    assert code == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["id"], r["result"], r["status"]) for r in records] == [
        (calls[0], "already_settled", "declined"),
        (calls[3], "already_settled", "declined"),
    ]
    assert err.count("preloop: already declined: ") == 2


async def test_an_approval_comment_is_refused_for_the_whole_batch_before_anything_is_sent(
    dendrux_app: DendruxAppServer,
) -> None:
    run_id = dendrux_app.start_run("refund voucher=yes: order A-3 arrived broken; refund it.")
    async with DendruxBackend(Connection(dendrux_app.url, str(dendrux_app.token))) as backend:
        async with asyncio.timeout(60):
            while len(calls := (await backend.list_approvals(session_id=run_id)).items) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        batch = await Steering(backend).decide_many([c.id for c in calls], "approve", "fine by me")
        assert all(isinstance(getattr(o, "error", None), Unsupported) for o in batch.outcomes)
        assert [c.status for c in (await backend.list_approvals(session_id=run_id)).items] == ["pending"] * 2
