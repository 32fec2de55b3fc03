"""A call's preview drawn for the terminal: colours that say what changes, untrusted text kept literal, and
the whole of a long call shown without drawing all of it."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.style import Style
from textual.app import App, ComposeResult

from client.preview import preview
from widgets.approvals_panel import card_lines
from widgets.call_preview import ADD, DEL, CallPreviewView, preview_text, short_path

HOSTILE = "[bold red]pwned[/] \x1b]8;;http://x\x07click\x1b]8;;\x07 [link=http://x]here[/link]"


def _styles(text: Any) -> list[Style]:
    console = Console()
    return [
        console.get_style(span.style) if isinstance(span.style, str) else span.style for span in text.spans
    ]


def test_signs_are_coloured_and_counts_shown() -> None:
    text = preview_text(
        preview("Edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}), limit=None
    )
    assert text.plain.splitlines() == ["▌a.py  +1 −1", "-x = 1", "+x = 2"]
    lines = text.split("\n")
    assert any(span.style == DEL and span.end - span.start == 1 for span in lines[1].spans)
    assert any(span.style == ADD and span.end - span.start == 1 for span in lines[2].spans)


def test_markup_and_escapes_in_a_path_and_lines_stay_literal() -> None:
    call = preview("Edit", {"file_path": f"{HOSTILE}.py", "old_string": HOSTILE, "new_string": "ok"})
    text = preview_text(call, limit=None, path_cells=None)
    assert text.plain.count("[bold red]pwned[/]") == 2 and "[link=http://x]here[/link]" in text.plain
    assert "\x1b" not in text.plain and "\x07" not in text.plain
    console = Console()
    for style in _styles(text):
        assert not style.link  # no hyperlink made of the agent's text
    at = text.plain.index("pwned")
    for span in text.spans:  # the words inside the agent's "[bold red]" are not made bold red
        if span.start <= at < span.end:
            style = console.get_style(span.style) if isinstance(span.style, str) else span.style
            assert not (style.bold and style.color is not None and style.color.name == "red")


def test_a_long_path_keeps_its_end_in_a_card() -> None:
    path = "services/payments/internal/adapters/gateway/stripe/refunds/idempotency.py"
    shown = short_path(path, 30)
    assert shown.startswith("…") and shown.endswith("refunds/idempotency.py") and len(shown) == 30
    assert short_path("a.py", 30) == "a.py"


def test_a_card_says_how_many_lines_follow() -> None:
    call = preview("Write", {"file_path": "big.txt", "content": "".join(f"row {n}\n" for n in range(1234))})
    lines = preview_text(call, limit=4, hint="x shows all").plain.splitlines()
    assert lines[-1] == "… 1,231 more lines (x shows all)" and len(lines) == 5


def test_a_card_grows_with_the_terminal() -> None:
    assert [card_lines(h) for h in (10, 24, 32, 50, 200)] == [3, 5, 7, 11, 16]


class _Host(App[None]):
    def __init__(self, view: CallPreviewView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield self.view


async def test_the_whole_of_a_long_write_scrolls_to_its_last_line() -> None:
    content = "".join(f"row {n}\n" for n in range(10_000))
    view = CallPreviewView(preview("Write", {"file_path": "big.csv", "content": content}))
    async with _Host(view).run_test(size=(60, 20)) as pilot:
        assert view.virtual_size.height == 10_001
        assert view.render_line(0).text.startswith("▌big.csv  +10,000 lines")
        view.scroll_end(animate=False)
        await pilot.pause()
        last = view.size.height - 1
        assert view.render_line(last).text.rstrip() == "+row 9999"
