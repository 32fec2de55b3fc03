"""Typing is never a command: the one home for "is this key part of a burst of typing".

An operator who thinks the note box has the focus types a sentence; if the focus is elsewhere, every
letter of it is a key command (``d`` declines, ``y`` copies, ``e`` exports, ``s`` switches, ``o`` opens).
The app therefore passes every key through one :class:`KeyPace` (``PreloopApp.on_event``) before Textual
dispatches it, on the app's injectable monotonic clock (``tui.typeahead``):

* **A burst is text.** Printable keys at most :data:`BURST_GAP` apart are typing. Where a text box (the
  note box, a find line, a dialog's field) has the focus they are its text, as always. Where none has, the
  burst is handed to the app (``typed``), which puts it into the note box of the session on screen (the
  focus goes there, one line says "Typing goes to the note box — Enter sends"), or into that session's
  draft when no note box is on screen (the inbox); dialogs over that screen close first, deciding nothing.
  Where there is no session at all (the sessions list) it is not taken, and a notice says so.
* **A letter command runs only when it stands alone.** A printable key bound to a command (decide, open,
  export, copy, switch, detach, withdraw, help, the inbox...) is held: it runs :data:`QUIET_SECONDS` after
  it was pressed if no printable key came meanwhile, and becomes the first letter of a burst if one did.
  It never runs when a printable key came just before it (that makes it part of a burst at once).
  Navigation keys (:data:`INSTANT_ACTIONS`: moving in a list or the timeline, jumping to a problem, the
  find line, the note box itself) run at once; their letters still count as the start of a burst, except
  that a burst of nothing but moving keys (``j`` held down to scroll) goes on moving. Keys
  that are not printable (arrows, Escape, F-keys, Ctrl+...) are never held; one arriving while a letter
  is held lets the letter run first, since no printable key followed it.
* **The Enter that ends a burst sends nothing.** While a burst that reached no text box lasts (keys at
  most :data:`BURST_GAP` apart), Enter and Ctrl+S are swallowed and the app says so (``enter_kept``).
  Boxes that act on Enter (the note box, the decline comment) ask :meth:`KeyPace.run_began` when the
  typing their Enter ends began, and refuse typing that began before they could be read.
* **A screen opened by a key of a burst closes.** A held command runs when its window is over on the
  clock. When the terminal stamps keys (the system clock), a key pressed inside the window can still be
  read after the command ran (a busy event loop). Such a key turns the command's letter into text after
  all: screens and dialogs opened above the screen it was pressed on are dismissed (deciding nothing), and
  the letters go to the note box.

Decisions read :meth:`KeyPace.pressed_at`: a held key runs its command a window later, and a guard
(``tui.typeahead``) measures the half second after a screen appeared up to when the key was *pressed*.

How :data:`BURST_GAP` was chosen: in the trial the keys that declined a call came ~8 a second (125 ms
apart), and the issue's sequences go up to 250 ms a key; all must be bursts, so the gap is above 250 ms.
Large keystroke studies (Dhakal et al., "Observations on Typing from 136 Million Keystrokes", CHI 2018)
put an average typist's mean interval between keys near 240 ms; 300 ms takes most of an average
typist's keys as typing while keeping the wait of a deliberate command key (the same 300 ms) short of
what reads as lag for a key that opens a dialog. It is a threshold, so it has a limit: a typist slower
than ~3 keys a second can leave a command letter standing alone. Decisions therefore have more guards
than this one: a decision dialog ignores its keys for half a second, and an answer typed into it before
it could be read (a comment begun as it opened, stray letters before ``y``) is not taken the first time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual import events
from textual.app import App
from textual.binding import ActiveBinding
from textual.screen import Screen
from textual.widgets import Input, TextArea

from tui.typeahead import Monotonic, default_clock

__all__ = [
    "BURST_GAP",
    "INSTANT_ACTIONS",
    "QUIET_SECONDS",
    "SEND_KEYS",
    "KeyPace",
    "pace_of",
]

BURST_GAP = 0.3
"""Printable keys at most this many seconds apart are typing (see the module docstring for the choice)."""

QUIET_SECONDS = BURST_GAP
"""A letter command runs this long after its key, when no printable key came meanwhile."""

POLL_SECONDS = 0.02
"""How often a held key looks at a clock that is not the system's (a test's), in real seconds."""

SEND_KEYS = frozenset({"enter", "ctrl+s"})
"""Keys that send or confirm: swallowed while a burst that reached no text box lasts."""

INSTANT_ACTIONS = frozenset(
    {
        "cursor_up",
        "cursor_down",
        "cursor_first",
        "page_up",
        "page_down",
        "scroll_top",
        "scroll_bottom",
        "follow",
        "next_problem",
        "previous_problem",
        "find",
        "filter",
        "focus_composer",
    }
)
"""Actions whose letter runs at once: they move, or put the focus in a box that takes the rest of the
typing (``/`` finds, ``n`` writes a note). Every other letter command waits to stand alone."""


@dataclass(frozen=True, slots=True)
class _Held:
    """A letter command waiting for its quiet window."""

    key: str
    char: str
    at: float
    screen: Screen[Any]


@dataclass(frozen=True, slots=True)
class _Ran:
    """The last held letter that ran its command: what it may have opened lies above ``screen``."""

    char: str
    at: float
    screen: Screen[Any]


def _action_name(active: ActiveBinding) -> str:
    """``app.switch_session`` -> ``switch_session``; ``find(True)`` -> ``find``."""
    return active.binding.action.split("(", 1)[0].rsplit(".", 1)[-1]


class KeyPace:
    """Every key of the app passes :meth:`take` first (see the module docstring). ``typed(text)`` is told
    the letters of a burst that reached no text box; ``enter_kept()`` that an Enter ending one was
    swallowed."""

    def __init__(
        self,
        app: App[Any],
        *,
        clock: Monotonic | None = None,
        typed: Callable[[str], None],
        enter_kept: Callable[[], None],
    ) -> None:
        self.app = app
        self._clock: Monotonic = clock or default_clock()
        self._stamped = self._clock is time.monotonic
        """On the system clock a key's time is when the terminal driver read it (``Key.time``), not when
        the app got round to it: a busy loop does not squeeze keys typed apart into a burst, or the
        reverse."""
        self._typed = typed
        self._enter_kept = enter_kept
        self._last_key: float | None = None
        self._last_printable: float | None = None
        self._run_began: float | None = None
        self._loose: list[str] = []
        """Letters of the current burst that went to no text box (navigation keys, unbound letters)."""
        self._moving = False
        """Every letter of the current burst so far moved (``j`` held down to scroll): more moving keys
        keep moving; any other letter makes the burst text."""
        self._redirecting = False
        """The current run of keys became text for the note box: its Enter sends nothing."""
        self._held: _Held | None = None
        self._ran: _Ran | None = None
        self._pressing: float | None = None

    # ------------------------------------------------------------------ what screens ask

    def now(self) -> float:
        """The time on the pace's clock."""
        return self._clock()

    def pressed_at(self) -> float | None:
        """When the key whose command runs now was pressed (None outside a held key's command: a click,
        the palette)."""
        return self._pressing

    def run_began(self) -> float:
        """When the typing going on now began: the first key of the current run (keys at most
        :data:`BURST_GAP` apart, any key), or now when no key came that recently (a click, the palette). A
        box that acts on Enter refuses typing that began before the operator could read it."""
        now = self._clock()
        if self._run_began is None or self._last_key is None or now - self._last_key > BURST_GAP:
            return now
        return self._run_began

    @property
    def holding(self) -> bool:
        """A letter command waits for its quiet window."""
        return self._held is not None

    # ------------------------------------------------------------------ every key

    async def take(self, event: events.Key) -> bool:
        """Look at a key before it is dispatched; True when this took it (held, or made text)."""
        now = self._time(event)
        held = self._held
        if held is not None and now - held.at > QUIET_SECONDS:
            await self._release(held)  # its window passed before this key came: it stood alone
            held = None
        in_run = self._last_key is not None and now - self._last_key <= BURST_GAP
        if not in_run:
            self._run_began, self._redirecting = now, False
        self._last_key = now
        if not event.is_printable:
            if held is not None:
                await self._release(held)  # no printable key came after it
            if event.key in SEND_KEYS and self._redirecting:
                self._enter_kept()
                return True
            return False
        return self._printable(event.character or "", event.key, now)

    def _printable(self, char: str, key: str, now: float) -> bool:
        burst = self._last_printable is not None and now - self._last_printable <= BURST_GAP
        self._last_printable = now
        if not burst:
            self._loose, self._moving = [], False
        if self._redirecting:
            if self._in_text():
                return False
            self._typed(char)  # the rest of a burst that went to a draft
            return True
        ran = self._ran
        if burst and ran is not None and now - ran.at <= BURST_GAP and self.app.screen is not ran.screen:
            self._make_text(char, now)  # what the letter opened (a box, maybe) is not where this goes
            return True
        if self._in_text():
            return False
        active = self._command(key)
        instant = active is not None and _action_name(active) in INSTANT_ACTIONS
        if burst and not (instant and self._moving):
            self._make_text(char, now)
            return True
        if active is not None and not instant:
            held = _Held(key, char, now, self.app.screen)
            self._held = held
            self.app.call_later(self._check, held)
            return True
        self._moving = instant and (self._moving or not self._loose)
        self._loose.append(char)
        return False

    def _make_text(self, char: str, now: float) -> None:
        """The key follows another closely: the burst so far, and this key, are text."""
        letters = list(self._loose)
        held, ran = self._held, self._ran
        if held is not None:
            self._held = None
            letters.append(held.char)
        elif ran is not None and now - ran.at <= BURST_GAP:
            self._close_opened(ran)  # its command ran before this key was read: undo what it opened
            letters.append(ran.char)
        self._ran = None
        self._loose, self._moving = [], False
        self._redirecting = True
        self._typed("".join([*letters, char]))

    # ------------------------------------------------------------------ held keys

    async def _check(self, held: _Held) -> None:
        """A held key's window: over (run its command), or look again a moment later."""
        if self._held is not held:
            return
        waited = self._clock() - held.at
        if waited > QUIET_SECONDS:
            await self._release(held)
            return
        delay = QUIET_SECONDS - waited + 0.001 if self._stamped else POLL_SECONDS
        self.app.set_timer(delay, partial(self._check, held))

    async def _release(self, held: _Held) -> None:
        """The key stood alone: run its command as Textual would have, on the screen it was pressed on
        (a key for a screen that is gone does nothing), with its state as it is now."""
        if self._held is held:
            self._held = None
        if self.app.screen is not held.screen:
            return
        active = self._command(held.key)
        if active is None:
            return
        self._ran = _Ran(held.char, held.at, held.screen)
        self._pressing = held.at
        try:
            await self.app.run_action(active.binding.action, active.node)
        finally:
            self._pressing = None

    def _close_opened(self, ran: _Ran) -> None:
        """Dismiss what the command of a letter that was typing after all opened above its screen."""
        app = self.app
        if ran.screen not in app.screen_stack:
            return
        for _ in range(len(app.screen_stack)):
            if app.screen is ran.screen:
                return
            app.screen.dismiss()

    # ------------------------------------------------------------------ helpers

    def _time(self, event: events.Key) -> float:
        return event.time if self._stamped else self._clock()

    def _in_text(self) -> bool:
        return isinstance(self.app.focused, TextArea | Input)

    def _command(self, key: str) -> ActiveBinding | None:
        """The command ``key`` runs on the screen now, if any (and enabled)."""
        active = self.app.screen.active_bindings.get(key)
        if active is None or not active.enabled:
            return None
        return active


def pace_of(app: App[Any]) -> KeyPace | None:
    """The app's key pace (None in an app without one, e.g. a widget test's)."""
    pace = getattr(app, "key_pace", None)
    return pace if isinstance(pace, KeyPace) else None
