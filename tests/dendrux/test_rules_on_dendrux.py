"""A Dendrux app keeps no allow rules: the command says so (exit 2, nothing asked of the app), and the
backend has nothing standing for the banner."""

from __future__ import annotations

import asyncio

import pytest

from client.backends.dendrux import DendruxBackend
from client.connection import Connection
from client.errors import Unsupported
from client.models import RuleSpec
from tests.cli.helpers import preloop
from tests.conftest import said, until
from tests.dendrux_app.server import DendruxAppServer
from tui.app import PreloopApp
from tui.screens.allow import AllowScreen
from tui.screens.attach import AttachScreen
from widgets.standing import StandingBanner


def test_allow_and_rules_say_a_dendrux_app_keeps_none(dendrux_app: DendruxAppServer) -> None:
    flags = ["--url", dendrux_app.url, "--token", str(dendrux_app.token), "--server-kind", "dendrux"]
    allow = preloop(
        "approvals", "allow", "--session", "1a2b3c4d", "--tool", "refund_order", "--for", "30m", *flags
    )
    assert allow.returncode == 2 and allow.stdout == ""
    assert (
        "a dendrux server keeps no allow rules: every call it asks about is decided one by one"
        in allow.stderr
    )
    listed = preloop("approvals", "rules", *flags)
    assert listed.returncode == 2 and "keeps no allow rules" in listed.stderr


async def test_the_backend_has_nothing_standing_and_refuses_a_rule(dendrux_app: DendruxAppServer) -> None:
    async with DendruxBackend(Connection(dendrux_app.url, str(dendrux_app.token))) as backend:
        assert backend.capabilities.rules is None and not backend.capabilities.halts
        standing = await backend.standing()
        assert standing.rules == [] and standing.halt is None
        with pytest.raises(Unsupported, match="keeps no allow rules"):
            await backend.create_rule(RuleSpec(mode="allow", minutes=5, scope="account"))


async def test_A_on_a_dendrux_approval_says_the_app_keeps_no_rules(dendrux_app: DendruxAppServer) -> None:
    run_id = await asyncio.to_thread(dendrux_app.start_run, "refund: order A-17 arrived broken; refund it.")
    conn = Connection(dendrux_app.url, str(dendrux_app.token), backoff_initial=0.05, backoff_max=0.5)
    async with DendruxBackend(conn) as backend:
        app = PreloopApp(backend, start_session_id=run_id, refresh_interval=0)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            await until(pilot, lambda: screen.approvals_panel.count > 0, "the approval in the panel")
            await pilot.press("escape", "A")  # out of the note box, then "allow calls like this"
            await until(
                pilot,
                lambda: any("keeps no allow rules" in m for m in said(app)),
                "the reason A opens nothing",
            )
            assert not isinstance(app.screen, AllowScreen)
            assert not screen.query_one(StandingBanner).shown  # nothing decides for the operator
