"""A tool call's preview (``client.preview``) drawn for the terminal: a coloured diff, a command, arguments.

:func:`preview_text` makes the first lines of a preview into one ``rich.text.Text`` for a card (the
attach screen's approval card, the inbox's side pane, the "are you sure?" dialog), ending with "… N more
lines (x shows all)" when there are more; :class:`CallPreviewView` shows all of it, drawing only the lines
on screen (a 10,000-line ``Write`` scrolls without being drawn whole); :class:`CallPreviewPane` shows the
highlighted approval's call beside a list, as much of it as fits.

A diff's lines get their sign and a tinted background (added green, removed red), their content coloured
by the file's language; a file's head shows its name and its +/− counts; a command is coloured as shell.
A span the server redacted (``[REDACTED:email]``) stands out in reverse. Every piece is built with
``Text.append``, never from markup: the text (already terminal-safe in the
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
from textual.widgets import Static

from client.cells import cell_len, tail
from client.models import Approval
from client.preview import Preview, PreviewLine, approval_preview, counts, more_line
from client.textsafe import safe_line
from client.why import REDACTED, why_rows

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


PATH_CELLS = 48
"""A card shows a file's path in this many cells at most, keeping its end (the file's name) so the
+/− counts after it stay in view; the whole call shows it whole."""


PATH_ROOM = 16
"""Cells a file's line keeps beside its path for the +/− counts (a card or pane sizes the path by it)."""


def short_path(path: str, cells: int = PATH_CELLS) -> str:
    """``path``, or "…" and its last ``cells - 1`` cells when it is longer."""
    return path if cell_len(path) <= cells else "…" + tail(path, cells - 1)


REDACTED_STYLE = Style(bold=True, reverse=True, color="magenta")
"""A span the server redacted (``[REDACTED:email]``, ``client.why``) stands out wherever a call is shown."""


def line_text(line: PreviewLine, content: Text | None = None, *, path_cells: int | None = PATH_CELLS) -> Text:
    """One preview line, styled (``content``: its text already coloured by language); a file's path in
    ``path_cells`` cells at most (None: whole); every span the server redacted stands out."""
    out = _line_text(line, content, path_cells=path_cells)
    if "[REDACTED:" in line.text:
        out.highlight_regex(REDACTED.pattern, REDACTED_STYLE)
    return out


def _line_text(line: PreviewLine, content: Text | None, *, path_cells: int | None) -> Text:
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
            path = line.text if path_cells is None else short_path(line.text, path_cells)
            out.append(path, style=FILE)
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


def preview_text(
    preview: Preview, *, limit: int | None, hint: str = "x shows all", path_cells: int | None = PATH_CELLS
) -> Text:
    """The first ``limit`` lines of ``preview`` (None: all), then "… N more lines (hint)" if any follow;
    files' paths in ``path_cells`` cells at most, keeping their end (None: whole)."""
    lines = preview.lines(limit)
    coloured = _coloured(lines)
    out = Text()
    for n, (line, content) in enumerate(zip(lines, coloured, strict=True)):
        if n:
            out.append("\n")
        out.append_text(line_text(line, content, path_cells=path_cells))
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
            text = Text()
            text.append_text(line_text(line, content, path_cells=None))  # its own style becomes a span
            segments = list(text.render(console, end=""))
            self._cache[start + n] = Strip(Segment.apply_style(segments, self.rich_style))
        return self._cache[index]


class CallPreviewPane(Static):
    """The highlighted approval's call beside a list (the inbox on a wide terminal): its tool and session,
    why it is asked (``client.why``: reasoning, the server's ask, the rule, what was redacted), then as many
    lines of its preview as the pane has room for (long lines cut with "…"), and how many more there are
    ("x shows all")."""

    DEFAULT_CSS = """
    CallPreviewPane {
        height: 1fr; padding: 0 1; border-left: tall $panel-lighten-2; overflow: hidden;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.approval: Approval | None = None
        self.session = ""
        self._drawn: tuple[Approval | None, int, int] | None = None

    def show(self, approval: Approval | None, session: str = "") -> None:
        """Show ``approval``'s call (None: say that nothing is highlighted); drawn again only when the
        record or the pane's height changed."""
        self.approval, self.session = approval, session
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        height, width = self.content_size.height, self.content_size.width
        if self._drawn == (self.approval, height, width) or not self.is_mounted:
            return
        self._drawn = (self.approval, height, width)
        approval = self.approval
        if approval is None:
            self.update(Text("No approval highlighted.", style="dim"))
            return
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(safe_line(approval.tool_name or "tool", 40), style="bold")
        if approval.risk_level:
            out.append(f"  risk {safe_line(approval.risk_level, 12)}", style="bold red")
        out.append(f"  {safe_line(self.session, 60)}", style="dim")
        out.append("\n")
        why = why_rows(approval, key="x then o")
        for label, words in why:  # why it is asked (client.why), one row each
            out.append(f"{label.lower()} ", style="dim italic")
            line = Text(words)
            line.highlight_regex(REDACTED.pattern, REDACTED_STYLE)
            out.append_text(line)
            out.append("\n")
        out.append("\n")
        room = max(height - 3 - len(why), 3)  # the head, why, a blank line, and the "more" line
        call = approval_preview(approval)
        limit = room + 1 if call.line_count == room + 1 else room  # never "… 1 more line" in its room
        cells = max(width - PATH_ROOM, 16) if width else PATH_CELLS
        out.append_text(preview_text(call, limit=limit, hint="x shows all", path_cells=cells))
        self.update(out)
