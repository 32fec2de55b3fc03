"""Ctrl+C on ``preloop sessions attach --plain`` must end the command even when a cancellation is lost.

A cancellation can be swallowed in a race (a timeout inside the HTTP stack expiring at the moment it
arrives); the follower then reads its stream on. That race cannot be produced on demand against a real
server (a fresh-clone run hit it: the attach never exited after SIGINT), so a task that swallows its first
cancellation stands in for the follower here.
"""

from __future__ import annotations

import asyncio

from cli.plain import stop_tasks


async def _follower_that_loses_one_cancellation(lost: list[bool]) -> None:
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        lost.append(True)  # swallowed, as the race does
    await asyncio.sleep(3600)  # ... and the stream is read on


async def test_a_follower_that_lost_its_cancellation_is_stopped_anyway() -> None:
    lost: list[bool] = []
    follower = asyncio.create_task(_follower_that_loses_one_cancellation(lost))
    done_early = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0.01)
    stopping = asyncio.create_task(stop_tasks(follower, done_early, None))
    done, _ = await asyncio.wait({stopping}, timeout=5)  # (waiting does not cancel what it waits for)
    assert stopping in done, "the command would never end"
    assert lost == [True] and follower.cancelled()
    follower.cancel()


async def test_a_task_that_failed_is_read_and_not_raised() -> None:
    async def fails() -> None:
        raise RuntimeError("the stream broke")

    task = asyncio.create_task(fails())
    await asyncio.sleep(0.01)
    await stop_tasks(task)  # the command is ending anyway: its outcome is read, not raised
    assert isinstance(task.exception(), RuntimeError)
