"""The allow rules that hold, and ending them (``R`` from any screen; the banner names the key).

One line per rule, the soonest to end first: what it does (allow or mute), what it covers, until when,
how many calls it allowed and who set it (``client.rules`` words). ``x`` ends the highlighted rule now,
``X`` every rule (after a yes: it is the "panic off"); ending a rule only ever makes agents ask again,
so neither needs more. The screen reads the server's list when it opens and after every change, and
the app's banner follows (``PreloopApp.refresh_standing``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from client.backends.base import Backend
from client.errors import ClientError
from client.models import AllowRule
from client.present import rule_scope_words
from client.textsafe import safe_line
from tui.screens.confirm import ConfirmScreen
from tui.typeahead import Monotonic

__all__ = ["RulesScreen"]


class RulesScreen(ModalScreen[None]):
    """See the module docstring. ``changed`` is told after a rule ended (the app reads its banner again)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "revoke", "End rule", id="rules.revoke", tooltip="End the highlighted rule now"),
        Binding("X", "revoke_all", "End all", id="rules.revoke_all", tooltip="End every rule now"),
        Binding("escape,R", "close", "Close", id="rules.close", tooltip="Back to where you were"),
    ]

    DEFAULT_CSS = """
    RulesScreen { align: center middle; }
    RulesScreen > Vertical {
        width: 110; max-width: 98%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    RulesScreen DataTable { height: auto; max-height: 16; }
    RulesScreen #rules-said { color: $text-muted; }
    """

    def __init__(
        self,
        backend: Backend,
        *,
        clock: Callable[[], datetime],
        changed: Callable[[], None],
        monotonic: Monotonic | None = None,
    ) -> None:
        super().__init__()
        self.backend = backend
        self._clock = clock
        self._changed = changed
        self._monotonic = monotonic
        self.rules: list[AllowRule] = []

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Allow rules · x ends one · X ends all · Escape closes"
            yield Static("Reading the rules…", id="rules-said")
            yield DataTable(cursor_type="row", zebra_stripes=True, id="rules-table")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in (
            ("mode", "DOES"),
            ("covers", "COVERS"),
            ("until", "UNTIL"),
            ("allowed", "ALLOWED"),
            ("by", "SET BY"),
        ):
            table.add_column(label, key=key)
        table.focus()
        self.load()

    @work(exclusive=True, group="rules-load")
    async def load(self) -> None:
        """Read the rules that hold now."""
        try:
            rules = await self.backend.list_rules()
        except ClientError as exc:
            self._said(f"Could not read the rules: {exc.hint}")
            return
        self.show(rules)

    def show(self, rules: list[AllowRule]) -> None:
        """Draw ``rules`` (those that ended are left out)."""
        now = self._clock()
        self.rules = [r for r in rules if r.active(now)]
        table = self.query_one(DataTable)
        table.clear()
        for rule in self.rules:
            danger = " (danger-risk too)" if rule.danger and rule.mode == "allow" else ""
            table.add_row(
                Text(
                    "allow" if rule.mode == "allow" else "mute", style="bold" if rule.mode == "allow" else ""
                ),
                Text(rule_scope_words(rule) + danger),
                Text(rule.expires_at.astimezone().strftime("%H:%M")),
                Text(str(rule.allowed_count) if rule.mode == "allow" else "-"),
                Text(safe_line(rule.set_by or "-", 24)),
                key=rule.id,
            )
        count = len(self.rules)
        self._said(
            ("1 rule holds" if count == 1 else f"{count} rules hold")
            if count
            else "No allow rule holds: every call is asked about."
        )
        self.refresh_bindings()

    def _said(self, line: str) -> None:
        self.query_one("#rules-said", Static).update(Text(line))

    def _selected(self) -> AllowRule | None:
        table = self.query_one(DataTable)
        if not self.rules or table.cursor_row >= len(self.rules):
            return None
        return self.rules[table.cursor_row]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Ending a rule is offered while one holds."""
        if action in ("revoke", "revoke_all"):
            return bool(self.rules) or None
        return True

    def action_revoke(self) -> None:
        """End the highlighted rule now."""
        rule = self._selected()
        if rule is not None:
            self.end([rule.id])

    def action_revoke_all(self) -> None:
        """End every rule, after a yes."""

        def _answered(yes: bool | None) -> None:
            if yes:
                self.end(None)

        count = len(self.rules)
        self.app.push_screen(
            ConfirmScreen(
                f"End all {count} rule{'s' if count != 1 else ''} now?",
                "Every call they cover is asked about again.",
                yes="End all",
                no="Keep them",
                clock=self._monotonic,
            ),
            _answered,
        )

    @work(exclusive=True, group="rules-end")
    async def end(self, rule_ids: list[str] | None) -> None:
        """Ask the server to end these rules (None: all), then read the list again."""
        try:
            if rule_ids is None:
                ended = await self.backend.revoke_all_rules()
            else:
                ended = [await self.backend.revoke_rule(rule_id) for rule_id in rule_ids]
        except ClientError as exc:
            self.notify(exc.hint, title="Rule not ended", severity="error", markup=False)
            return
        words = ", ".join(rule_scope_words(r) for r in ended) or "nothing held"
        self.notify(f"Ended: {words}. Those calls are asked about again.", title="Rules ended", markup=False)
        self._changed()
        self.load()

    def action_close(self) -> None:
        """Back to where the operator was."""
        self.dismiss(None)
