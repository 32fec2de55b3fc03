"""``y`` inside tmux (a fake ``tmux`` on the PATH answers the ``set-clipboard`` query): the notice says
where the copy went, or that it cannot arrive and how to let it (issue 23 §6)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from client.backends.base import Backend
from server.harness_client import HarnessSession
from tests.conftest import said
from tests.tui.test_attach_memory import agent, cursor_text, out_of_the_box  # noqa: F401
from tests.tui.test_pilot import SIZE, until
from tui.app import PreloopApp


def _fake_tmux(folder: Path, setting: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = folder / "tmux"
    fake.write_text(f'#!/bin/sh\n[ "$*" = "show-options -gv set-clipboard" ] && echo {setting}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TMUX", "/tmp/tmux-1000/default,4242,0")


@pytest.mark.parametrize("setting", ["external", "on"])
async def test_y_inside_tmux_tells_where_the_copy_went(
    client: Backend,
    agent: HarnessSession,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
) -> None:
    _fake_tmux(tmp_path, setting, monkeypatch)
    app = PreloopApp(client, start_session_id=agent.session_id)
    async with app.run_test(size=SIZE) as pilot:
        screen = await out_of_the_box(pilot, app)
        await pilot.press("left_square_bracket")  # the failed migration
        await until(pilot, lambda: "make migrate" in cursor_text(screen), "the failure highlighted")
        await pilot.press("y")
        await until(pilot, lambda: any("make migrate" in m for m in said(app)), "the notice")
        told = next(m for m in said(app) if "make migrate" in m)
        if setting == "on":
            assert "OSC 52" in told and "tmux" in told
        else:
            assert not told.startswith("Copied") and "set -g set-clipboard on" in told
