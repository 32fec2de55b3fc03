"""The banner every screen shows while something decides or silences on the operator's behalf.

Two things may hold at any time, and an operator must never be unaware of either: an allow rule (ours or
a Preloop approval bypass) that approves calls without asking or mutes their alerts, and a Preloop
account's kill switch that halts its agents. :func:`standing_lines` words them ("⚠ auto-allow: Bash
`pytest *` in 1a2b3c4d until 15:40 · 3 allowed", "✗ kill switch: tools, gateway halted by alice 14:02:
“runaway agent”"), at most :data:`MAX_LINES` lines with "+2 more rules" and the key that lists them.

:class:`StandingBanner` follows the app's ``standing`` (``tui.app.PreloopApp`` reads the backend's
``standing()`` on a timer and after every rule change), and ticks once a second so a rule that ended
goes away and "until" stays true; it is hidden while nothing holds. Every line is a ``rich.text.Text``
built from :mod:`client.rules` words, never markup (a rule's pattern or reason is operator text, a
kill switch's reason server text).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from rich.text import Text
from textual.widgets import Static

from client.models import AllowRule, Standing
from client.rules import banner_line
from client.textsafe import safe_line

__all__ = ["MAX_LINES", "StandingBanner", "standing_lines"]

MAX_LINES = 3
"""The banner's height at most (a kill switch, two rules, or "+N more")."""


def _halt_line(standing: Standing) -> Text | None:
    halt = standing.halt
    if halt is None or not halt.active:
        return None
    scopes = ", ".join(safe_line(s.scope, 12) for s in halt.scopes) or "everything"
    first = halt.scopes[0] if halt.scopes else None
    line = Text("✗ kill switch: ", style="bold")
    line.append(f"{scopes} halted")
    if first is not None and first.activated_by_username:
        line.append(f" by {safe_line(first.activated_by_username, 30)}")
    if first is not None and first.activated_at is not None:
        line.append(first.activated_at.astimezone().strftime(" %H:%M"))
    if first is not None and first.reason:
        line.append(f": “{safe_line(first.reason, 80)}”", style="italic")
    line.append(" · agents of the account are stopped", style="dim")
    return line


def _rule_line(rule: AllowRule, now: datetime) -> Text:
    icon = "⚠ " if rule.mode == "allow" else "⊘ "
    line = Text(icon, style="bold")
    head, _, rest = banner_line(rule, now).partition(": ")
    line.append(head + ": ", style="bold")
    line.append(rest)
    if rule.set_by:
        line.append(f" · set by {safe_line(rule.set_by, 30)}", style="dim")
    return line


def standing_lines(standing: Standing, now: datetime, *, keys: str = "R lists them") -> list[Text]:
    """What holds now, one line each (a kill switch first, then ``allow`` rules, then ``mute`` ones), at
    most :data:`MAX_LINES`; rules that ended are left out."""
    lines: list[Text] = []
    halt = _halt_line(standing)
    if halt is not None:
        lines.append(halt)
    rules = sorted(
        (r for r in standing.rules if r.active(now)), key=lambda r: (r.mode != "allow", r.expires_at)
    )
    room = MAX_LINES - len(lines)
    shown = rules if len(rules) <= room else rules[: room - 1]
    lines.extend(_rule_line(rule, now) for rule in shown)
    hidden = len(rules) - len(shown)
    if hidden:
        lines.append(Text(f"+{hidden} more rule{'s' if hidden != 1 else ''} ({keys})", style="bold"))
    return lines


class StandingBanner(Static):
    """Shown while an allow rule or a kill switch holds (see the module docstring)."""

    DEFAULT_CSS = """
    StandingBanner {
        height: auto; max-height: 3; padding: 0 1; display: none; background: $warning 40%;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    StandingBanner.-shown { display: block; }
    StandingBanner.-halted { background: $error 50%; }
    """

    def __init__(self, *, clock: Callable[[], datetime] | None = None, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._clock = clock
        self.standing = Standing()
        self.shown: list[str] = []
        """The lines on screen, as plain text (tests read them)."""

    def on_mount(self) -> None:
        if hasattr(self.app, "standing"):
            self.watch(self.app, "standing", self.show, init=True)
        self.set_interval(1.0, self._tick)

    def _now(self) -> datetime:
        clock = self._clock or getattr(self.app, "clock", None)
        return clock() if callable(clock) else datetime.now(UTC)

    def show(self, standing: Standing) -> None:
        """Draw ``standing`` (what the app last read)."""
        self.standing = standing
        self._draw()

    def _tick(self) -> None:
        self._draw()

    def _draw(self) -> None:
        lines = standing_lines(self.standing, self._now())
        plain = [line.plain for line in lines]
        if plain == self.shown:
            return
        self.shown = plain
        self.set_class(bool(lines), "-shown")
        self.set_class(self.standing.halt is not None and self.standing.halt.active, "-halted")
        self.update(Text("\n").join(lines))  # one line each, cut to the width with "…" (its CSS)
