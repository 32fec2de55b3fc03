"""Shared fixtures: a real local control plane over loopback, isolated from the user's home.

``live_server`` (function scope) is a started :class:`server.embedded.EmbeddedServer` on a fresh SQLite
file in ``tmp_path``, with ``PRELOOP_STATE_DIR`` / ``PRELOOP_CONFIG_DIR`` / ``PRELOOP_DATA_DIR`` pointed at
temporary folders so nothing touches the real home (an autouse fixture does that for every test; the
``isolated_dirs`` fixture puts them under ``tmp_path``, as ``tmp_path/state`` etc.). It exposes:

* ``url``, ``token`` (operator token of the first account), ``other_token`` (a second account's operator
  token: its view must never show the first account's sessions), ``db_path``;
* ``stop()`` / ``start()`` to restart on the same port and database (restart-persistence tests);
* ``rotate_token()``: the operator token revoked server-side and a new one issued (expired-token tests);
* ``add_operator(name)``: a named colleague on the first account, with a token of their own;
* ``harness()``: a new :class:`server.harness_client.HarnessClient` for the first account (use as
  ``async with live_server.harness() as h: agent = await h.start_session(agent_name="a")``).

``harness`` is the same client, already opened and closed for you; ``client`` is the operator's side, a
backend for ``live_server`` (``client.backends.connect``). Keepalives come every 0.5 s. A blocked permission
check waits as long as it does for a user (300 s): a test that needs an approval to expire calls
``await live_server.expire_approval(approval_id)`` (the server's own expiry, on demand) instead of giving it a
deadline of a few real seconds, which a loaded machine reaches too early or too late.

A test waits for a condition with :func:`until` (or for an event), not for a fixed pause; its deadline
bounds a wait that would otherwise hang, it does not decide what happens. ``tests/stress.sh`` runs the
suite with every CPU kept busy by other processes.

The suite runs on parallel workers (pytest-xdist, ``-n auto`` in pyproject): every server binds a free
port and every folder is per test, so workers share nothing. :func:`pytest_xdist_auto_num_workers`
picks how many: four when the run names folders (the whole suite: it waits on loopback servers and
terminals more than it computes, so more workers than the two cores pay), none when it names test files
or single tests (a worker's start-up costs more than it saves there). ``-n N`` on the command line or
``PYTEST_XDIST_AUTO_NUM_WORKERS`` decide otherwise, and ``--snapshot-update`` always runs in one process
(syrupy prunes unused snapshots only there).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from textual.app import App

from client.backends import connect
from client.backends.base import Backend
from client.config import Settings
from server.accounts import hash_token, new_token
from server.embedded import EmbeddedServer
from server.harness_client import HarnessClient

if TYPE_CHECKING:
    from textual.pilot import Pilot

# A suite started in the background of a non-interactive shell (`.ci/run &`) starts with SIGINT ignored,
# as POSIX shells start background commands; Python then installs no KeyboardInterrupt handler and every
# `preloop` the tests spawn inherits the ignore, so the tests that press Ctrl+C on a command wait for an
# exit that cannot come. An operator's shell starts `preloop` with SIGINT at its default: so do the tests.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

SUITE_WORKERS = 4
"""Workers for a run over folders. The whole suite on the 2-core machine, other work on it at load 1.4-4.4:
3 workers 155 s, 4 workers 109 s, 5 workers 132 s, 6 workers 131 s (8, before plugins were named: 249 s)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many workers ``-n auto`` starts (see the module docstring)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    folders = all("::" not in arg and Path(arg).is_dir() for arg in config.args)
    return SUITE_WORKERS if folders else 0


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """``--snapshot-update`` runs in one process: syrupy deletes the snapshots no test used only when it
    sees the whole run, which a worker never does."""
    if config.getoption("update_snapshots", False) and config.getoption("numprocesses", None):
        config.option.numprocesses = 0
        config.option.dist = "no"
        config.option.tx = []


