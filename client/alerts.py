"""Alerts: a terminal bell and a desktop notification when something needs the operator elsewhere.

A new approval, an approval about to expire (a minute left, once each), or a note that failed or became
undeliverable, in a session the operator is *not* looking at is easy to miss. :class:`Alerter` turns such
an inbox change into bytes for the terminal:

* ``BEL`` (``\\a``): most terminals beep, flash or mark the tab;
* a desktop notification through the terminal: ``OSC 9`` (``ESC ] 9 ; text BEL``: iTerm2, WezTerm,
  kitty, ghostty, foot, Windows Terminal) or ``OSC 777`` (``ESC ] 777 ; notify ; title ; body BEL``:
  VTE terminals such as GNOME Terminal, urxvt's notify extension, foot). ``auto`` picks one from the
  environment and sends none where it does not know the terminal.

Inside tmux nothing is sent unless asked for (``in_tmux``): tmux would show the bell in its status line
and swallow the OSC; when asked, the notification is wrapped in tmux's DCS passthrough (needs
``set -g allow-passthrough on``).

At most one alert per ``min_interval`` seconds (5 by default): a burst of approvals rings once, and the
inbox shows the rest. The text of a notification comes from agents and tool arguments, so it is
untrusted: :func:`sanitize` drops every control character and escape (an ``ESC`` or ``BEL`` in it could
end the OSC early and drive the terminal) and caps the length.

Settings come from ``config.toml`` (``[alerts]``) and the environment (which wins)::

    [alerts]
    bell = true              # PRELOOP_ALERT_BELL=0/1
    desktop = "auto"         # PRELOOP_ALERT_DESKTOP=auto|osc9|osc777|off
    in_tmux = false          # PRELOOP_ALERT_IN_TMUX=1
    min_interval = 5.0       # PRELOOP_ALERT_INTERVAL=seconds

``PRELOOP_ALERTS=off`` turns everything off. This module is pure: the caller supplies the writer.
"""

from __future__ import annotations

import contextlib
import os
import time
import tomllib
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from client import paths
from client.ids import short_id
from client.inbox import ApprovalAdded, ApprovalExpiring, InboxChange, NoteFailed

__all__ = [
    "Alert",
    "AlertSettings",
    "Alerter",
    "DesktopKind",
    "alert_text",
    "desktop_kind",
    "load_alert_settings",
    "notification",
    "sanitize",
]

DesktopKind = Literal["osc9", "osc777"]
DesktopSetting = Literal["auto", "osc9", "osc777", "off"]

BEL = "\a"
_MAX_TEXT = 160


@dataclass(frozen=True, slots=True)
class AlertSettings:
    """What to send and how often (see the module docstring for where each comes from)."""

    bell: bool = True
    desktop: DesktopSetting = "auto"
    in_tmux: bool = False
    min_interval: float = 5.0
    enabled: bool = True


def sanitize(text: str, limit: int = _MAX_TEXT) -> str:
    """Untrusted text made safe inside an OSC string: no control or format characters at all (C0, DEL,
    C1, bidi overrides, so no ``ESC``/``BEL``/``ST``), ``;`` (OSC 777's separator) made a comma,
    whitespace collapsed, cut to ``limit`` with an ellipsis."""
    out: list[str] = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch.isspace() or category in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            ch = " "
        elif ch == ";":
            ch = ","
        out.append(ch)
    clean = " ".join("".join(out).split())
    if len(clean) > limit:
        clean = clean[: max(limit - 1, 0)] + "…"
    return clean


def desktop_kind(env: Mapping[str, str]) -> DesktopKind | None:
    """The notification sequence this terminal understands, from its environment; None if unknown."""
    program = env.get("TERM_PROGRAM", "")
    term = env.get("TERM", "")
    if program in ("iTerm.app", "WezTerm", "ghostty") or "kitty" in term or env.get("WT_SESSION"):
        return "osc9"
    if env.get("VTE_VERSION") or term.startswith(("rxvt", "foot")):
        return "osc777"
    return None


def notification(kind: DesktopKind, title: str, body: str, *, tmux: bool = False) -> str:
    """The escape sequence for one desktop notification; title and body are sanitised here."""
    title, body = sanitize(title, 60), sanitize(body)
    seq = f"\x1b]9;{title}: {body}{BEL}" if kind == "osc9" else f"\x1b]777;notify;{title};{body}{BEL}"
    if tmux:  # DCS passthrough: every ESC inside is doubled
        seq = "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return seq


Alert = InboxChange | ApprovalExpiring
"""What can raise an alert: an inbox change, or an approval about to expire."""


