"""Command palette entries (Ctrl+P) for the main actions of whichever screen is showing.

Each entry is an action of the current screen (or the app); an action its screen's ``check_action``
currently refuses (approve with nothing pending, withdraw in read-only mode) is not offered, so the palette
and the key bindings can never disagree.
"""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual.command import Hit, Hits, Provider

from client.present import ACTIVE_WINDOW_MINUTES

COMMANDS: list[tuple[str, str, str]] = [
    ("Attach to the highlighted session", "attach", "Open the live view of the session under the cursor"),
    ("Filter sessions", "filter", "Show only sessions whose id, agent or title contains some text"),
    (
        "Toggle active-only sessions",
        "toggle_active",
        f"Only sessions active in the last {ACTIVE_WINDOW_MINUTES} minutes",
    ),
    ("Refresh sessions", "refresh", "Ask the server for the session list now"),
    ("Write a note", "focus_composer", "Put the cursor in the note composer"),
    ("Approve the highlighted approval", "approve", "Let the agent's tool call go ahead"),
    ("Decline the highlighted approval", "decline", "Refuse the tool call, with an optional comment"),
    ("Expand approval arguments", "expand_args", "Show or hide all arguments of the tool call"),
    ("Withdraw the highlighted note", "withdraw", "Cancel a note the agent has not picked up yet"),
    ("Toggle commentary", "toggle_commentary", "Collapse or show the agent's narration"),
    ("Back to sessions", "back", "Leave this session (it keeps running) and show the list"),
    ("Detach", "detach", "Leave this session; it keeps running"),
]


class PreloopCommands(Provider):
    """Offers the screen's enabled actions, plus help."""

    def _available(self) -> list[tuple[str, str, str]]:
        screen = self.screen
        available: list[tuple[str, str, str]] = []
        for name, action, help_text in COMMANDS:
            if not hasattr(screen, f"action_{action}"):
                continue
            if screen.check_action(action, ()) is False:
                continue
            available.append((name, action, help_text))
        available.append(("Help: all keys", "app.help", "Show every key binding"))
        return available

    async def _run(self, action: str) -> None:
        if action.startswith("app."):
            await self.app.run_action(action)
        else:
            await self.screen.run_action(action)

    async def discover(self) -> Hits:
        """Everything that can be done right now, before anything is typed, above Textual's own entries.

        The palette sorts by score and every ``DiscoveryHit`` scores 0, so the generic entries (Keys,
        Maximize, Screenshot, Theme...) would come first whenever their provider answered first; a small
        descending score keeps this screen's actions on top and in the order of ``COMMANDS``.
        """
        available = self._available()
        for index, (name, action, help_text) in enumerate(available):
            score = 1.0 - index / (len(available) + 1)
            yield Hit(score, Text(name), partial(self._run, action), text=name, help=help_text)

    async def search(self, query: str) -> Hits:
        """Fuzzy-match the typed text against the command names."""
        matcher = self.matcher(query)
        for name, action, help_text in self._available():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), partial(self._run, action), help=help_text)