class LiveServer:
    """Handle on the running test server (see module docstring)."""

    def __init__(self, server: EmbeddedServer, other_token: str) -> None:
        self.server = server
        self.other_token = other_token

    @property
    def url(self) -> str:
        """Base URL (a free loopback port), for clients under test."""
        return self.server.url

    @property
    def token(self) -> str:
        """The first account's operator token (the one the demo hands the client)."""
        return self.server.token

    @property
    def db_path(self) -> Path:
        """The SQLite file, for restart and persistence tests."""
        return self.server.db_path

    def start(self) -> None:
        """Start again on the same port and database (restart tests)."""
        self.server.start()

    def stop(self) -> None:
        """Stop the server, e.g. to test a client facing a dead server."""
        self.server.stop()

    def rotate_token(self) -> str:
        """Revoke the first account's operator token server-side and issue another for the same user (what
        an admin rotating a leaked token does); returns the new one. The local-server file still names
        the old token: a test writes the new one there when a client should find it (a ``preloop login``)."""
        old, new = self.server.token, new_token("plo_")

        async def swap() -> None:
            async with self.server.plane.store.write() as tx:
                changed = await tx.execute(
                    "UPDATE tokens SET token_hash = ? WHERE token_hash = ?",
                    (hash_token(new), hash_token(old)),
                )
                assert changed == 1, "the operator token was not in the tokens table"

        self.server.call(swap())
        # From now on the operator's own record of the token (the local-server file, as a keyring entry
        # for a remote server) is the test's to update: a restart must not hand the client a token itself.
        self.server.write_local_file = False
        return new

    def add_operator(self, name: str) -> str:
        """A named person on the first account with a token of their own (``preloop serve
        --add-operator``); returns the token."""
        return self.server.call(self.server.plane.accounts.add_operator(name))

    def harness(self) -> HarnessClient:
        """A new agent-side client (close it, or use ``async with``); the fixture ``harness`` does both."""
        return HarnessClient(self.url, self.token)

    async def expire_approval(self, approval_id: str) -> None:
        """Expire a pending approval now, through the server's own expiry (``Approvals.expire_now``): the
        agent blocked on it is told it timed out and every stream says ``expired``, when the test says so."""
        expire = self.server.plane.approvals.expire_now(approval_id)
        assert await asyncio.to_thread(self.server.call, expire), f"approval {approval_id} was not pending"


WAIT_SECONDS = 60.0
"""How long :func:`until` waits for a condition before it fails: a bound on a wait that would otherwise
hang (a condition met sooner returns sooner), generous for a machine whose every CPU is busy elsewhere."""


async def until(
    pilot: Pilot[Any] | None,
    condition: Callable[[], bool | Awaitable[bool]],
    what: str | Callable[[], str],
    seconds: float = WAIT_SECONDS,
) -> None:
    """Wait until ``condition`` holds, looking every 50 ms; between looks ``pilot``'s app runs (its events,
    timers and workers), or only the event loop without one. ``condition`` may be async (a server asked
    again). Fails with "timed out waiting for: ``what``" after ``seconds``; ``what`` may be a function, to
    say what was there instead at that moment."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        met = condition()
        if inspect.isawaitable(met):
            met = await met
        if met:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what() if callable(what) else what}")
        if pilot is not None:
            await pilot.pause(0.05)
        else:
            await asyncio.sleep(0.05)


@dataclass(frozen=True)
class Notice:
    """A notice (toast) the app showed: what it said, its title and severity."""

    message: str
    title: str
    severity: str


SHOWN = "_notices_shown_to_tests"
"""The attribute of an app holding what :func:`notices` returns: on the app itself, since pytest's copy
of this module (``conftest``) and a test's (``tests.conftest``) are two modules with two globals."""


def notices(app: App[Any]) -> list[Notice]:
    """Every notice ``app`` has shown since it started, in order, including those whose toast has
    already gone: a toast's timeout runs on the real clock, so on a busy machine one can expire before a
    test looks at the screen. A test asks what the operator was told, not whether a toast is still up."""
    return list(vars(app).get(SHOWN, ()))


def said(app: App[Any]) -> list[str]:
    """The messages of :func:`notices`."""
    return [notice.message for notice in notices(app)]