def alert_text(change: Alert) -> tuple[str, str] | None:
    """(title, body) for a change worth an alert (a new approval, one about to expire, a failed note);
    None otherwise."""
    if isinstance(change, ApprovalAdded | ApprovalExpiring):
        a = change.approval
        who = a.managed_agent_name or (a.agent.name if a.agent else None) or "an agent"
        what = a.summary or f"{a.tool_name or 'a tool'}"
        body = f"{what} (session {short_id(a.runtime_session_id or '')})"
        if isinstance(change, ApprovalExpiring):
            seconds = max(int(change.left.total_seconds()), 1)
            return f"Approval expires in {seconds} s: {who}", body
        return f"Approval needed: {who}", body
    if isinstance(change, NoteFailed):
        n = change.note
        return f"Note {n.state}", f"{n.text} (session {short_id(n.runtime_session_id or '')})"
    return None


def session_of(change: Alert) -> str | None:
    """The session a change belongs to (no alert for the session on screen)."""
    if isinstance(change, ApprovalAdded | ApprovalExpiring):
        return change.approval.runtime_session_id
    if isinstance(change, NoteFailed):
        return change.note.runtime_session_id
    return None


class Alerter:
    """Rate-limited alerts written through ``write`` (the terminal); returns what it wrote."""

    def __init__(
        self,
        settings: AlertSettings,
        write: Callable[[str], None],
        *,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        env = os.environ if env is None else env
        self.tmux = bool(env.get("TMUX"))
        if self.tmux and not settings.in_tmux:
            settings = replace(settings, enabled=False)
        self.settings = settings
        desktop = settings.desktop
        self.kind: DesktopKind | None = desktop_kind(env) if desktop == "auto" else None
        if desktop in ("osc9", "osc777"):
            self.kind = desktop
        self._write = write
        self._clock = clock
        self._last: float | None = None
        self.suppressed = 0
        """Alerts not sent because one went out less than ``min_interval`` ago."""

    def alert(self, title: str, body: str) -> str:
        """Ring (and notify) unless one went out recently; returns the bytes written ("" if none)."""
        if not self.settings.enabled or (not self.settings.bell and self.kind is None):
            return ""
        now = self._clock()
        if self._last is not None and now - self._last < self.settings.min_interval:
            self.suppressed += 1
            return ""
        self._last = now
        out = BEL if self.settings.bell else ""
        if self.kind is not None:
            out += notification(self.kind, title, body, tmux=self.tmux)
        self._write(out)
        return out

    def changes(self, changes: Sequence[Alert], *, viewing: str | None = None) -> str:
        """Alert for the first change worth it outside the session on screen (one alert per batch)."""
        for change in changes:
            text = alert_text(change)
            if text is None or (viewing is not None and session_of(change) == viewing):
                continue
            return self.alert(*text)
        return ""


_DESKTOP: dict[str, DesktopSetting] = {"auto": "auto", "osc9": "osc9", "osc777": "osc777", "off": "off"}


def _flag(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def load_alert_settings(env: Mapping[str, str] | None = None) -> AlertSettings:
    """Settings from ``[alerts]`` in ``config.toml``, then the environment; bad values keep the default."""
    env = os.environ if env is None else env
    settings = AlertSettings()
    try:
        with (paths.config_dir() / "config.toml").open("rb") as fh:
            table = tomllib.load(fh).get("alerts", {})
    except (OSError, tomllib.TOMLDecodeError):
        table = {}
    if isinstance(table, dict):
        if isinstance(table.get("bell"), bool):
            settings = replace(settings, bell=table["bell"])
        desktop_value = table.get("desktop")
        if isinstance(desktop_value, str) and desktop_value in _DESKTOP:
            settings = replace(settings, desktop=_DESKTOP[desktop_value])
        if isinstance(table.get("in_tmux"), bool):
            settings = replace(settings, in_tmux=table["in_tmux"])
        if isinstance(table.get("min_interval"), int | float):
            settings = replace(settings, min_interval=max(float(table["min_interval"]), 1.0))
    if "PRELOOP_ALERT_BELL" in env:
        settings = replace(settings, bell=_flag(env["PRELOOP_ALERT_BELL"]))
    desktop = _DESKTOP.get(env.get("PRELOOP_ALERT_DESKTOP", "").strip().lower())
    if desktop is not None:
        settings = replace(settings, desktop=desktop)
    if "PRELOOP_ALERT_IN_TMUX" in env:
        settings = replace(settings, in_tmux=_flag(env["PRELOOP_ALERT_IN_TMUX"]))
    with contextlib.suppress(KeyError, ValueError):
        settings = replace(settings, min_interval=max(float(env["PRELOOP_ALERT_INTERVAL"]), 1.0))
    if env.get("PRELOOP_ALERTS", "").strip().lower() in ("off", "0", "false", "no"):
        settings = replace(settings, enabled=False)
    return settings
