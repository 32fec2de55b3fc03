"""Find in a long timeline: how long each keystroke of the find line takes, typed into the real widgets.

A headless app holds the real ``TimelineView`` and ``FindBar``, wired as the pane wires them (each edit
of the find line → ``view.go_to(view.reader.find(query))`` → the count shown). The timeline is loaded
with the attach flood benchmark's realistic event mix (streaming text, commentary, tool calls, notes,
approvals, answers), then keys are posted to the app the way a terminal driver does and each is timed
from posting to the first screen refresh after the view answered (the match highlighted, the cursor
moved, the count shown).

Two loads: **5,000 events** (what the issue names; the streamed deltas merge, so fewer entries) and
**5,000 entries** (the model's cap: every entry the attach screen can hold, from ~35,000 events), the
latter with commentary folded, so a match in narration unfolds it. For each: a word typed letter by letter
("parser"; every keystroke after the first narrows the previous result), a query with many matches typed
letter by letter ("the": most entries), and Enter (next match) pressed repeatedly on that query. It prints
median / p95 / max per keystroke, how many matches, and the model's own search time beside it; then the
same keys into the same app with nothing wired to the find line (Textual echoing a key: the floor), and
the full garbage collections that ran meanwhile (a 5,000-entry model makes each one long: they are the
slowest keystrokes). ``--freeze`` types over the 5,000 entries once more with the loaded session frozen
out of the collector (``gc.freeze``; the app does not do this), to show what a full collection costs then.

Target (issue 19): ≤ 50 ms per keystroke over 5,000 events.

    .venv/bin/python benchmarks/bench_find.py [--rounds 8] [--freeze]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path

from textual import events, on
from textual.app import App, ComposeResult

from client.events import Event
from client.find import Finder
from client.timeline import Timeline
from widgets.find_bar import FindBar
from widgets.timeline_view import TimelineView

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_attach_flood import event_stream  # noqa: E402

TARGET_MS = 50.0


class FindApp(App[None]):
    """The timeline and the find line, wired as the attach screen is to wire them."""

    def __init__(self, timeline: Timeline, *, collapse: bool, wired: bool = True) -> None:
        super().__init__()
        self.timeline = timeline
        self.collapse = collapse
        self.wired = wired
        self.sent_at = 0.0
        self.latencies: list[float] = []
        self.done = asyncio.Event()

    def compose(self) -> ComposeResult:
        yield TimelineView(self.timeline, collapse_commentary=self.collapse, id="timeline")
        yield FindBar(id="find")

    @property
    def view(self) -> TimelineView:
        return self.query_one(TimelineView)

    @property
    def bar(self) -> FindBar:
        return self.query_one(FindBar)

    @on(FindBar.Changed)
    def _changed(self, event: FindBar.Changed) -> None:
        if self.wired:  # unwired: the find line echoes the key and nothing searches (the baseline)
            self.bar.show_status(self.view.go_to(self.view.reader.find(event.query)))
        self.call_after_refresh(self._answered)

    @on(FindBar.Next)
    def _next(self) -> None:
        self.bar.show_status(self.view.go_to(self.view.reader.find_step(forward=True)))
        self.call_after_refresh(self._answered)

    def _answered(self) -> None:
        if self.sent_at:
            self.latencies.append(time.perf_counter() - self.sent_at)
            self.sent_at = 0.0
            self.done.set()

    async def press(self, key: str, character: str | None) -> None:
        """Post a key as the terminal driver would and wait until the screen shows the answer."""
        self.done.clear()
        self.sent_at = time.perf_counter()
        self.post_message(events.Key(key, character))
        await asyncio.wait_for(self.done.wait(), timeout=30)


def load(*, events_count: int | None = None, entries: int | None = None) -> tuple[Timeline, int]:
    """A timeline of ``events_count`` events, or fed until it holds ``entries`` entries (the cap)."""
    timeline = Timeline(max_entries=5_000)
    stream = event_stream()
    fed = 0
    while True:
        batch: list[Event] = [next(stream) for _ in range(1_000)]
        if events_count is not None:
            batch = batch[: events_count - fed]
        timeline.apply_many(batch)
        fed += len(batch)
        if events_count is not None and fed >= events_count:
            break
        if entries is not None and len(timeline) >= entries and timeline.dropped_count:
            break
    return timeline, fed


class FullCollections:
    """Times the garbage collector's full (generation 2) passes: with a 5,000-entry model in memory
    they are what the slowest keystrokes wait for, whatever the keystroke does."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._started)

    def __str__(self) -> str:
        if not self.pauses:
            return "no full garbage collection meanwhile"
        ms = sorted(x * 1000 for x in self.pauses)
        return (
            f"{len(ms)} full garbage collections meanwhile ({len(gc.get_objects()):,} objects tracked): "
            f"median {statistics.median(ms):.0f} ms, max {ms[-1]:.0f} ms"
        )


