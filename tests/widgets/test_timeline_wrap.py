"""A tool line cut to the width can be read in full: ``l`` on the attach screen sets the view's
``wrap_lines``, which renders tool, approval and unknown-event lines wrapped behind an indent."""

from __future__ import annotations

from client.timeline import ToolEntry, ToolState
from widgets.timeline_render import line_plain, render_entry

ARGS = "kubectl rollout restart deployment/payments-api --namespace production-eu-west-1"


def _entry() -> ToolEntry:
    return ToolEntry(1, 1, None, name="Bash", args_summary=ARGS, state=ToolState.COMPLETED, duration_ms=1200)


def test_cut_by_default_and_whole_when_wrapped() -> None:
    (cut,) = [line_plain(line) for line in render_entry(_entry(), 40)]
    assert cut.endswith("…") and "production-eu-west-1" not in cut
    lines = [line_plain(line) for line in render_entry(_entry(), 40, wrap=True)]
    assert len(lines) > 1 and all(len(line) <= 40 for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])
    joined = " ".join(line.strip() for line in lines)
    assert ARGS in joined and joined.endswith("ok 1.2s")


def test_a_line_that_fits_is_one_line_either_way() -> None:
    short = ToolEntry(1, 1, None, name="Read", args_summary="a.py", state=ToolState.COMPLETED)
    assert [line_plain(x) for x in render_entry(short, 80, wrap=True)] == [
        line_plain(x) for x in render_entry(short, 80)
    ]
