"""Property test: no request the OpenAPI schema can describe, valid or not, makes the local server answer 5xx.

Schemathesis turns the server's own ``/openapi.json`` into Hypothesis strategies for every operation, in
both modes: *positive* (requests the schema allows) and *negative* (requests it forbids: wrong types,
missing fields, junk bodies). On top of that every example picks a credential (the right token, another
account's, the wrong kind, a bogus one, none), real or made-up ids for path parameters, and sometimes a
hostile value the schema cannot express (``NaN``, integers beyond 64 bits, lone surrogates, NUL, deep
nesting, random bytes under any content type). Each
request goes to a real server over loopback; the property is only "never a 5xx and never a dropped
connection".

A normal run sends a few cases per operation (``PRELOOP_FUZZ_EXAMPLES``, default 8) so the suite stays
fast; ``PRELOOP_FUZZ_EXAMPLES=500 pytest tests/server/test_server_fuzz.py -s`` is the long run (over
10,000 cases) and prints how many requests were sent and what they got.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from server.app import create_app
from server.embedded import EmbeddedServer
from server.harness import AGENT_EVENT_TYPES
from server.harness_client import HarnessClient

EXAMPLES = int(os.environ.get("PRELOOP_FUZZ_EXAMPLES", "8"))
SCHEMA = schemathesis.openapi.from_dict(create_app(Path("unused.sqlite3")).openapi())
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
STREAMS = {"/api/v1/runtime-sessions/{session_id}/events", "/api/v1/attention/events"}

# Values JSON Schema cannot express but a hostile client can send: spliced into bodies and queries.
HOSTILE_JSON = [
    "NaN", "Infinity", "-Infinity", str(2**63), str(10**30), '"\\ud800"', '"a\\u0000b"', "1e400",
    "[" * 600 + "]" * 600, '{"a": ' * 70 + "1" + "}" * 70,
]  # fmt: skip
CONTENT_TYPES = [
    "application/json", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
    "application/json; charset=latin-1", "application/merge-patch+json",
]  # fmt: skip
HOSTILE_QUERY = [str(2**63), str(-(2**63) - 1), "1e400", "nan", "0001-01-01T00:00:00+14:00", "\x00", "%"]


@dataclass
class World:
    """The real objects fuzzed requests may name, and what was sent so far."""

    url: str
    operator: str
    other_operator: str
    live_session: str = ""
    live_token: str = ""
    ended_session: str = ""
    patch_session: str = ""
    note_id: str = ""
    approval_id: str = ""
    agent_id: str = ""
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))
    sent: collections.Counter[str] = field(default_factory=collections.Counter)
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)


async def _populate(world: World) -> None:
    async with HarnessClient(world.url, world.operator) as harness:
        await _new_live_session(world, harness)
        ended = await harness.start_session(agent_name="fuzz-ended")
        await ended.delta("before the end", iteration=1)
        await ended.end()
        world.ended_session = ended.session_id
        world.patch_session = (await harness.start_session(agent_name="fuzz-patch")).session_id
        asking = await harness.start_session(agent_name="fuzz-approval")
        verdict = await asking.permission_check("Bash", {"command": "ls"}, timeout_seconds=0.1)
        world.approval_id = verdict.request_id or ""
        async with httpx.AsyncClient(base_url=world.url) as http:
            note = await http.post(
                "/api/v1/operator-notes",
                json={"text": "fuzz note", "runtime_session_id": world.live_session},
                headers={"Authorization": f"Bearer {world.operator}"},
            )
            world.note_id = note.json()["note_id"]
            world.agent_id = note.json()["managed_agent_id"]


async def _new_live_session(world: World, harness: HarnessClient | None = None) -> None:
    if harness is None:
        async with HarnessClient(world.url, world.operator) as own:
            await _new_live_session(world, own)
        return
    agent = await harness.start_session(agent_name="fuzz-live")
    world.live_session, world.live_token = agent.session_id, agent.token


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One server for all operations (a short approval wait, so ``ask`` cases do not block for long)."""
    server = EmbeddedServer(
        db_path=tmp_path_factory.mktemp("fuzz") / "control-plane.sqlite3",
        keepalive_seconds=0.2,
        permission_timeout_seconds=0.2,
        write_local_file=False,
    )
    server.start()
    try:
        state = World(server.url, server.token, server.create_account("other", "Other Operator"))
        try:
            asyncio.run(_populate(state))
            yield state
        finally:
            state.http.close()
            total = sum(state.sent.values())
            print(
                f"\nfuzz: {total} requests over {len(state.sent)} operations; statuses "
                + ", ".join(f"{code}: {n}" for code, n in sorted(state.statuses.items())),
                file=sys.__stderr__,
            )
    finally:
        server.stop()


def _credential(world: World, path: str, choice: str) -> dict[str, str]:
    right = world.live_token if path.startswith("/api/v1/agents/") else world.operator
    wrong_kind = world.operator if path.startswith("/api/v1/agents/") else world.live_token
    token = {
        "right": right,
        "other": world.other_operator,
        "wrong-kind": wrong_kind,
        "bogus": "plo_" + "A" * 43,
    }.get(choice)
    return {"Authorization": f"Bearer {token}"} if token else {}