def figures(samples: list[float]) -> str:
    ms = sorted(x * 1000 for x in samples)
    p95 = statistics.quantiles(ms, n=20, method="inclusive")[-1] if len(ms) >= 2 else ms[0]
    verdict = "met" if p95 <= TARGET_MS else "MISSED"
    return (
        f"median {statistics.median(ms):5.1f} ms, p95 {p95:5.1f} ms, max {ms[-1]:5.1f} ms "
        f"over {len(ms)} keys (≤ {TARGET_MS:.0f} ms: {verdict})"
    )


async def type_word(app: FindApp, word: str, rounds: int) -> list[float]:
    samples: list[float] = []
    for _ in range(rounds):
        app.bar.input.value = ""  # a fresh query, not timed
        app.view.end_find()
        app.view.action_follow()
        await asyncio.sleep(0.05)
        app.latencies = []
        for letter in word:
            await app.press(letter, letter)
            await asyncio.sleep(0.02)
        samples.extend(app.latencies)
    return samples


async def press_next(app: FindApp, count: int) -> list[float]:
    app.latencies = []
    for _ in range(count):
        await app.press("enter", None)
        await asyncio.sleep(0.02)
    return list(app.latencies)


def model_search_ms(timeline: Timeline, word: str, rounds: int) -> float:
    """The pure model's share: a fresh Finder typing the word letter by letter (first keystroke included)."""
    times: list[float] = []
    for _ in range(rounds):
        finder = Finder(timeline)
        for end in range(1, len(word) + 1):
            t0 = time.perf_counter()
            finder.search(word[:end])
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


async def baseline(timeline: Timeline, rounds: int) -> None:
    """The same keys into the same app with nothing searching: what Textual itself takes to echo a key
    into the find line on this machine now (read the figures above against it)."""
    gc.collect()
    app = FindApp(timeline, collapse=False, wired=False)
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause(0.2)
        app.bar.open()
        await pilot.pause(0.1)
        with FullCollections() as collections:
            word = await type_word(app, "parser", rounds)
    print(f"baseline, the find line not wired (a key echoed, nothing searched): {figures(word)}")
    print(f"  {collections}")


async def run(
    label: str, timeline: Timeline, fed: int, *, collapse: bool, rounds: int, freeze: bool = False
) -> None:
    gc.collect()
    app = FindApp(timeline, collapse=collapse)
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause(0.2)
        app.bar.open()
        await pilot.pause(0.1)
        if freeze:  # the loaded session out of the collector's scans (the app does not do this)
            gc.collect()
            gc.freeze()
        print(
            f"{label}: {fed:,} events, {len(timeline):,} entries, {app.view.line_count:,} lines"
            f"{', commentary folded' if collapse else ''}"
        )
        with FullCollections() as collections:
            word = await type_word(app, "parser", rounds)
            print(f"  'parser' letter by letter ({app.bar.status}):   {figures(word)}")
            many = await type_word(app, "the", rounds)
            print(f"  'the' letter by letter ({app.bar.status}): {figures(many)}")
            steps = await press_next(app, 10 * rounds)
            print(f"  Enter (next match) on 'the':       {figures(steps)}")
        print(f"  {collections}")
    word_ms = model_search_ms(timeline, "parser", rounds)
    many_ms = model_search_ms(timeline, "the", rounds)
    if freeze:
        gc.unfreeze()
    print(
        f"  model alone (client.find.Finder, median per keystroke): "
        f"'parser' {word_ms:.2f} ms, 'the' {many_ms:.2f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument(
        "--freeze",
        action="store_true",
        help="also type over the 5,000 entries with the loaded session frozen out of collections (gc.freeze)",
    )
    args = parser.parse_args()
    timeline, fed = load(events_count=5_000)
    await run("5,000 events", timeline, fed, collapse=False, rounds=args.rounds)
    await baseline(timeline, args.rounds)
    timeline, fed = load(entries=5_000)
    await run("the model's cap", timeline, fed, collapse=True, rounds=args.rounds)
    if args.freeze:
        label = "the model's cap, frozen after loading"
        await run(label, timeline, fed, collapse=True, rounds=args.rounds, freeze=True)


if __name__ == "__main__":
    asyncio.run(main())
