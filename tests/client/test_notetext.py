"""One rule for a sendable note, shared by the CLI, the client library and the local server."""

from __future__ import annotations

import httpx
import pytest

from client.backends import connect
from client.config import Settings
from client.errors import UsageError
from client.notetext import NOTE_EMPTY, NOTE_MAX_CHARS, note_text_problem


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n", "\u3000"])
def test_whitespace_only_is_empty(text: str) -> None:
    assert note_text_problem(text) == NOTE_EMPTY


def test_nul_is_refused_with_a_reason() -> None:
    assert "NUL" in (note_text_problem("stop\x00now") or "")
    assert note_text_problem("x" * NOTE_MAX_CHARS) is None
    assert note_text_problem("  Run the linter too\n") is None


async def test_the_client_refuses_a_nul_note_before_sending_it() -> None:
    sent: list[object] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    async with await connect(
        Settings("http://127.0.0.1:9", "plo_x", server_kind="local"), transport=httpx.MockTransport(handler)
    ) as client:
        with pytest.raises(UsageError, match="NUL character"):
            await client.send_note("a\x00b", session_id="5f0c2f9e-0000-4000-8000-000000000000")
    assert sent == []


@pytest.mark.parametrize("kind", ["local", "preloop", "dendrux"])
async def test_every_backend_refuses_a_note_over_the_limit_before_sending_it(kind: str) -> None:
    """One limit, refused by the client on every kind of server (a Dendrux app would take more: its
    router's 32 KiB, which 4096 characters never exceed), so the CLI, a plain attach and the app agree."""
    sent: list[object] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    async with await connect(
        Settings("http://127.0.0.1:9", "plo_x", server_kind=kind),  # type: ignore[arg-type]
        transport=httpx.MockTransport(handler),
    ) as client:
        with pytest.raises(UsageError, match="5,000 characters long and the limit is 4,096"):
            await client.send_note(
                "n" * (NOTE_MAX_CHARS + 904), session_id="5f0c2f9e-0000-4000-8000-000000000000"
            )
    assert sent == []