def _strategy(operation: Any, world: World) -> st.SearchStrategy[Any]:
    """Positive and negative cases, with path ids sometimes made up, sometimes real objects."""
    ids: dict[str, list[str]] = {
        "session_id": [world.live_session, world.ended_session, world.patch_session],
        "note_id": [world.note_id],
        "approval_id": [world.approval_id],
    }
    names = [p.name for p in operation.path_parameters]
    strategies = []
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        strategies.append(operation.as_strategy(mode))
        for name in names:
            for value in ids.get(name, []):
                if operation.method.upper() == "PATCH" and value != world.patch_session:
                    continue  # ending the shared live session would make the harness cases all 409
                if operation.path in STREAMS and value == world.live_session:
                    continue  # a live stream never ends; the ended one replays and closes
                strategies.append(operation.as_strategy(mode, path_parameters={name: value}))
    return st.one_of(strategies)


def _splice(
    kwargs: dict[str, Any], hostile: str | None, hostile_query: str | None, raw: tuple[str, bytes] | None
) -> dict[str, Any]:
    """Turn schemathesis' requests-style arguments into httpx ones, splicing in a hostile value."""
    out: dict[str, Any] = {
        "method": kwargs["method"],
        "url": kwargs["url"],
        "params": dict(kwargs.get("params") or {}),
        "headers": {k: v for k, v in (kwargs.get("headers") or {}).items() if k.lower() != "content-length"},
    }
    if "json" in kwargs:
        body = json.dumps(kwargs["json"])
        if hostile is not None and isinstance(kwargs["json"], dict) and kwargs["json"]:
            key = sorted(kwargs["json"])[0]
            body = json.dumps({k: v for k, v in kwargs["json"].items() if k != key})
            body = body[:-1] + ("," if len(kwargs["json"]) > 1 else "") + f"{json.dumps(key)}: {hostile}}}"
        out["content"] = body.encode()
        out["headers"]["Content-Type"] = "application/json"
    elif "data" in kwargs:
        data = kwargs["data"]
        out["content"] = data if isinstance(data, bytes) else str(data).encode()
    if raw is not None:  # any bytes under any content type, e.g. text/plain that is not UTF-8
        out["headers"]["Content-Type"], out["content"] = raw
    if hostile_query is not None and out["params"]:
        out["params"][sorted(out["params"])[0]] = hostile_query
    return out


@pytest.mark.timeout(max(120, EXAMPLES))
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: f"{op.method.upper()} {op.path}")
def test_no_request_gets_a_5xx(world: World, operation: Any) -> None:
    label = f"{operation.method.upper()} {operation.path}"

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(
        case=_strategy(operation, world),
        credential=st.sampled_from(["right"] * 6 + ["other", "wrong-kind", "bogus", "none"]),
        hostile=st.none() | st.sampled_from(HOSTILE_JSON),
        hostile_query=st.none() | st.none() | st.sampled_from(HOSTILE_QUERY),
        raw=st.none()
        | st.none()
        | st.none()
        | st.tuples(st.sampled_from(CONTENT_TYPES), st.binary(max_size=40)),
    )
    def run(
        case: Any,
        credential: str,
        hostile: str | None,
        hostile_query: str | None,
        raw: tuple[str, bytes] | None,
    ) -> None:
        headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
        case.headers = {**headers, **_credential(world, operation.path, credential)}
        request = _splice(case.as_transport_kwargs(base_url=world.url), hostile, hostile_query, raw)
        if operation.path in STREAMS:
            with world.http.stream(**request) as response:
                status = response.status_code
        else:
            status = world.http.request(**request).status_code
        world.sent[label] += 1
        world.statuses[status] += 1
        if operation.path == "/api/v1/agents/session-end" and status == 200:
            asyncio.run(_new_live_session(world))  # keep a live session for the other harness cases
        assert status < 500, f"{status} from {request['method']} {request['url']} {request.get('content')!r}"

    run()
    assert world.sent[label] > 0


# -- agent events with real types and arbitrary fields -----------------------------------------------------
# The schema says only "a list of objects", so the cases above rarely carry a type the server accepts. These
# do: every agent event type, with its fields present or not and holding any JSON value.


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    _containers,
    max_leaves=12,
)
EVENT_FIELDS = [
    "run_id", "task", "iteration", "text", "phase", "tool_calls", "call_id", "name", "args", "args_summary",
    "status", "duration_ms", "result_summary", "answer", "error", "reason", "seq", "session_id", "at",
]  # fmt: skip
AGENT_EVENTS = st.builds(
    lambda kind, fields: {**fields, "type": kind},
    st.sampled_from(sorted(AGENT_EVENT_TYPES)),
    st.fixed_dictionaries({}, optional=dict.fromkeys(EVENT_FIELDS, JSON_VALUES)),
)


@pytest.mark.timeout(max(120, EXAMPLES))
def test_any_agent_event_is_stored_or_refused_never_a_5xx(world: World) -> None:
    @settings(
        max_examples=EXAMPLES * 4, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(events=st.lists(AGENT_EVENTS, min_size=1, max_size=5), batch_id=st.none() | st.text(max_size=8))
    def run(events: list[dict[str, Any]], batch_id: str | None) -> None:
        body: dict[str, Any] = {"events": events, "batch_id": batch_id}
        response = world.http.post(
            f"{world.url}/api/v1/agents/events",
            content=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {world.live_token}", "Content-Type": "application/json"},
        )
        world.sent["POST /api/v1/agents/events (typed)"] += 1
        world.statuses[response.status_code] += 1
        assert response.status_code < 500, f"{response.status_code} for {body!r}"
        if response.status_code == 200 and not response.json()["replayed"]:
            assert response.json()["accepted"] == len(events)

    run()
