"""The timeline model fed by a real session on the local control plane (loopback, real SSE).

An agent reports through the harness API while an operator sends a note and decides an approval; the
client follows the event stream to the end and the timeline must tell the story an operator would read.
"""

from __future__ import annotations

import asyncio
from typing import Any

from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from client.events import Event
from client.status import Ended
from client.timeline import (
    ApprovalEntry,
    NoteEntry,
    RunEntry,
    RunStatus,
    SessionEntry,
    TextEntry,
    TextPhase,
    Timeline,
    ToolEntry,
    ToolState,
)


async def follow_to_end(client: Backend, session_id: str) -> list[Event]:
    events: list[Event] = []
    async for item in client.follow(session_id):
        if isinstance(item, Ended):
            break
        if not hasattr(item, "seq"):
            continue
        events.append(item)  # type: ignore[arg-type]
    return events


async def test_a_recorded_session_reads_as_a_timeline(live_server: Any) -> None:
    async with (
        live_server.harness() as harness,
        await connect(Settings(live_server.url, live_server.token)) as client,
    ):
        agent = await harness.start_session(agent_name="demo", title="fix the tests")
        follower = asyncio.create_task(follow_to_end(client, agent.session_id))

        await agent.run_started("fix the flaky test")
        await agent.narrate(1, ["Let me run ", "the tests first."], tool_calls=1)
        call = await agent.tool_started("Bash", {"command": "pytest -q"}, iteration=1)
        note = await client.send_note("also check the logs", session_id=agent.session_id)
        await agent.claim_notes(turn_index=2)  # delivered at the agent's next turn
        await agent.tool_completed(call, "Bash", status="error", duration_ms=1200, result_summary="1 failed")

        decision = asyncio.create_task(agent.permission_check("Bash", {"command": "rm -rf build"}))
        pending: list[Any] = []
        for _ in range(600):
            pending = (await client.list_approvals(session_id=agent.session_id)).items
            if pending:
                break
            await asyncio.sleep(0.05)
        assert pending, "the permission check never became a pending approval"
        await client.decline(pending[0].id, comment="not the build dir")
        await decision

        await agent.delta("Fixed it, mostly", 2)  # streams, then the run reports the real answer
        await agent.final_answer(2, "Fixed the **flaky** test.", chunks=[])
        await agent.delta("one more thought", 3)  # cut off by the session end
        await agent.end("exit")
        events = await asyncio.wait_for(follower, timeout=20)

    timeline = Timeline()
    assert timeline.apply_many(events).applied == len(events)
    assert not timeline.apply_many(events).applied  # a replay (reconnect overlap) changes nothing

    kinds = [type(e) for e in timeline]
    assert kinds[0] is SessionEntry and kinds[-1] is SessionEntry
    narration, answer, cut_off = [e for e in timeline if isinstance(e, TextEntry)]
    assert (narration.phase, narration.text) == (TextPhase.COMMENTARY, "Let me run the tests first.")
    assert (answer.phase, answer.text) == (TextPhase.FINAL, "Fixed the **flaky** test.")
    assert (cut_off.phase, cut_off.text) == (TextPhase.INTERRUPTED, "one more thought")

    [tool] = [e for e in timeline if isinstance(e, ToolEntry)]
    assert (tool.name, tool.state, tool.duration_ms) == ("Bash", ToolState.FAILED, 1200)
    assert "pytest -q" in tool.args_summary

    record = timeline.notes[note.note_id]
    assert record.state == "delivered" and {"pending", "delivered"} <= set(record.state_times)
    assert [e.state for e in timeline if isinstance(e, NoteEntry)] == ["pending", "delivered"]

    approvals = [e for e in timeline if isinstance(e, ApprovalEntry)]
    assert [(e.decided, e.status) for e in approvals] == [(False, "declined"), (True, "declined")]
    assert timeline.pending_approvals == []

    assert [e.status for e in timeline if isinstance(e, RunEntry)] == [RunStatus.RUNNING, RunStatus.COMPLETED]
    assert timeline.session is not None and timeline.session.ended
    # Order of the story: narration, tool, note delivery and the approval between tool start and answer.
    order = [type(e).__name__ for e in timeline]
    assert order.index("ToolEntry") < order.index("NoteEntry") < order.index("ApprovalEntry")
