"""The project's contracts, checked: dependency direction, import hygiene, lint, format and types.

These run the real tools as subprocesses so a clean clone fails loudly when a contract is broken.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


def test_import_contracts_hold() -> None:
    """client <- widgets <- tui, and server never imports the UI (import-linter contracts)."""
    result = _run(str(BIN / "lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("package", "baseline", "forbidden"),
    [
        ("client", "httpx", ("textual", "rich", "server", "widgets", "tui")),
        ("widgets", "textual.app", ("httpx", "httpx_sse", "websockets", "server", "tui")),
        ("server", "httpx", ("textual", "rich", "widgets", "tui")),
    ],
)
def test_importing_a_layer_loads_nothing_above_it(
    package: str, baseline: str, forbidden: tuple[str, ...]
) -> None:
    """Import every module of a layer in a fresh interpreter and list what our code pulled in.

    ``import httpx`` itself loads ``rich`` when it is installed (for httpx's own optional command line), so
    the modules already present after the third-party baseline imports are not held against the layer.
    """
    code = (
        "import importlib, pkgutil, sys\n"
        f"import {baseline}\n"
        "baseline = set(sys.modules)\n"
        f"import {package}\n"
        f"for m in pkgutil.walk_packages({package}.__path__, '{package}.'):\n"
        "    importlib.import_module(m.name)\n"
        "added = set(sys.modules) - baseline\n"
        f"bad = sorted({{n.split('.')[0] for n in added}} & set({forbidden!r}))\n"
        "print(','.join(bad))\n"
    )
    result = _run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"{package} pulled in: {result.stdout.strip()}"


def test_ruff_lint_is_clean() -> None:
    result = _run(str(BIN / "ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("token_from", ["local-server file", "PRELOOP_URL/PRELOOP_TOKEN"])
def test_scripted_commands_load_only_what_they_use(live_server: Any, token_from: str) -> None:
    """The real ``preloop`` process for ``sessions list -o id`` / ``--json`` and ``notes list --json`` /
    ``-o id`` (a short session id too) against the local server: its requests go over httpx like every
    other command's, but without httpx-sse or websockets; no keyring (its token is in the environment or
    the local server's file); no Textual or Rich (nor httpx's own command line, which would bring Rich);
    none of the live feeds' code (the event vocabulary, the SSE, order and reconnect toolkit, the
    followers); only the server's answers as pydantic models. Each costs start-up time a script pays on
    every call."""
    import asyncio

    async def start_one() -> str:
        async with live_server.harness() as harness:
            return str((await harness.start_session(agent_name="a")).session_id)

    session = asyncio.run(start_one())
    env = dict(os.environ)
    if token_from.startswith("PRELOOP_URL"):
        env.update(PRELOOP_URL=live_server.url, PRELOOP_TOKEN=live_server.token)
    code = (
        "import sys\n"
        "from cli.main import main\n"
        "sid = sys.argv[1]\n"
        "codes = [main(['sessions', 'list', '-o', 'id']), main(['sessions', 'list', '--json']),\n"
        "         main(['notes', 'list', '--session', sid, '--json']),\n"
        "         main(['notes', 'list', '--session', sid[:6], '-o', 'id'])]\n"
        "heavy = {'keyring', 'textual', 'rich', 'click', 'pygments', 'httpx_sse', 'websockets', 'server',\n"
        "         'tui', 'widgets'}\n"
        "ours = ('client.events', 'client.streaming.', 'client.backends.local.feed', 'client.timeline',\n"
        "        'client.backends.attention', 'client.backends.local.attention', 'client.backends.preloop',\n"
        "        'client.backends.dendrux', 'client.inbox', 'cli.plain')\n"
        "allowed = {'client.streaming.policy'}  # the reconnect backoff's two defaults, read by Connection\n"
        "print(codes, sorted(n for n, m in sys.modules.items() if m is not None and n not in allowed\n"
        "                    and (n.split('.')[0] in heavy or n.startswith(ours))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, session], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0] []", done.stdout
