"""Where a copy goes (``client.clipboard``): OSC 52 to the terminal, and inside tmux only when its
``set-clipboard`` is ``on``. The notice tells the truth: never "Copied" when nothing can arrive."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from client.clipboard import Route, clipboard_route, copy_words


def test_outside_tmux_the_copy_goes_to_the_terminal() -> None:
    route = clipboard_route({}, lambda: "off")
    assert route == Route(tmux=False, setting=None) and route.arrives
    message, title, arrived = copy_words("12 characters: ls -la", route)
    assert arrived and message == "Copied 12 characters: ls -la" and title == "Copied to the clipboard"


def test_inside_tmux_with_set_clipboard_on_it_says_the_copy_went_through_tmux() -> None:
    route = clipboard_route({"TMUX": "/tmp/tmux-1000/default,1,0"}, lambda: "on")
    message, _, arrived = copy_words("12 characters: ls -la", route)
    assert arrived and "OSC 52" in message and "tmux" in message and "ls -la" in message


def test_inside_tmux_without_set_clipboard_on_it_says_how_to_enable_it() -> None:
    """The trial: "Copied" inside tmux with set-clipboard external, and nothing arrived."""
    for setting in ("external", "off", None):
        route = clipboard_route({"TMUX": "/tmp/tmux-1000/default,1,0"}, lambda setting=setting: setting)
        assert not route.arrives
        message, title, arrived = copy_words("12 characters: ls -la", route)
        assert not arrived and not message.startswith("Copied") and title == "Not copied"
        assert "set -g set-clipboard on" in message and "OSC 52" in message


def test_the_setting_is_read_from_the_tmux_on_the_path(tmp_path: Path, monkeypatch) -> None:
    fake = tmp_path / "tmux"
    fake.write_text('#!/bin/sh\n[ "$*" = "show-options -gv set-clipboard" ] && echo external\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert clipboard_route({"TMUX": "x"}) == Route(tmux=True, setting="external")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert clipboard_route({"TMUX": "x"}) == Route(tmux=True, setting=None)  # no tmux to ask: unknown
