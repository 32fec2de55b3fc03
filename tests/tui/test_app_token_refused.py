"""The app when the server stops accepting the token mid-shift (real local server, real streams).

The operator token is rotated server-side and the server restarted (every open stream drops); the app's
backend is made as ``preloop`` makes it, so it reads the token again from the local server's file, where
the test puts the new one (what ``preloop login`` in another terminal does for the keyring).
"""

from __future__ import annotations

import asyncio

from textual.notifications import SeverityLevel
from textual.widgets import Static

from client.backends import connect
from client.config import resolve_settings, token_reader
from client.status import Live, LoginNeeded
from server.embedded import write_local_server_file
from tests.conftest import LiveServer, until
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from tui.screens.inbox import feed_state
from widgets.banner import Banner
from widgets.composer import Composer
from widgets.notes_panel import NotesPanel
from widgets.timeline_view import TimelineView

SIZE = (110, 30)


class RecordingApp(PreloopApp):
    """The app, keeping every notice it gives (the toasts themselves expire)."""

    said: list[tuple[str, str]]

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        self.said = [*getattr(self, "said", []), (title, message)]
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)


async def test_a_revoked_token_is_said_once_keeps_the_screen_and_draft_and_resumes_after_a_new_one(
    live_server: LiveServer,
) -> None:
    reads: list[str | None] = []
    read_again = token_reader(resolve_settings())

    def source() -> str | None:
        reads.append(read_again())
        return reads[-1]

    backend = await connect(
        resolve_settings(),
        server_kind="local",
        backoff_initial=0.05,
        backoff_max=0.2,
        token_source=source,
    )
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="night-shift", title="Rotate the certificates")
        await agent.narrate(1, ["Looking at the certificates."])
        app = RecordingApp(backend, start_session_id=agent.session_id, close_backend=True)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            await until(pilot, lambda: isinstance(screen.status, Live), "the stream to go live")
            await until(pilot, lambda: isinstance(app.attention_status, Live), "the inbox feed to go live")
            composer = screen.query_one(Composer)
            await pilot.press(*"stop after this")
            assert composer.text == "stop after this"

            new = live_server.rotate_token()
            await asyncio.to_thread(live_server.stop)
            await asyncio.to_thread(live_server.start)
            await until(
                pilot, lambda: isinstance(screen.status, LoginNeeded), "the stream to wait for a token"
            )
            await until(pilot, lambda: isinstance(app.attention_status, LoginNeeded), "the inbox to wait too")
            await until(pilot, lambda: len(reads) >= 6, "several attempts of both feeds")
            await pilot.press(*" and summarise", "enter")  # typing goes on into the box while it waits
            error_line = screen.query_one("#send-error", Static)
            await until(pilot, lambda: "Not sent" in str(error_line.render()), "the refused note's line")
            assert "run `preloop login`" in str(error_line.render())

            refused = [message for title, message in app.said if title == "Token refused"]
            assert refused == [
                "the server refused the token (401): run `preloop login` in another terminal; everything "
                "here is kept and resumes by itself"
            ]  # one notice for two feeds and all their retries
            assert app.screen is screen and screen.unavailable is None
            assert screen.note_box.display and composer.display
            assert composer.text == "stop after this and summarise"
            assert "refused the token" in screen.query_one("#banner", Banner).message
            assert "token refused" in screen.header.connection_text().plain  # not "connecting" per retry

            await agent.narrate(2, ["Renewed while you were away."])
            write_local_server_file(live_server.url, new)  # `preloop login` in another terminal
            await until(pilot, lambda: isinstance(screen.status, Live), "the stream live again")
            view = screen.query_one(TimelineView)
            await until(
                pilot, lambda: any("Renewed while you were away" in line for line in view.lines_text), "text"
            )
            assert [title for title, _ in app.said].count("Token accepted") == 1
            assert screen.query_one("#banner", Banner).message == ""

            await pilot.press("enter")  # the same text, sent again
            notes = screen.query_one(NotesPanel)
            await until(pilot, lambda: [n.state for n in notes.notes.values()] == ["pending"], "the note")
            assert composer.text == "" and not error_line.has_class("-shown")
            sent = await backend.list_notes(session_id=agent.session_id)
            assert [n.text for n in sent.notes] == ["stop after this and summarise"]
            assert [title for title, _ in app.said].count("Token refused") == 1


async def test_a_session_opened_while_the_token_is_refused_is_not_unwatchable(
    live_server: LiveServer,
) -> None:
    """The session row itself is refused (401): not "cannot watch this session" (no box, no stream) but
    the same wait, the note box kept, and the session shown once a new token is there."""
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="night-shift")
        await agent.narrate(1, ["Looking at the certificates."])
        new = live_server.rotate_token()
        backend = await connect(
            resolve_settings(), server_kind="local", backoff_initial=0.05, backoff_max=0.2
        )
        app = RecordingApp(backend, start_session_id=agent.session_id, close_backend=True, attention=False)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: isinstance(app.screen, AttachScreen), "the attach screen")
            screen = app.screen
            assert isinstance(screen, AttachScreen)
            await until(
                pilot, lambda: isinstance(screen.status, LoginNeeded), "the stream to wait for a token"
            )
            banner = screen.query_one("#banner", Banner)
            await until(pilot, lambda: "refused the token" in banner.message, "the banner")
            assert screen.unavailable is None and screen.note_box.display
            await pilot.press(*"hello")
            assert screen.query_one(Composer).text == "hello"
            write_local_server_file(live_server.url, new)
            await until(pilot, lambda: isinstance(screen.status, Live), "the stream live")
            view = screen.query_one(TimelineView)
            await until(
                pilot, lambda: any("Looking at the certificates" in line for line in view.lines_text), "text"
            )
            assert [title for title, _ in app.said].count("Token refused") == 1


def test_the_inbox_says_the_token_is_refused_not_live() -> None:
    """Its feed is synced from before: without a state of its own it read "● live" while refused."""
    state = feed_state(LoginNeeded(3, 2.0, "the server refused the token (401): …"), synced=True)
    assert "token refused" in state.plain and "live" not in state.plain
