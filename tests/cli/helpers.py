"""Helpers for CLI tests: run ``main()`` in-process or the real ``preloop`` console script, over loopback.

The ``live_server`` fixture (tests/conftest.py) points the preloop directories at temporary folders and
writes the local-server file there, so the CLI finds the server and its token with no flags, just as a
user's shell would after ``preloop serve``. The keyring is forced to the "fail" backend so login tests do
not depend on the machine.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from server.harness_client import HarnessClient, HarnessSession

PRELOOP = str(Path(sys.executable).parent / "preloop")
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run harness set-up from a plain (sync) test: ``main()`` owns its own event loop."""
    return asyncio.run(coro)


def with_sessions(
    url: str,
    token: str,
    specs: list[dict[str, Any]],
    then: Callable[[list[HarnessSession]], Awaitable[T]] | None = None,
) -> tuple[list[str], T | None]:
    """Start one agent session per spec (keyword arguments of ``start_session``); optionally act on them."""

    async def go() -> tuple[list[str], T | None]:
        async with HarnessClient(url, token) as harness:
            sessions = [await harness.start_session(**spec) for spec in specs]
            result = await then(sessions) if then is not None else None
            return [s.session_id for s in sessions], result

    return run(go())


def preloop(
    *args: str, input: str | None = None, timeout: float = 60.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user's shell runs it."""
    return subprocess.run(
        [PRELOOP, *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )


def shell(script: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """A real shell pipeline with the venv's ``preloop`` first on PATH."""
    env = {**os.environ, "PATH": f"{Path(PRELOOP).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["bash", "-c", "set -o pipefail\n" + script],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
