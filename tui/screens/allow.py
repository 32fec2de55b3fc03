""" "Allow calls like this for …": make a time-boxed allow rule from an approval's card or the inbox.

The dialog names the call it starts from (tool, risk, session, the first line of the call) and asks what
the rule covers, for how long and what it does; it offers only what the server can hold
(``Capabilities.rules``):

* **Covers**: this tool in this session, this tool for every session of the agent, or the tool for every
  agent (our server); the agent or the whole account, every tool (Preloop's approval bypasses, which it
  says). With argument patterns (our server) an **Only calls matching** box holds a shell-style pattern,
  suggested from the call (``pytest *`` for ``pytest -q tests/``); under it a line says whether the call
  on screen matches, so the operator sees what the pattern means before it decides anything.
* **For**: required, ``30m`` by default, at most the server's maximum (there is no forever; ``0m``, ``9h``
  or a duration without a unit is refused in a line under it, and nothing is made).
* **Does**: ``allow`` (decides for you) or ``mute`` (alerts off, still asks).

Opening it is a decision-class key (``A``: pressed alone, ``tui.keypace``; not within half a second of
its screen appearing, ``tui.screens.decide.Decider.too_soon``), and the dialog itself, like every dialog
that decides something, ignores Enter for half a second after it opens and an Enter ending typing begun
before it could be read (``tui.typeahead``). A rule that would allow danger-risk calls (made from a
danger-risk call, or any ``allow`` bypass on Preloop, which approves every call in its scope) asks a
second time, naming that (:class:`tui.screens.confirm.ConfirmScreen`); only a yes there makes it.

It dismisses with the :class:`client.rules.RuleSpec` to make (the app sends it and says what came of it)
or None: nothing made. The call it started from is not decided by it: it still waits for ``a`` / ``d``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, RadioButton, RadioSet, Static

from client.backends.base import RuleSupport
from client.errors import UsageError
from client.models import Approval, RuleMode, RuleScope, RuleSpec
from client.rules import call_subject, check_pattern, is_danger, pattern_matches, rule_minutes
from client.textsafe import safe_line
from tui.keypace import pace_of
from tui.screens.confirm import ConfirmScreen
from tui.typeahead import Monotonic, TypeAheadGuard
from widgets.approvals_panel import call_title

__all__ = ["AllowScreen", "suggest_pattern"]

DEFAULT_DURATION = "30m"


def suggest_pattern(approval: Approval) -> str:
    """A pattern for "calls like this one": a command's first word and ``*`` (``pytest *``), a file
    tool's path as it is, else nothing (every call of the tool)."""
    subject = call_subject(approval.tool_name, approval.tool_args).strip()
    if not subject or subject.startswith("{"):
        return ""
    first = subject.split()[0]
    escaped = "".join(f"\\{ch}" if ch in "*?[]\\" else ch for ch in first)
    return escaped if first == subject else f"{escaped} *"


