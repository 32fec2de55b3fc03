"""Where a copy goes, and the words that say so (no UI: the app sends the text itself, with OSC 52).

A terminal app reaches the operator's clipboard with the OSC 52 escape sequence, which works over SSH.
Inside tmux it arrives only when tmux's ``set-clipboard`` option is ``on``: with ``external`` (tmux's
default) or ``off`` tmux drops what an application sends. :func:`clipboard_route` asks tmux (one quick
``tmux show-options -gv set-clipboard``, only inside tmux) and :func:`copy_words` says what happened: the
copy went to the terminal, or it cannot arrive and how to let it, never "Copied" when nothing can arrive.
The app's own paste buffer gets the text either way.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["TMUX_FIX", "Route", "clipboard_route", "copy_words", "tmux_set_clipboard"]

TMUX_FIX = "tmux set -g set-clipboard on"
"""The command that lets a copy through tmux (also a line for ~/.tmux.conf, without "tmux")."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where a copy goes: straight to the terminal, or through tmux with its ``set-clipboard`` value
    (None: tmux could not be asked)."""

    tmux: bool
    setting: str | None = None

    @property
    def arrives(self) -> bool:
        """Whether what the app sends can reach the terminal's clipboard (as far as can be known here)."""
        return not self.tmux or self.setting == "on"


def tmux_set_clipboard() -> str | None:
    """tmux's ``set-clipboard`` option ("on", "external", "off"), or None when tmux cannot be asked."""
    try:
        done = subprocess.run(
            ["tmux", "show-options", "-gv", "set-clipboard"],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def clipboard_route(
    env: Mapping[str, str] | None = None, ask_tmux: Callable[[], str | None] = tmux_set_clipboard
) -> Route:
    """Where a copy made now goes (``env``: the process environment by default; tmux sets ``TMUX``)."""
    if not (os.environ if env is None else env).get("TMUX"):
        return Route(tmux=False)
    return Route(tmux=True, setting=ask_tmux())


def copy_words(what: str, route: Route) -> tuple[str, str, bool]:
    """``(message, title, arrived)`` for a copy of ``what`` ("12 characters: ls -la", plain text) by
    ``route``; ``arrived`` False: the notice is a warning that says how to let the next copy through."""
    if not route.tmux:
        return f"Copied {what}", "Copied to the clipboard", True
    if route.arrives:
        return f"Sent {what} to the terminal's clipboard through tmux (OSC 52)", "Copied (OSC 52)", True
    setting = f"set-clipboard is {route.setting}" if route.setting else "set-clipboard could not be read"
    return (
        f"Nothing reached your clipboard: tmux's {setting}, so it drops the copy (OSC 52). Run "
        f"`{TMUX_FIX}` (or put it in ~/.tmux.conf), then copy again. ({what})",
        "Not copied",
        False,
    )
