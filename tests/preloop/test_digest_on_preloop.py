"""``preloop sessions digest`` and the handoff against the fake Preloop: its activity list (one newest-first
request, no time filter) cut to the window on our side, its approvals list for the decisions."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from client.backends.preloop import PreloopBackend
from client.connection import Connection
from tests.fake_preloop import MAIN_SESSION, TOKEN, FakePreloop

pytestmark = pytest.mark.usefixtures("isolated_dirs")  # preloop's folders under tmp_path


async def _recent(fake: FakePreloop, base_url: str) -> None:
    """The last half hour of the main session (its recorded history is days old): two tool calls, one
    failing, a note the harness pulls, an approval declined with a comment from this client."""
    fake.tool_call("Read", arg_sizes={"file_path": 12})
    fake.tool_call("Bash", status="error", summary="exit 2")
    async with PreloopBackend(Connection(base_url, TOKEN)) as client:
        await client.send_note("check the | migrations", session_id=MAIN_SESSION)
        fake.deliver_notes()
        approval = fake.request_approval("rm -rf build/")
        await client.decline(approval, "keep | the build dir")


async def test_digest_of_a_preloop_session_keeps_only_the_window(
    fake: FakePreloop, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    await _recent(fake, base_url)
    flags = ["--url", base_url, "--token", TOKEN, "--server-kind", "preloop"]
    assert await _main(["sessions", "digest", MAIN_SESSION[:8], "--since", "30m", "--json", *flags]) == 0
    doc = json.loads(capsys.readouterr().out)
    # The recorded history (two tool calls days ago) is left out; the declined call counts as one that
    # did not run, beside the one that failed.
    assert (doc["tool_calls"], doc["tool_calls_failed"]) == (3, 2)
    [decided] = doc["approvals_decided"]
    assert (decided["status"], decided["comment"], decided["by"]) == (
        "declined",
        "keep | the build dir",
        "you",  # declined with this very token: Preloop's history names its user (users/me)
    )
    [note] = doc["notes"]
    assert (note["text"], note["state"]) == ("check the | migrations", "delivered")
    assert await _main(["sessions", "digest", MAIN_SESSION, "--since", "30m", *flags]) == 0
    text = capsys.readouterr().out
    assert "3 tool calls, 2 failed" in text and "Bash declined by you: “keep | the build dir”" in text

    assert await _main(["sessions", "digest", "--all", "--since", "30m", *flags]) == 0
    handoff = capsys.readouterr().out
    assert "1 session with activity" in handoff and f"{MAIN_SESSION[:8]}" in handoff
    assert f"{MAIN_SESSION[:8]} ✗ Bash declined by you: “keep | the build dir”" in handoff


async def _main(argv: list[str]) -> int:
    """``main`` runs its own event loop: in a thread, as a shell would run the command."""
    import asyncio

    return await asyncio.to_thread(main, argv)
