"""Flood the real attach screen (``tui.app.PreloopApp`` → ``AttachScreen``) and time key handling.

Unlike ``bench_attach_flood.py`` (the timeline view in a bare layout), this runs the whole screen: the
stream worker taking ``SessionCore.follow()`` (the core applies what arrives), what changed painted once
per frame, the header, the approvals and notes panels and the composer. The backend is an in-process
fake whose ``follow`` yields a realistic event mix at a fixed rate; no network, so what is measured is
the app.

A key (``f12``, bound on the app) is posted the way a terminal driver posts it, every 20 ms; the time
from posting to its action running is recorded. Prints per rate: key latency median / p95 / max,
events/s the screen applied (seq of the newest applied event / seconds), and timeline lines retained. The
first rate, 0, is the floor of the same run: the same screen with no event flowing.

Targets (issue 26): p95 ≤ 16 ms at 2,000 events/s, ≤ 33 ms at 10,000 events/s (a frame at 60 and 30 fps).

    .venv/bin/python benchmarks/bench_attach_screen.py [--seconds 5] [--rates 0,2000,10000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any, ClassVar

from textual import events
from textual.binding import Binding, BindingType

from client.backends.base import ApprovalPage, Capabilities
from client.events import Event, event_from_dict
from client.models import Note, NoteList, Session, Standing, UserMe
from client.status import Live, StreamStatus
from tui.app import PreloopApp
from tui.screens.attach import AttachScreen
from widgets.timeline_view import TimelineView

SID = "0b8f1c9e-5a8f-4c3e-9d7a-1f2e3d4c5b6a"
WORDS = [
    "the",
    "agent",
    "reads",
    "the",
    "failing",
    "test",
    "then",
    "edits",
    "the",
    "parser",
    "and",
    "runs",
    "the",
    "suite",
    "again",
]


def event_stream() -> Iterator[Event]:
    """An endless mix: streamed narration, tool calls, a note and an approval per run, final answers."""
    seq = 0
    iteration = 0
    run = 0

    def make(type_: str, **fields: Any) -> Event:
        nonlocal seq
        seq += 1
        return event_from_dict(
            {"seq": seq, "type": type_, "session_id": SID, "at": "2026-03-01T10:00:00Z", **fields}
        )

    while True:
        run += 1
        run_id = f"run-{run}"
        yield make("run.started", run_id=run_id, task=f"task {run}")
        for step in range(8):
            iteration += 1
            for chunk in range(24):
                text = " ".join(WORDS[(chunk + i) % len(WORDS)] for i in range(2)) + " "
                yield make("model.delta", run_id=run_id, iteration=iteration, text=text)
            if step == 7:
                yield make("model.step", run_id=run_id, iteration=iteration, phase="final_answer")
                yield make("run.completed", run_id=run_id, answer=f"## Result {run}\n\n- parser fixed\n")
                break
            yield make("model.step", run_id=run_id, iteration=iteration, phase="commentary", tool_calls=1)
            yield make(
                "tool.started",
                run_id=run_id,
                iteration=iteration,
                call_id=f"c{iteration}",
                name="Bash",
                args_summary="pytest -q",
            )
            yield make("tool.completed", run_id=run_id, call_id=f"c{iteration}", name="Bash", duration_ms=420)
            if step == 3:
                note = {"note_id": f"n{run % 20}", "state": "delivered", "text": "check the logs too"}
                yield make("note.delivered", note=note)
                approval = {
                    "id": f"a{run}",
                    "tool_name": "Bash",
                    "summary": "rm -rf build",
                    "status": "pending",
                }
                yield make("approval.requested", approval=approval)
                yield make("approval.decided", approval={**approval, "status": "approved"})


class FloodBackend:
    """Just enough of ``client.backends.base.Backend`` for the attach screen, with a rate-limited
    ``follow``."""

    server_kind = "local"
    capabilities = Capabilities()

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.session = Session(id=SID, agent_name="flood", started_at=datetime.now(UTC))

    async def get_session(self, session_id: str) -> Session:
        return self.session

    async def list_notes(self, **kwargs: Any) -> NoteList:
        return NoteList(notes=[Note(note_id="n0", state="pending", text="hello")])

    async def list_approvals(self, **kwargs: Any) -> ApprovalPage:
        return ApprovalPage()

    async def follow(
        self, session_id: str, *, after: int = 0, tail: int | None = None
    ) -> AsyncIterator[Event | StreamStatus]:
        yield Live()
        source = event_stream()
        start = time.perf_counter()
        sent = 0
        while True:
            due = int((time.perf_counter() - start) * self.rate)
            for _ in range(due - sent):
                yield next(source)
            sent = max(sent, due)
            await asyncio.sleep(0.002)

    async def whoami(self) -> UserMe | None:
        return None  # the server does not say who this token is

    async def standing(self) -> Standing:
        return Standing()  # no rules, no kill switch: no banner

    async def aclose(self) -> None:
        return None


class ProbeApp(PreloopApp):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("f12", "probe", "probe", show=False)]

    def __init__(self, backend: Any) -> None:
        super().__init__(backend, start_session_id=SID, attention=False)
        self.sent_at = 0.0
        self.latencies: list[float] = []

    def action_probe(self) -> None:
        self.latencies.append(time.perf_counter() - self.sent_at)


TARGETS = {2000: 16.0, 10000: 33.0}


async def measure(rate: int, seconds: float) -> None:
    app = ProbeApp(FloodBackend(rate))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, AttachScreen)
        start_seq = screen.timeline.last_seq
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            app.sent_at = time.perf_counter()
            app.post_message(events.Key("f12", None))
            await asyncio.sleep(0.02)
        elapsed = time.perf_counter() - start
        applied = screen.timeline.last_seq - start_seq
        lines = screen.query_one(TimelineView).line_count
    lat = sorted(x * 1000 for x in app.latencies)
    p95 = lat[int(len(lat) * 0.95) - 1] if lat else float("nan")
    print(
        f"{rate:>6} events/s offered: keys {len(lat):4d}  median {statistics.median(lat):6.2f} ms  "
        f"p95 {p95:6.2f} ms  max {lat[-1]:7.2f} ms  |  applied {applied / elapsed:9.0f} events/s  "
        f"lines retained {lines}"
        + (
            f"  (target p95 <= {TARGETS[rate]:.0f} ms: {'met' if p95 <= TARGETS[rate] else 'MISSED'})"
            if rate in TARGETS
            else "  (the floor)"
            if not rate
            else ""
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rates", default="0,2000,10000")
    args = parser.parse_args()
    for rate in (int(r) for r in args.rates.split(",")):
        asyncio.run(measure(rate, args.seconds))


if __name__ == "__main__":
    main()
