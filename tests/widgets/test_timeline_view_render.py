"""Entry → lines: state readable without colour, widths respected, untrusted text inert."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rich.cells import cell_len
from textual.strip import Strip

from client.entry_words import duration_words
from client.models import Approval, Note
from client.timeline import (
    ApprovalEntry,
    NoteEntry,
    TextEntry,
    TextPhase,
    ToolEntry,
    ToolState,
    UnknownEntry,
)
from widgets.timeline_render import line_plain, render_entry, wrap_plain

AT = datetime(2026, 3, 1, tzinfo=UTC)


def plain(entry: object, width: int = 80, **kw: bool) -> list[str]:
    return [line_plain(line).rstrip() for line in render_entry(entry, width, **kw)]  # type: ignore[arg-type]


def text_entry(body: str, phase: TextPhase) -> TextEntry:
    entry = TextEntry(1, 1, AT, run_id="r", iteration=1, phase=phase)
    entry._append(body)
    return entry


def test_tool_line_is_compact_with_icon_word_and_duration() -> None:
    tool = ToolEntry(1, 1, AT, call_id="a", name="Bash", args_summary="pytest -q", state=ToolState.COMPLETED)
    tool.duration_ms = 1234
    assert plain(tool) == ["✓ Bash  pytest -q  ok 1.2s"]


def test_every_tool_state_is_told_apart_without_colour() -> None:
    lines = {
        state: plain(ToolEntry(1, 1, AT, call_id="a", name="Bash", state=state))[0] for state in ToolState
    }
    assert len({line.split()[0] for line in lines.values()}) == len(ToolState)  # distinct glyphs
    for state, word in [
        (ToolState.RUNNING, "running"),
        (ToolState.COMPLETED, "ok"),
        (ToolState.FAILED, "failed"),
        (ToolState.DENIED, "denied"),
    ]:
        assert lines[state].endswith(word)


def test_every_note_state_is_told_apart_without_colour() -> None:
    states = [
        "pending",
        "claimed",
        "delivered",
        "acknowledged",
        "cancelled",
        "expired",
        "failed",
        "undeliverable",
    ]
    lines = [
        plain(NoteEntry(1, 1, AT, note=Note(note_id="n", state=s, text="stop"), state=s))[0] for s in states
    ]
    assert len(set(lines)) == 8
    assert lines[0].startswith("✉ note sent")
    assert lines[2].startswith("✉ note delivered ✓")


def test_approval_request_and_decision_lines() -> None:
    asked = Approval(id="a", tool_name="Bash", summary="rm -rf build")
    decided = Approval(id="a", tool_name="Bash", status="declined", approver_comment="not now")
    assert plain(ApprovalEntry(1, 1, AT, approval=asked)) == ["⏸ approval requested  Bash  rm -rf build"]
    line = plain(ApprovalEntry(2, 2, AT, approval=decided, decided=True, status="declined"))
    assert line == ["✗ approval declined  Bash  “not now”"]


@pytest.mark.parametrize("width", [12, 20, 33, 80])
def test_lines_never_exceed_the_width(width: int) -> None:
    entries = [
        ToolEntry(1, 1, AT, call_id="a", name="Bash", args_summary="x" * 200, duration_ms=5),
        text_entry("word " * 100, TextPhase.STREAMING),
        text_entry("全角の文字 " * 40, TextPhase.COMMENTARY),
        text_entry("# Title\n\n" + "answer " * 50, TextPhase.FINAL),
        UnknownEntry(1, 1, AT, event_type="x.y", summary="{" * 300),
    ]
    for entry in entries:
        for line in render_entry(entry, width):
            assert cell_len(line_plain(line).rstrip()) <= width


def test_provisional_and_interrupted_text_say_so() -> None:
    assert plain(text_entry("half a sent", TextPhase.STREAMING)) == ["┊ half a sent … streaming"]
    assert plain(text_entry("half a sent", TextPhase.INTERRUPTED)) == ["┊ half a sent ⚠ interrupted"]
    assert plain(text_entry("", TextPhase.STREAMING)) == ["┊ … streaming"]


def test_collapsed_commentary_counts_its_lines() -> None:
    entry = text_entry("line one\nline two\nline three", TextPhase.COMMENTARY)
    assert plain(entry) == ["│ line one", "│ line two", "│ line three"]
    [collapsed] = plain(entry, collapse_commentary=True)
    assert collapsed.startswith("▸ commentary (3 lines)  line one line two")


def test_markdown_answer_is_sanitised_and_links_are_not_live() -> None:
    entry = text_entry("Done [red]x[/] \x1b]0;title\x07\n\n[docs](http://evil.example)", TextPhase.FINAL)
    lines = render_entry(entry, 80)
    text = "\n".join(line_plain(line) for line in lines)
    assert "[red]x[/]" in text and "title" not in text and "\x1b" not in text
    assert "http://evil.example" in text  # the URL is shown, so the reader sees where it goes
    for line in lines:
        for segment in line if isinstance(line, Strip) else []:
            assert segment.style is None or not segment.style.link


def test_durations_read_the_same_in_the_timeline_and_the_export() -> None:
    assert [duration_words(v) for v in (None, 5, 999, 1000, 61_500, 3_600_000)] == [
        "",
        "5ms",
        "999ms",
        "1.0s",
        "1m01s",
        "60m00s",
    ]


def test_wrap_plain_breaks_at_words_folds_long_ones_and_counts_wide_cells() -> None:
    assert wrap_plain("alpha beta gamma delta", 11) == ["alpha beta", "gamma delta"]
    assert wrap_plain("  indented line\n\nnext", 40) == ["  indented line", "", "next"]
    assert wrap_plain("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert wrap_plain("ok " + "y" * 12 + " end", 10) == ["ok", "y" * 10, "yy end"]
    wide = wrap_plain("全角の文字 " * 6, 10)
    assert all(cell_len(line) <= 10 for line in wide) and "".join(wide).count("全") == 6
