"""Many approvals at once on Preloop (issue 25 §1-3, §5), against the fake Preloop's ``decide-batch`` shaped
as Preloop 0.17.1's source says (captures 141-142): one request per 100 ids, one outcome per id, a refusal
of the whole request (403) decides nothing and is said for every id."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from client.backends.preloop import PreloopBackend
from client.errors import NotFound, PermissionDenied
from client.steering import AlreadySettled, Decided, DecisionFailed, Steering
from tests.fake_preloop import MAIN_SESSION, RATE_SESSION, TOKEN, FakePreloop

UNKNOWN = "3f6c1a52-0000-4000-8000-000000000000"
BATCH = "/api/v1/approval-requests/decide-batch"


def _batches(fake: FakePreloop) -> int:
    return sum(1 for method, path in fake.requests if (method, path) == ("POST", BATCH))


async def test_150_approvals_go_as_two_requests_and_each_is_named(
    fake: FakePreloop, client: PreloopBackend
) -> None:
    """Preloop takes 100 ids a request: 150 go as two, every one decided, named by the rows the inbox
    held (Preloop's answer has statuses only)."""
    ids = [fake.request_approval(f"make t{n}", sid=(MAIN_SESSION, RATE_SESSION)[n % 2]) for n in range(150)]
    known = (await client.list_approvals(limit=200)).items
    batch = await Steering(client).decide_many(ids, "approve", "all good", known=known)
    assert _batches(fake) == 2
    assert batch.all_decided and [o.approval.id for o in batch.decided] == ids
    first = batch.decided[0].approval
    assert (first.tool_name, first.status, first.approver_comment) == ("Bash", "approved", "all good")
    assert first.runtime_session_id == MAIN_SESSION
    assert all(fake.approvals[i]["status"] == "approved" for i in ids)


async def test_what_preloop_would_not_decide_is_told_per_id(
    fake: FakePreloop, client: PreloopBackend
) -> None:
    """Decided, approved elsewhere, expired, unknown: one outcome each, in order; the settled ones read
    once to say what they are."""
    waiting, taken, lapsed = (fake.request_approval(c) for c in ("make a", "make b", "make c"))
    fake.decide(taken, "approve", "fine by me")
    fake.expire_approval(lapsed)
    batch = await Steering(client).decide_many([waiting, taken, lapsed, UNKNOWN], "decline", "no")
    assert _batches(fake) == 1
    decided, settled, expired, failed = batch.outcomes
    assert isinstance(decided, Decided) and decided.approval.status == "declined"
    assert isinstance(settled, AlreadySettled)
    assert (settled.approval.status, settled.approval.approver_comment) == ("approved", "fine by me")
    assert isinstance(expired, AlreadySettled) and expired.approval.status == "expired"
    assert isinstance(failed, DecisionFailed) and isinstance(failed.error, NotFound)
    assert fake.approvals[taken]["status"] == "approved"  # not declined over it


async def test_a_refused_batch_decides_nothing_and_says_so_for_each(
    fake: FakePreloop, client: PreloopBackend
) -> None:
    """Without ``decide_approvals`` the whole request is a 403: every id is "not decided" with Preloop's
    sentence; nothing is read again (a refusal says nothing about them)."""
    ids = [fake.request_approval(f"make {n}") for n in range(3)]
    fake.can_decide = False
    before = len(fake.requests)
    batch = await Steering(client).decide_many(ids, "approve")
    assert [type(o) for o in batch.outcomes] == [DecisionFailed] * 3
    for outcome in batch.outcomes:
        assert isinstance(outcome, DecisionFailed) and isinstance(outcome.error, PermissionDenied)
        assert "Required: decide_approvals" in outcome.error.hint
    assert fake.requests[before:] == [("POST", BATCH)]
    assert all(fake.approvals[i]["status"] == "pending" for i in ids)


@pytest.mark.usefixtures("isolated_dirs")
def test_the_command_on_preloop_names_each_id_and_an_ambiguous_one_decides_nothing(
    fake: FakePreloop, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--url", base_url, "--token", TOKEN]
    one, two = fake.request_approval("make a"), fake.request_approval("make b")
    twin = "abcd" + one[4:]  # two approvals whose ids begin alike: "abcd" names both
    fake.approvals[twin] = {**fake.approvals[one], "id": twin}
    fake.approvals["abcd" + two[4:]] = {**fake.approvals[two], "id": "abcd" + two[4:]}
    assert main(["approvals", "approve", one, "abcd", *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "preloop: ambiguous id: 'abcd' matches 2 approvals" in captured.err
    assert fake.approvals[one]["status"] == "pending"

    assert main(["approvals", "approve", one[:8], two, UNKNOWN, "--json", *flags]) == 1
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert [(r["id"], r["result"]) for r in records] == [
        (one, "decided"),
        (two, "decided"),
        (UNKNOWN, "failed"),
    ]
    assert records[0]["approval"]["tool_name"] == "Bash"  # named from the listing the short id was read in
    assert records[2]["error"]["status"] == 404
    assert f"preloop: approval {UNKNOWN[:8]} not approved: not found" in captured.err
    assert main(["approvals", "decline", twin, *flags]) == 0
    # A full id is not listed, and Preloop's answer names no tool: the id alone.
    assert capsys.readouterr().out == f"Approval {twin} declined.\n"


async def test_the_inbox_on_preloop_keeps_refused_rows_marked_and_says_why(
    fake: FakePreloop, base_url: str, isolated_dirs: object
) -> None:
    """The inbox's marked rows on Preloop: refused as a whole (403), every row says so and stays marked
    for another try; once allowed, the same keys decide them all (one request)."""
    from textual.widgets import Static

    from client.alerts import AlertSettings
    from client.backends import connect
    from client.config import Settings
    from tests.tui.test_pilot import plain, until
    from tui.app import PreloopApp
    from tui.screens.confirm import ConfirmScreen
    from tui.screens.inbox import InboxScreen

    ids = [fake.request_approval(f"make {n}", sid=(MAIN_SESSION, RATE_SESSION)[n % 2]) for n in range(3)]
    fake.can_decide = False
    async with await connect(Settings(base_url, TOKEN)) as backend:
        app = PreloopApp(backend, refresh_interval=0, alert_settings=AlertSettings(enabled=False))
        async with app.run_test(size=(120, 32)) as pilot:
            await until(pilot, lambda: app.inbox_count == 3, "three approvals polled")
            await pilot.press("i", "M", "a")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the dialog")
            await pilot.press("y")
            screen = app.screen
            await until(
                pilot, lambda: isinstance(screen, InboxScreen) and screen.last_batch is not None, "results"
            )
            assert isinstance(screen, InboxScreen)
            results = plain(screen.query_one("#inbox-batch", Static).content, 200)
            assert "0 of 3 marked approved · 3 not" in results
            assert results.count("Insufficient permissions. Required: decide_approvals") == 3
            assert list(screen.marked) == [a.id for a in app.inbox.approvals] and len(screen.marked) == 3
            assert all(fake.approvals[i]["status"] == "pending" for i in ids)
            fake.can_decide = True
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the dialog again")
            await pilot.press("y")
            await until(
                pilot, lambda: all(fake.approvals[i]["status"] == "approved" for i in ids), "approved"
            )
            await until(pilot, lambda: app.inbox_count == 0, "an empty inbox")
            assert _batches(fake) == 2
