"""Snapshots of what decides for the operator (issue 24 §5, issue 25 §4), at 80x24 and 120x32: the rules
banner over the sessions list (our server's rules; a Preloop account's kill switch and bypasses), and the
"allow calls like this for …" dialog opened with ``A`` from the inbox (our server: a pattern suggested
from the call; Preloop: the agent or the account, which it says).

The scripted ``FakeBackend`` answers ``standing()`` with fixed rules, the clock is frozen at
``fakes.NOW`` and the zone is UTC (the banner says "until 12:30" in local time).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from textual.pilot import Pilot

from client.backends.local import LocalBackend
from client.backends.preloop import PreloopBackend
from client.models import AllowRule, AttentionSnapshot, HaltedScope, KillSwitch, Standing
from client.status import Live
from tests.conftest import until
from tests.tui import data
from tests.tui.fakes import NOW, FakeBackend, ago
from tests.tui.test_inbox_snapshots import _open_inbox, approval
from tests.tui.test_tui_snapshots import _app, _settle
from tui.screens.allow import AllowScreen
from widgets.standing import StandingBanner

SIZES = [(80, 24), (120, 32)]
AGENT = "2618a221-b8ee-48a3-a51a-f78dcb1c5af8"


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def local_rules() -> list[AllowRule]:
    return [
        AllowRule(
            id="5e1f2a3b-0000-4000-8000-000000000001",
            mode="allow",
            scope="session",
            session_id=data.SID,
            tool_name="Bash",
            pattern="pytest *",
            danger=True,
            set_by="alice",
            created_at=ago(minutes=10),
            expires_at=NOW + timedelta(minutes=20),
            allowed_count=3,
        ),
        AllowRule(
            id="7c1e5a40-0000-4000-8000-000000000002",
            mode="mute",
            scope="account",
            tool_name="WebFetch",
            set_by="dana",
            created_at=ago(minutes=5),
            expires_at=NOW + timedelta(hours=2),
        ),
    ]


def preloop_standing() -> Standing:
    bypass = AllowRule(
        id="c3f08e11-0000-4000-8000-000000000003",
        mode="allow",
        scope="agent",
        agent_id=AGENT,
        agent_name=None,
        danger=True,
        set_by="you",
        created_at=ago(minutes=1),
        expires_at=NOW + timedelta(minutes=29),
        allowed_count=12,
    )
    halt = KillSwitch(
        active=True,
        scopes=[
            HaltedScope(
                scope=s,
                activated_by_username="alice113619",
                activated_at=ago(minutes=2),
                reason="runaway agent",
            )
            for s in ("tools", "gateway")
        ],
    )
    return Standing(rules=[bypass], halt=halt)


def _backend(standing: Standing, capabilities: Any, **kw: Any) -> FakeBackend:
    return FakeBackend(sessions=data.sessions(), standing=standing, capabilities=capabilities, **kw)


async def _banner_shown(pilot: Pilot[Any]) -> None:
    """Once the standing is read (a worker that never finishes) and the screen's banner shows it."""
    await _settle(pilot)
    await until(
        pilot,
        lambda: any(banner.has_class("-shown") for banner in pilot.app.screen.query(StandingBanner)),
        "the banner shown",
    )
    await _settle(pilot)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x32"])
def test_rules_banner_on_the_sessions_list(snap_compare: Any, size: tuple[int, int]) -> None:
    """Two rules of our server: an allow rule (what it covers, until when, how many it allowed, who set
    it) and a mute rule, over the sessions list."""
    app = _app(_backend(Standing(rules=local_rules()), LocalBackend.capabilities))
    assert snap_compare(app, run_before=_banner_shown, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x32"])
def test_kill_switch_and_bypass_banner_on_preloop(snap_compare: Any, size: tuple[int, int]) -> None:
    """A Preloop account halted by its kill switch, and an approval bypass of one agent (every tool)."""
    app = _app(_backend(preloop_standing(), PreloopBackend.capabilities))
    assert snap_compare(app, run_before=_banner_shown, terminal_size=size)


def _pending(command: str = "pytest -q tests/test_checkout.py") -> Any:
    row = approval(0, tool_args={"command": command, "cwd": "/repo"}, summary="Run the checkout tests")
    return row.model_copy(update={"runtime_session_id": data.SID, "managed_agent_id": AGENT})


async def _open_allow(pilot: Pilot[Any]) -> None:
    await _open_inbox(pilot)
    await pilot.press("A")
    await _settle(pilot)
    assert isinstance(pilot.app.screen, AllowScreen)
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x32"])
def test_allow_dialog_on_the_local_server(snap_compare: Any, size: tuple[int, int]) -> None:
    """From a danger-risk Bash call: the call named, the scopes our server holds, the pattern suggested
    from the command and whether it matches, the duration (required, bounded), allow or mute."""
    backend = _backend(
        Standing(rules=local_rules()[:1]),
        LocalBackend.capabilities,
        attention=[Live(), AttentionSnapshot(at=NOW, approvals=[_pending()])],
    )
    assert snap_compare(_app(backend), run_before=_open_allow, terminal_size=size)


def test_allow_dialog_on_preloop(snap_compare: Any) -> None:
    """On Preloop: the agent or the whole account, and a line saying what its bypasses cover."""
    backend = _backend(
        Standing(),
        PreloopBackend.capabilities,
        attention=[Live(), AttentionSnapshot(at=NOW, approvals=[_pending()])],
    )
    assert snap_compare(_app(backend), run_before=_open_allow, terminal_size=(80, 24))
