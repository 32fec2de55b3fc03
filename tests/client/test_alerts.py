"""Alerts: the exact escape sequences written, the rate limit, tmux, settings, and hostile text."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.alerts import Alerter, AlertSettings, desktop_kind, load_alert_settings, notification, sanitize
from client.inbox import ApprovalAdded, ApprovalGone, NoteFailed
from client.models import Approval, Note


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(settings: AlertSettings | None = None, **env: str) -> tuple[Alerter, list[str], Clock]:
    written: list[str] = []
    clock = Clock()
    alerter = Alerter(settings or AlertSettings(), written.append, env=env, clock=clock)
    return alerter, written, clock


def test_osc9_and_osc777_sequences_are_exact() -> None:
    assert (
        notification("osc9", "Approval needed", "Bash: git push")
        == "\x1b]9;Approval needed: Bash: git push\a"
    )
    assert notification("osc777", "Approval needed", "Bash: git push") == (
        "\x1b]777;notify;Approval needed;Bash: git push\a"
    )
    # inside tmux: DCS passthrough with every inner ESC doubled
    assert notification("osc9", "T", "b", tmux=True) == "\x1bPtmux;\x1b\x1b]9;T: b\a\x1b\\"


def test_terminal_detection() -> None:
    assert desktop_kind({"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert desktop_kind({"TERM": "xterm-kitty"}) == "osc9"
    assert desktop_kind({"VTE_VERSION": "7600", "TERM": "xterm-256color"}) == "osc777"
    assert desktop_kind({"TERM": "xterm-256color"}) is None  # unknown: bell only


def test_hostile_text_cannot_drive_the_terminal() -> None:
    hostile = "rm -rf /\x1b]52;c;ZXZpbA==\a\x1b[2J\x07\x9b31m\u202eevil;more\nline\r\x00"
    clean = sanitize(hostile)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in clean)
    assert "\u202e" not in clean and ";" not in clean
    seq = notification("osc777", "Approval: " + hostile, hostile)
    body = seq[len("\x1b]777;notify;") : -1]
    assert "\x1b" not in body and "\a" not in body  # the only ESC and BEL are our own frame
    assert body.count(";") == 1  # the one separator between title and body
    assert len(sanitize("x" * 1000)) == 160


def test_one_alert_per_interval_then_again() -> None:
    alerter, written, clock = make(AlertSettings(min_interval=5.0), TERM_PROGRAM="WezTerm")
    assert alerter.alert("Approval needed", "Bash") == "\a\x1b]9;Approval needed: Bash\a"
    clock.now += 1
    assert alerter.alert("Approval needed", "again") == ""
    clock.now += 3.9
    assert alerter.alert("Approval needed", "again") == ""
    assert alerter.suppressed == 2
    clock.now += 0.2  # 5.1 s after the first
    assert alerter.alert("Note expired", "x") == "\a\x1b]9;Note expired: x\a"
    assert written == ["\a\x1b]9;Approval needed: Bash\a", "\a\x1b]9;Note expired: x\a"]


def test_off_in_tmux_unless_asked() -> None:
    alerter, written, _ = make(TMUX="/tmp/tmux-0/default,1,0", TERM_PROGRAM="iTerm.app")
    assert alerter.alert("t", "b") == "" and written == []
    asked, written, _ = make(AlertSettings(in_tmux=True), TMUX="/tmp/x,1,0", TERM_PROGRAM="iTerm.app")
    assert asked.alert("t", "b") == "\a\x1bPtmux;\x1b\x1b]9;t: b\a\x1b\\"


def test_bell_only_and_desktop_only_and_off() -> None:
    bell_only, _, _ = make(AlertSettings(desktop="off"), TERM_PROGRAM="iTerm.app")
    assert bell_only.alert("t", "b") == "\a"
    desktop_only, _, _ = make(AlertSettings(bell=False, desktop="osc777"))
    assert desktop_only.alert("t", "b") == "\x1b]777;notify;t;b\a"
    off, written, _ = make(AlertSettings(enabled=False))
    assert off.alert("t", "b") == "" and written == []


def test_changes_alert_outside_the_session_on_screen_only() -> None:
    alerter, written, clock = make(AlertSettings(desktop="osc9"))
    approval = Approval(id="a1", tool_name="Bash", summary="Allow Bash?", runtime_session_id="s-watched")
    note = Note(note_id="n1", state="undeliverable", text="too late", runtime_session_id="s-other")
    assert alerter.changes([ApprovalAdded(approval)], viewing="s-watched") == ""
    assert alerter.changes([ApprovalGone(approval, elsewhere=True)]) == ""
    out = alerter.changes([ApprovalAdded(approval), NoteFailed(note)], viewing="s-watched")
    assert out.startswith("\a\x1b]9;Note undeliverable: too late")
    clock.now += 1
    assert alerter.changes([ApprovalAdded(approval)]) == ""  # rate-limited
    assert len(written) == 1


def test_settings_from_file_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRELOOP_CONFIG_DIR", str(tmp_path))
    (tmp_path / "config.toml").write_text(
        '[alerts]\nbell = false\ndesktop = "osc777"\nin_tmux = true\nmin_interval = 12\n'
    )
    assert load_alert_settings({}) == AlertSettings(
        bell=False, desktop="osc777", in_tmux=True, min_interval=12.0
    )
    env = {"PRELOOP_ALERT_BELL": "1", "PRELOOP_ALERT_DESKTOP": "off", "PRELOOP_ALERT_INTERVAL": "0.1"}
    got = load_alert_settings(env)
    assert got.bell and got.desktop == "off" and got.min_interval == 1.0  # never more often than 1 s
    assert not load_alert_settings({"PRELOOP_ALERTS": "off"}).enabled
    (tmp_path / "config.toml").write_text("[alerts\n")  # broken file: defaults, no crash
    assert load_alert_settings({}) == AlertSettings()