class AllowScreen(ModalScreen[RuleSpec | None]):
    """See the module docstring. ``rules`` is what the server can hold."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="allow.cancel", tooltip="Make no rule")
    ]

    DEFAULT_CSS = """
    AllowScreen { align: center middle; }
    AllowScreen > Vertical {
        width: 84; max-width: 98%; height: auto; max-height: 100%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    AllowScreen .label { color: $text-muted; margin-top: 1; }
    AllowScreen RadioSet { border: none; padding: 0; background: $surface; width: 100%; }
    AllowScreen #mode { layout: horizontal; width: 1fr; }
    AllowScreen #mode RadioButton { margin-right: 2; }
    AllowScreen Input { width: 40; background: $boost; }
    AllowScreen #does-row { height: 1; margin-top: 1; }
    AllowScreen #does-row .label { margin-top: 0; width: 6; }
    AllowScreen #pattern-says, AllowScreen #duration-says { color: $text-muted; }
    AllowScreen #too-soon { display: none; color: $error; }
    AllowScreen #too-soon.-shown { display: block; }
    AllowScreen #for-row { height: 1; margin-top: 1; }
    AllowScreen #for-row .label { margin-top: 0; width: 6; }
    AllowScreen #duration { width: 12; }
    AllowScreen #duration-says { padding-left: 2; }
    AllowScreen #buttons { height: 1; margin-top: 1; align-horizontal: right; }
    AllowScreen Button { margin-left: 2; }
    """

    def __init__(
        self,
        approval: Approval,
        session: str,
        rules: RuleSupport,
        *,
        clock: Monotonic | None = None,
    ) -> None:
        super().__init__()
        self.approval = approval
        self.session = session
        self.rules = rules
        self.guard = TypeAheadGuard(clock)
        self._clock = clock
        self._scopes: list[tuple[RuleScope, str]] = self._scope_choices()

    # ------------------------------------------------------------------ what can be chosen

    def _scope_choices(self) -> list[tuple[RuleScope, str]]:
        approval, rules = self.approval, self.rules
        tool = safe_line(approval.tool_name or "tool", 30)
        agent = safe_line(
            approval.managed_agent_name or (approval.agent.name if approval.agent else "") or "", 30
        )
        out: list[tuple[RuleScope, str]] = []
        if "session" in rules.scopes and approval.runtime_session_id:
            out.append(("session", f"{tool} in this session"))
        if "agent" in rules.scopes and approval.managed_agent_id:
            what = (
                f"{tool}, every session of agent {agent or '?'}" if rules.tools else f"agent {agent or '?'}"
            )
            out.append(("agent", what if rules.tools else f"{what}: every tool, every argument"))
        if "account" in rules.scopes:
            out.append(
                ("account", f"{tool}, every agent" if rules.tools else "the whole account: every agent")
            )
        return out

    def compose(self) -> ComposeResult:
        with Vertical():
            question = Text("Allow calls like this for a while?\n", style="bold")
            question.append_text(call_title(self.approval, self.session))
            yield Static(question, id="question")
            yield Static("Covers", classes="label")
            with RadioSet(id="scope"):
                for i, (_, label) in enumerate(self._scopes):
                    yield RadioButton(label, value=i == 0)
            if self.rules.patterns:
                yield Static(
                    "Only calls matching (a pattern over the command; empty: every call)", classes="label"
                )
                yield Input(suggest_pattern(self.approval), compact=True, max_length=200, id="pattern")
                yield Static("", id="pattern-says")
            else:
                yield Static(Text(f"{self.rules.name}: {self.rules.can}.", style="dim"), id="pattern-says")
            with Horizontal(id="for-row"):
                yield Static("For", classes="label")
                yield Input(DEFAULT_DURATION, compact=True, max_length=12, id="duration")
                yield Static(
                    f"required: 1m to {self.rules.max_minutes // 60}h, there is no forever",
                    id="duration-says",
                )
            with Horizontal(id="does-row"):
                yield Static("Does", classes="label")
                with RadioSet(id="mode"):
                    yield RadioButton("allow: decides for you", value=True)
                    yield RadioButton("mute: no alerts, still asks")
            yield Static("", id="too-soon")
            with Horizontal(id="buttons"):
                yield Button("Cancel (Esc)", id="cancel", compact=True)
                yield Button("Make rule (Enter)", id="make", variant="warning", compact=True)

    def on_mount(self) -> None:
        self.guard.arm()
        self.query_one("#duration", Input).focus()
        self.watch(self.app, "app_focus", self._app_focus_changed, init=False)
        self._pattern_says()

    def _app_focus_changed(self, focused: bool) -> None:
        if focused:
            self.guard.arm()

    # ------------------------------------------------------------------ what it says as it is typed

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.input.id == "pattern":
            self._pattern_says()

    def _pattern_says(self) -> None:
        if not self.rules.patterns:
            return
        pattern = self.query_one("#pattern", Input).value
        says = self.query_one("#pattern-says", Static)
        if not pattern.strip():
            says.update(Text(f"every {safe_line(self.approval.tool_name or 'tool', 30)} call", style="dim"))
            return
        try:
            check_pattern(pattern)
        except UsageError as exc:
            says.update(Text(f"✗ {exc.hint}", style="bold red"))
            return
        subject = call_subject(self.approval.tool_name, self.approval.tool_args)
        if pattern_matches(pattern, subject):
            says.update(Text("✓ matches this call (* never reaches past ; & | ` $ < >)", style="green"))
        else:
            says.update(Text("✗ does not match this call: it would still ask", style="bold yellow"))

    # ------------------------------------------------------------------ making it

    def _spec(self) -> RuleSpec:
        """The rule as the dialog now says it, or a UsageError naming what is wrong."""
        scope_set = self.query_one("#scope", RadioSet)
        index = scope_set.pressed_index if scope_set.pressed_index >= 0 else 0
        if not self._scopes:
            raise UsageError("this call has no session or agent a rule could cover")
        scope = self._scopes[index][0]
        minutes = rule_minutes(self.query_one("#duration", Input).value, self.rules.max_minutes)
        pattern: str | None = None
        if self.rules.patterns:
            pattern = self.query_one("#pattern", Input).value.strip() or None
            if pattern is not None:
                check_pattern(pattern)
        mode: RuleMode = "allow" if self.query_one("#mode", RadioSet).pressed_index != 1 else "mute"
        return RuleSpec(
            mode=mode,
            minutes=minutes,
            scope=scope,
            session_id=self.approval.runtime_session_id if scope == "session" else None,
            agent_id=self.approval.managed_agent_id if scope == "agent" else None,
            tool_name=self.approval.tool_name if self.rules.tools else None,
            pattern=pattern,
        )

    def _say(self, line: str) -> None:
        said = self.query_one("#too-soon", Static)
        said.update(Text(line))
        said.add_class("-shown")

    def _make(self) -> None:
        pace = pace_of(self.app)
        if not self.guard.ready(pace.run_began() if pace is not None else None):
            self._say(
                "Press Enter again to make the rule: this was typed as the dialog opened. Read it first."
            )
            return
        try:
            spec = self._spec()
        except UsageError as exc:
            self._say(f"No rule made: {exc.hint}.")
            return
        if spec.mode == "allow" and (is_danger(self.approval.risk_level) or not self.rules.risk_aware):
            self._confirm_danger(spec)
            return
        self.dismiss(spec)

    def _confirm_danger(self, spec: RuleSpec) -> None:
        """The second confirmation: the rule will approve danger-risk calls without asking."""
        if self.rules.risk_aware:
            why = "This call is danger-risk: a rule covering it approves such calls without asking anyone."
        else:
            why = (
                f"{self.rules.name} approve every call in their scope, danger-risk ones too, without asking."
            )

        def _answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(replace(spec, danger=True))
            else:
                self._say("No rule made. Change it, or Escape to leave.")

        self.app.push_screen(
            ConfirmScreen(
                "Also allow danger-risk calls without asking?",
                why,
                named=call_title(self.approval, self.session),
                yes="Allow them too",
                no="Go back",
                clock=self._clock,
            ),
            _answered,
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._make()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "make":
            self._make()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        """Make no rule."""
        self.dismiss(None)