@pytest.fixture(autouse=True)
def _notices_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``App.notify`` is noted for :func:`notices` before the toast is shown as usual."""
    shown = App.notify

    def notify(self: App[Any], message: str, **options: Any) -> None:
        vars(self).setdefault(SHOWN, []).append(
            Notice(str(message), str(options.get("title", "")), str(options.get("severity", "information")))
        )
        shown(self, message, **options)

    monkeypatch.setattr(App, "notify", notify)


@pytest.fixture(autouse=True)
def _never_the_real_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Safety net for every test: preloop's state/config/data dirs point at a throwaway folder, and the
    settings of the shell the suite runs in (a server URL or token, debug, NO_COLOR) reach no test."""
    home = tmp_path_factory.mktemp("preloop-home")
    for name in ("STATE", "CONFIG", "DATA"):
        monkeypatch.setenv(f"PRELOOP_{name}_DIR", str(home / name.lower()))
    for name in ("PRELOOP_URL", "PRELOOP_TOKEN", "PRELOOP_DEBUG", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


class DeliberateClock:
    """The operator-safety clock of the tests of other behaviour: every reading is a second after the one
    before, so every key is pressed alone (no burst of typing), a letter command's quiet window is over
    as soon as it is looked at, and no decision comes too soon after its screen appeared."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture(autouse=True)
def _decisions_without_type_ahead_delay(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests press keys faster than any person: in the tests of other behaviour, each key is taken as
    pressed alone by a deliberate operator (``DeliberateClock``: letter commands still wait for their
    quiet window, which is over at once) and a decision key right after a dialog opens is taken (no
    half-second type-ahead guard). The tests of operator safety (``tui.typeahead``, ``tui.keypace``) are
    marked ``type_ahead`` and type at a person's pace on a clock they move."""
    if request.node.get_closest_marker("type_ahead") is None:
        import tui.typeahead

        monkeypatch.setattr(tui.typeahead, "GUARD_SECONDS", 0.0)
        monkeypatch.setattr(tui.typeahead, "DEFAULT_CLOCK", DeliberateClock())


@pytest.fixture
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every preloop directory at ``tmp_path`` so tests never read or write the real home."""
    for name in ("STATE", "CONFIG", "DATA"):
        folder = tmp_path / name.lower()
        folder.mkdir(exist_ok=True)
        monkeypatch.setenv(f"PRELOOP_{name}_DIR", str(folder))
    return tmp_path


_STOPPING: list[threading.Thread] = []
"""Servers of finished tests, stopping in the background: uvicorn takes ~0.2 s to stop, all of it waiting
(its 0.1 s polls), and nothing of a finished test talks to its server any more."""


@pytest.fixture(scope="session")
def _servers_stopped_by_the_end() -> Iterator[None]:
    """The session ends only once every test server has stopped."""
    yield
    for thread in _STOPPING:
        thread.join(30)


@pytest.fixture
def live_server(isolated_dirs: Path, _servers_stopped_by_the_end: None) -> Iterator[LiveServer]:
    """A real control plane over loopback for one test, plus a second account (``other_token``) whose
    ids must be invisible; a short keepalive keeps tests quick."""
    server = EmbeddedServer(
        db_path=isolated_dirs / "data" / "control-plane.sqlite3",
        keepalive_seconds=0.5,
    )
    server.start()
    try:
        yield LiveServer(server, server.create_account("other", "Other Operator"))
    finally:
        stopping = threading.Thread(target=server.stop, name=f"stopping {server.url}", daemon=True)
        stopping.start()
        _STOPPING.append(stopping)


@pytest.fixture
async def harness(live_server: LiveServer) -> AsyncIterator[HarnessClient]:
    """An agent-side client of ``live_server``, closed after the test."""
    async with live_server.harness() as client:
        yield client


@pytest.fixture
async def client(live_server: LiveServer) -> AsyncIterator[Backend]:
    """The operator's backend for ``live_server`` (its kind known, as from the local-server file): it
    reconnects within half a second of a server's return and declares a stream stalled only after the
    default silence (30 s), never because a loaded machine ran the test late."""
    settings = Settings(live_server.url, live_server.token, server_kind="local")
    async with await connect(settings, backoff_initial=0.05, backoff_max=0.5) as backend:
        yield backend
