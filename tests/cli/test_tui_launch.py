"""On a terminal, ``preloop`` and ``preloop sessions attach`` open the full-screen app (run in a real pty)."""

from __future__ import annotations

import os
import pty
import select
import signal
import time

from tests.cli.helpers import PRELOOP, with_sessions


def _run_in_pty(argv: list[str], expect: bytes, *keys: bytes | tuple[bytes, bytes]) -> tuple[int, bytes]:
    """Start the console script on a pseudo-terminal, wait for ``expect`` on screen, type ``keys``.

    Each item of ``keys`` is written after a short pause, so an Escape is not read as Alt+<next key>; a
    ``(key, shows)`` item waits instead until the app's output after the key shows ``shows`` (the key was
    read and acted on, however slow the machine). A child still running at the end is killed, so a test
    fails instead of hanging.
    """
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ.update({"TERM": "xterm-256color", "COLUMNS": "110", "LINES": "30"})
        os.execv(PRELOOP, [PRELOOP, *argv])
    screen = b""

    def pump(seconds: float, until: bytes | None = None, since: int = 0) -> bool:
        nonlocal screen
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return False
            if not chunk:
                return False
            screen += chunk
            if until is not None and until in screen[since:]:
                return True
        return until is None

    try:
        assert pump(20, expect), screen[-2000:]
        for item in keys:
            key, shows = item if isinstance(item, tuple) else (item, None)
            mark = len(screen)
            os.write(fd, key)
            if shows is None:
                pump(0.5)
            else:
                assert pump(20, shows, mark), screen[mark:][-2000:]
        pump(10)
    finally:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), screen


def test_attach_on_a_terminal_opens_the_app_and_q_detaches(live_server) -> None:
    ids, _ = with_sessions(
        live_server.url, live_server.token, [{"agent_name": "a", "title": "Visible title"}]
    )
    # The note box has the focus on attach (typing never fires a key binding): Escape leaves it, q detaches.
    argv = ["sessions", "attach", ids[0][:8], "--since", "5m"]
    # Escape out of the box shows Escape = Sessions in the footer: q is then a key, not Alt+Q with it.
    code, screen = _run_in_pty(argv, b"Visible title", (b"\x1b", b"Sessions"), b"q")
    assert code == 0
    assert b"Detached from " + ids[0][:8].encode() in screen
    # --since does not limit the app (it shows the newest events): said, not silently ignored.
    assert (
        b"the full-screen app shows the newest 5,000 events; --since applies to --plain and --json" in screen
    )


def test_no_command_opens_the_sessions_screen(live_server) -> None:
    with_sessions(live_server.url, live_server.token, [{"agent_name": "lister", "title": "Listed here"}])
    code, _ = _run_in_pty([], b"Listed here", b"q")
    assert code == 0


def test_plain_on_a_terminal_is_coloured_and_quits_on_request(live_server) -> None:
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a", "title": "Colour check"}])
    argv = ["sessions", "attach", ids[0], "--plain", "--since", "1h"]
    code, screen = _run_in_pty(argv, b"started: Colour check", b"/quit\n")
    assert code == 0
    assert b"\x1b[2msession   \x1b[0m started: Colour check" in screen  # dim label, only on a terminal
    assert b"-- detached" in screen


def test_attach_to_an_unknown_full_id_is_refused_before_the_screen_opens(live_server) -> None:
    unknown = "0b7e0c5e-1d2a-4c3b-9f00-123456789abc"
    code, screen = _run_in_pty(["sessions", "attach", unknown, "--url", live_server.url], b"not found")
    assert code == 1
    assert b"Attaching to" not in screen


def test_sessions_screen_with_the_server_down_opens_with_a_banner_and_quits(live_server) -> None:
    url = live_server.url
    live_server.stop()
    code, screen = _run_in_pty(["--url", url], b"unreachable", b"q")
    assert code == 0
    assert b"Retry" in screen or b"retry" in screen


def test_ctrl_c_in_the_note_box_quits_keeping_the_draft(live_server) -> None:
    """The real key on a real terminal: Ctrl+C (byte 0x03, read as a key, not a signal) with nothing
    selected quits from the note box, the terminal restored, the draft kept, the session left running."""
    from client.drafts import DraftStore
    from client.paths import state_dir

    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a", "title": "Ctrl C title"}])
    code, screen = _run_in_pty(
        ["sessions", "attach", ids[0]], b"Ctrl C title", (b"half a note", b"half a note"), b"\x03"
    )
    assert code == 130  # Ctrl+C, as the README says
    assert b"\x1b[?1049l" in screen  # back on the shell's own screen
    assert b"Detached from " + ids[0][:8].encode() + b"; the session keeps running." in screen
    assert DraftStore(state_dir() / "drafts").get(ids[0]) == "half a note"
