"""A Dendrux app keeps no allow rules: the command says so (exit 2, nothing asked of the app), and the
backend has nothing standing for the banner."""

from __future__ import annotations

import pytest

from client.backends.dendrux import DendruxBackend
from client.connection import Connection
from client.errors import Unsupported
from client.rules import RuleSpec
from tests.cli.helpers import preloop
from tests.dendrux_app.server import DendruxAppServer


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
