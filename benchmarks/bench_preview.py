"""The cost of an approval card for a huge call: a 10,000-line ``Edit``, ``Write`` and ``apply_patch``.

An operator's card shows the first lines of a call's preview (``client.preview``) and says how many more
there are. What it costs, per call, is measured the way a card is drawn: the preview made from the call's
arguments (nothing remembered from a run before), its first lines styled (``widgets.call_preview``:
signs, colours, syntax by file type) and rendered to terminal segments at 80 columns. Printed per call:

* the card: the first draw and the median / max of ``--runs`` draws after it (the syntax highlighter's
  first use, once per process, is timed apart), the peak memory one draw allocates (``tracemalloc``)
  beside the size of the call's text, and what the preview keeps while it is held;
* the whole call (``x``): every line of the preview made (the lazy view then styles only the lines on
  screen), its time and peak memory.

``--lines`` sets the size (10,000 by default; try 100,000 to see what grows with it).

    .venv/bin/python benchmarks/bench_preview.py [--lines 10000] [--runs 20]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from client.preview import Preview, preview  # noqa: E402
from widgets.approvals_panel import CARD_LINES  # noqa: E402
from widgets.call_preview import highlight, preview_text  # noqa: E402


def calls(lines: int) -> dict[str, tuple[str, dict[str, Any], int]]:
    """The three calls (tool, arguments, characters of text they carry), each ``lines`` lines of Python."""
    rng = random.Random(24)
    source = [f"    value_{n} = compute({n}, name='item{n}')  # {rng.random():.6f}" for n in range(lines)]
    edited = list(source)
    for n in range(0, lines, 97):  # about one line in a hundred changes
        edited[n] = edited[n].replace("compute", "calculate")
    old, new = "\n".join(source) + "\n", "\n".join(edited) + "\n"
    body = "\n".join(f"-{a}\n+{b}" if a != b else f" {a}" for a, b in zip(source, edited, strict=True))
    patch = f"*** Begin Patch\n*** Update File: src/big.py\n@@ def build():\n{body}\n*** End Patch\n"
    return {
        "Edit": (
            "Edit",
            {"file_path": "src/big.py", "old_string": old, "new_string": new},
            len(old) + len(new),
        ),
        "Write": ("Write", {"file_path": "src/big.py", "content": old}, len(old)),
        "apply_patch": ("apply_patch", {"input": patch}, len(patch)),
    }


def draw_card(tool: str, args: dict[str, Any], console: Console) -> int:
    """One card, as the screen draws it: the preview made, its first lines styled and rendered."""
    text = preview_text(preview(tool, args), limit=CARD_LINES, hint="x shows all")
    text.no_wrap = True
    return sum(1 for _ in console.render(text))


def whole(tool: str, args: dict[str, Any]) -> int:
    """The whole call (``x``): every line of the preview made."""
    return len(preview(tool, args).lines())


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


def peak(run: Callable[[], object]) -> int:
    """Bytes ``run`` allocates at its peak (what it keeps and what it frees again)."""
    gc.collect()
    tracemalloc.start()
    run()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def kept(tool: str, args: dict[str, Any]) -> tuple[Preview, int]:
    """A preview and the bytes it keeps while held (beyond the call's own arguments)."""
    gc.collect()
    tracemalloc.start()
    made = preview(tool, args)
    made.lines(CARD_LINES)
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return made, held


def mb(size: int) -> str:
    return f"{size / 1e6:.2f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    sink = open(os.devnull, "w")  # noqa: SIM115 (open for the whole run)
    console = Console(width=80, file=sink, force_terminal=True, color_system="truecolor")
    warm = timed(lambda: highlight(["x = 1"], "python"))
    print(
        f"A card ({CARD_LINES} lines of the preview) for calls of {args.lines:,} lines, {args.runs} runs each"
    )
    print(f"(the Python highlighter's first use, once per process: {warm:.1f} ms; not in the figures below)")
    print()
    header = f"{'call':<12}{'text':>10}{'first':>9}{'median':>9}{'max':>9}{'card peak':>12}{'kept':>10}"
    print(header + f"{'whole: time':>13}{'peak':>10}")
    for name, (tool, call, size) in calls(args.lines).items():
        card = partial(draw_card, tool, call, console)
        first = timed(card)
        runs = [timed(card) for _ in range(args.runs)]
        card_peak = peak(card)
        made, held = kept(tool, call)
        everything = partial(whole, tool, call)
        whole_ms = statistics.median(timed(everything) for _ in range(3))
        whole_peak = peak(everything)
        print(
            f"{name:<12}{mb(size):>10}{first:>7.1f}ms{statistics.median(runs):>7.1f}ms{max(runs):>7.1f}ms"
            f"{mb(card_peak):>12}{mb(held):>10}{whole_ms:>11.1f}ms{mb(whole_peak):>10}"
            f"   {made.first_line}, {made.line_count:,} lines"
        )
    print()
    print(
        "text: the characters the call carries; card peak: allocated at the peak of one draw; kept: held by"
    )
    print("the preview between draws. Budget: a card in 50 ms or less.")


if __name__ == "__main__":
    main()
