"""A tool call's preview (``client.preview``) drawn for the terminal: a coloured diff, a command, arguments.

:func:`preview_text` makes the first lines of a preview into one ``rich.text.Text`` for a card (the
attach screen's approval card, the inbox's side pane, the "are you sure?" dialog), ending with "… N more
lines (x shows all)" when there are more; :class:`CallPreviewView` shows all of it, drawing only the lines
on screen (a 10,000-line ``Write`` scrolls without being drawn whole).

A diff's lines get their sign and a tinted background (added green, removed red), their content coloured
by the file's language; a file's head shows its name and its +/− counts; a command is coloured as shell.
Every piece is built with ``Text.append``, never from markup: the text (already terminal-safe in the
model) stays literal, whatever brackets or escapes an agent put in a file name or a line.
"""

from __future__ import annotations

from functools import lru_cache

from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from client.cells import cell_len
from client.preview import Preview, PreviewLine, counts, more_line

SYNTAX_THEME = "ansi_dark"
"""Colours in the terminal's own palette, on the terminal's background."""

ADD = Style(color="green", bold=True)
DEL = Style(color="red", bold=True)
ADD_LINE = Style(bgcolor="#10301a")
DEL_LINE = Style(bgcolor="#3a1418")
HUNK = Style(color="cyan", dim=True)
META = Style(dim=True, italic=True)
FILE = Style(bold=True, color="bright_white")
LABEL = Style(dim=True, italic=True)
WHY = Style(color="yellow", bold=True)
FIELD = Style(dim=True)
MORE = Style(dim=True, italic=True)

_SIGNS = {"add": ("+", ADD, ADD_LINE), "del": ("-", DEL, DEL_LINE), "ctx": (" ", Style(dim=True), Style())}


@lru_cache(maxsize=32)
def _syntax(lang: str) -> Syntax | None:
    """One highlighter per language ("" or one Pygments does not know: none)."""
    if not lang:
        return None
    lexer = Syntax("", lang, theme=SYNTAX_THEME).lexer  # looked up once (Syntax looks a name up per use)
    return None if lexer is None else Syntax("", lexer, theme=SYNTAX_THEME)


def highlight(lines: list[str], lang: str) -> list[Text]:
    """``lines`` coloured as ``lang`` (lexed together, so a construct over two lines reads right), one
    ``Text`` per line; plain ``Text`` when the language is unknown."""
    syntax = _syntax(lang)
    if syntax is None or not lines:
        return [Text(line) for line in lines]
    try:
        done = syntax.highlight("\n".join(lines))
    except Exception:  # a lexer bug must not cost the operator the line
        return [Text(line) for line in lines]
    done.rstrip()
    out = list(done.split("\n", allow_blank=True))
    for piece in out:
        piece.style = ""
    return (out + [Text("") for _ in range(len(lines) - len(out))])[: len(lines)]


def _run_key(line: PreviewLine) -> tuple[str, str] | None:
    if line.kind == "command":
        return ("command", line.lang)
    if line.kind in ("add", "del", "ctx") and line.lang:
        return ("diff", line.lang)
    return None


def _coloured(lines: list[PreviewLine]) -> list[Text | None]:
    """The content of every diff and command line coloured by its language, runs of the same language
    lexed together; None for the other kinds."""
    out: list[Text | None] = [None] * len(lines)
    start = 0
    while start < len(lines):
        key = _run_key(lines[start])
        end = start + 1
        if key is not None:
            while end < len(lines) and _run_key(lines[end]) == key:
                end += 1
            for n, text in enumerate(highlight([x.text for x in lines[start:end]], key[1])):
                out[start + n] = text
        start = end
    return out


def line_text(line: PreviewLine, content: Text | None = None) -> Text:
    """One preview line, styled (``content``: its text already coloured by language)."""
    body = content if content is not None else Text(line.text)
    match line.kind:
        case "add" | "del" | "ctx":
            sign, sign_style, line_style = _SIGNS[line.kind]
            out = Text(style=line_style)
            out.append(sign, style=sign_style)
            if line.kind == "ctx" and content is None:
                body.stylize("dim")
            out.append_text(body)
            return out
        case "file":
            out = Text()
            out.append("▌", style=ADD if line.added and not line.removed else HUNK)
            out.append(line.text, style=FILE)
            said = counts(line.added, line.removed, line.label)
            if said.startswith("+") and "−" in said:
                plus, minus = said.split(" ", 1)
                out.append("  ")
                out.append(plus, style=ADD)
                out.append(" ")
                out.append(minus, style=DEL)
            elif said:
                out.append("  ")
                out.append(said, style=ADD)
            if line.label:
                out.append(f"  {line.label}", style=LABEL)
            return out
        case "hunk":
            return Text(line.text, style=HUNK)
        case "meta":
            return Text(line.text, style=META)
        case "command":
            out = Text()
            out.append(f"{line.label or ' '} ", style=Style(bold=True, color="bright_white"))
            out.append_text(body)
            return out
        case "field":
            out = Text()
            out.append(f"{line.label}: ", style=FIELD)
            out.append(line.text)
            return out
        case "why":
            out = Text()
            out.append("⚠ ", style=WHY)
            out.append(line.text, style=WHY)
            return out
    return Text(line.text)


def preview_text(preview: Preview, *, limit: int | None, hint: str = "x shows all") -> Text:
    """The first ``limit`` lines of ``preview`` (None: all), then "… N more lines (hint)" if any follow."""
    lines = preview.lines(limit)
    coloured = _coloured(lines)
    out = Text()
    for n, (line, content) in enumerate(zip(lines, coloured, strict=True)):
        if n:
            out.append("\n")
        out.append_text(line_text(line, content))
    more = preview.more(limit)
    if more:
        out.append("\n")
        out.append(more_line(more, hint), style=MORE)
    return out


class CallPreviewView(ScrollView, can_focus=True):
    """All of a preview, scrolled: only the lines on screen are styled and drawn (and kept, a screenful
    at a time), so the whole of a 10,000-line call opens at once."""

    DEFAULT_CSS = """
    CallPreviewView { height: auto; max-height: 100%; }
    """

    def __init__(self, preview: Preview, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.preview = preview
        self._lines = preview.lines()
        self._cache: dict[int, Strip] = {}
        width = max((cell_len(line.plain()) for line in self._lines), default=0) + 4
        self.virtual_size = Size(width, len(self._lines))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        strip = self._cache.get(index)
        if strip is None:
            strip = self._draw(index)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)

    def _draw(self, index: int) -> Strip:
        if len(self._cache) > 400:
            self._cache.clear()
        # The screenful around the line is coloured together (a construct over two lines reads right).
        start = max(index - index % 50, 0)
        chunk = self._lines[start : start + 50]
        console = self.app.console
        for n, (line, content) in enumerate(zip(chunk, _coloured(chunk), strict=True)):
            segments = list(line_text(line, content).render(console, end=""))
            self._cache[start + n] = Strip(Segment.apply_style(segments, self.rich_style))
        return self._cache[index]
