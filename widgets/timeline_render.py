"""Turn one timeline entry into terminal lines (pure: no widget state, no I/O).

:func:`render_entry` gives the lines of one :mod:`client.timeline` entry wrapped to a width. A line is
either a single-line ``rich.text.Text`` (cheap to keep; rendered to a ``Strip`` on demand and cached by
the view) or a ready ``Strip`` (Markdown final answers, which Rich lays out itself).

Every piece of untrusted text (model output, tool names and arguments, notes, approval summaries, unknown
event bodies) goes through :func:`client.textsafe.safe_text` and into ``Text`` objects, never into a markup
string, so Rich markup, ANSI/OSC escapes and bidi controls show literally or as U+FFFD. Markdown answers are
sanitised before parsing and rendered without hyperlinks (a link shows its URL; it cannot become an OSC 8
link).

State is carried by glyphs and words as well as colour, so ``NO_COLOR`` loses nothing:

=========================  ==============================================================
streaming model text       ``┊`` gutter, italic, ends with ``… streaming``
commentary (narration)     ``│`` gutter, dim; collapsed: ``▸ commentary (N lines)``
final answer               ``● answer`` header, ``┃`` gutter, Markdown
interrupted text           ``┊`` gutter, ends with ``⚠ interrupted``
tool call                  ``◌ running`` / ``✓ ok`` / ``✗ failed`` / ``⊘ denied`` + duration
approval                   ``⏸ approval requested`` / ``✓ approval approved … by dana`` / ``✗ … declined``
note                       ``✉ note <state>`` with the state's glyph
unknown event              ``? unknown event <type>`` (dim)
highlighted (cursor) entry ``▌`` in the first cell of each of its lines, bold on a tint
find matches               underlined on a tint; the current match's in reverse
new since you last looked  ``── new since you last looked (14:02) ───`` above the first new entry,
                           the digest's lines (``client.digest``) above it after a while away
=========================  ==============================================================

The last two are laid over cached lines by :func:`cursor_strip` and :func:`highlight_strip` (the view
decorates only the lines on screen). :func:`copy_text` is an entry as read, whole, for the clipboard.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable

from rich.cells import cell_len, chop_cells
from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from client.entry_words import (
    RUN_WORDS,
    TOOL_WORDS,
    Reading,
    approval_words,
    by_rule_words,
    decider_part,
    duration_words,
    note_words,
    session_words,
)
from client.textsafe import safe_line, safe_text
from client.timeline import (
    ApprovalEntry,
    DroppedEntry,
    NoteEntry,
    RunEntry,
    RunStatus,
    SessionEntry,
    TextEntry,
    TextPhase,
    TimelineEntry,
    ToolEntry,
    ToolState,
    UnknownEntry,
)
from client.views import View
from widgets.badges import delivery_route

RenderedLine = Text | Strip
"""One terminal line: a single-line Text (rendered lazily) or a ready Strip."""

GUTTER_WIDTH = 2
MIN_WIDTH = 12

STYLE_STREAMING = Style(italic=True)
STYLE_COMMENTARY = Style(dim=True)
STYLE_FINAL_HEADER = Style(bold=True, color="bright_green")
STYLE_FINAL_GUTTER = Style(bold=True, color="bright_green")
STYLE_MARKER = Style(dim=True, italic=True)
STYLE_DIM = Style(dim=True)
STYLE_NAME = Style(bold=True)
STYLE_OK = Style(color="green", bold=True)
STYLE_BAD = Style(color="red", bold=True)
STYLE_WAIT = Style(color="yellow", bold=True)
STYLE_RUN = Style(color="cyan", bold=True)

_TOOL_LOOK: dict[ToolState, tuple[str, Style]] = {
    ToolState.RUNNING: ("◌", STYLE_WAIT),
    ToolState.COMPLETED: ("✓", STYLE_OK),
    ToolState.FAILED: ("✗", STYLE_BAD),
    ToolState.DENIED: ("⊘", STYLE_BAD),
}
"""Glyph and style per tool state; the words are ``client.entry_words`` (what find searches too)."""

NOTE_LOOK: dict[str, tuple[str, Style]] = {
    "pending": ("◷", STYLE_WAIT),
    "claimed": ("→", STYLE_WAIT),
    "delivered": ("✓", STYLE_OK),
    "acknowledged": ("✓✓", STYLE_OK),
    "cancelled": ("⊘", STYLE_DIM),
    "expired": ("◌", STYLE_DIM),
    "failed": ("✗", STYLE_BAD),
    "undeliverable": ("⊗", STYLE_BAD),
}
"""Glyph and style per note state: the same glyphs as the notes panel (``widgets.badges.NOTE_BADGES``)."""

_APPROVAL_LOOK: dict[str, tuple[str, Style]] = {
    "pending": ("⏸", STYLE_WAIT),
    "approved": ("✓", STYLE_OK),
    "declined": ("✗", STYLE_BAD),
    "expired": ("⌛", STYLE_DIM),
    "cancelled": ("⊘", STYLE_DIM),
}

_RUN_LOOK: dict[RunStatus, tuple[str, Style]] = {
    RunStatus.RUNNING: ("▶", STYLE_RUN),
    RunStatus.COMPLETED: ("■", STYLE_OK),
    RunStatus.FAILED: ("✗", STYLE_BAD),
    RunStatus.CANCELLED: ("⊘", STYLE_BAD),
}


def _one_line(parts: list[tuple[str, Style | None]], width: int) -> Text:
    """Assemble a single line from (untrusted-safe text, style) parts and cut it to ``width``."""
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    for part, style in parts:
        text.append(part, style)
    text.truncate(width, overflow="ellipsis")
    return text


_TOKEN = re.compile(r"\s*\S+\s*")


def wrap_plain(body: str, width: int) -> list[str]:
    """Greedy word wrap by terminal cells (wide characters count 2); words longer than a line are folded.

    Much cheaper than ``Text.wrap`` for the one-style bodies the timeline wraps on every streamed frame.
    """
    width = max(width, 1)
    lines: list[str] = []
    for paragraph in body.split("\n"):
        # Printable ASCII is one cell a character: its lengths are counted, not looked up.
        cells: Callable[[str], int] = len if paragraph.isascii() and paragraph.isprintable() else cell_len
        if cells(paragraph) <= width:
            lines.append(paragraph.rstrip())
            continue
        current = ""
        current_len = 0
        for match in _TOKEN.finditer(paragraph):
            token = match.group()
            word = token.rstrip()
            word_len = cells(word)
            if current_len + word_len <= width:
                current += token
                current_len += cells(token)
                continue
            if current.strip():
                lines.append(current.rstrip())
            token = token.lstrip()
            word = word.lstrip()
            if cells(word) > width:
                chunks = chop_cells(word, width)
                lines.extend(chunks[:-1])
                token = chunks[-1] + token[len(word) :]
            current = token
            current_len = cells(token)
        lines.append(current.rstrip())
    return lines


def _fit(parts: list[tuple[str, Style | None]], width: int, wrap: bool) -> list[RenderedLine]:
    """One line cut to ``width`` (``… ``), or with ``wrap`` the whole of it on as many lines as it takes,
    continuation lines indented by two cells."""
    line = _one_line(parts, width)
    if not wrap:
        return [line]
    full = Text(end="")
    for part, style in parts:
        full.append(part, style)
    if full.cell_len <= width:
        return [line]
    first = full.wrap(_measure_console(width), width)[0]
    rest = full[len(first.plain) :]
    rest = rest[len(rest.plain) - len(rest.plain.lstrip()) :]
    out: list[RenderedLine] = [_nowrap(first)]
    for more in rest.wrap(_measure_console(width), max(width - 2, 1)):
        out.append(_nowrap(Text.assemble("  ", more)))
    return out


def _nowrap(text: Text) -> Text:
    text.no_wrap = True
    text.end = ""
    return text


def _wrap(body: str, width: int, style: Style, gutter: str, gutter_style: Style) -> list[Text]:
    """Wrap sanitised ``body`` to ``width`` behind a gutter; styles go on spans (a bare base is dropped)."""
    inner = max(width - GUTTER_WIDTH, 1)
    return [
        Text.assemble((gutter, gutter_style), (line, style), no_wrap=True, end="")
        for line in wrap_plain(body, inner)
    ]


_consoles: dict[int, Console] = {}


def _measure_console(width: int) -> Console:
    """A private, output-less console for wrapping and Markdown layout (no terminal is touched)."""
    console = _consoles.get(width)
    if console is None:
        if len(_consoles) > 16:
            _consoles.clear()
        console = Console(
            width=width,
            file=io.StringIO(),
            color_system="truecolor",
            force_terminal=False,
            legacy_windows=False,
            emoji=False,
            highlight=False,
            markup=False,
        )
        _consoles[width] = console
    return console


def _markdown_lines(body: str, width: int) -> list[RenderedLine]:
    inner = max(width - GUTTER_WIDTH, 1)
    console = _measure_console(inner)
    markdown = Markdown(body, hyperlinks=False)
    options = console.options.update(width=inner, highlight=False, markup=False)
    gutter = Segment("┃ ", STYLE_FINAL_GUTTER)
    lines: list[RenderedLine] = []
    for segments in console.render_lines(markdown, options, pad=False):
        clean = [s for s in segments if not s.control]
        lines.append(Strip([gutter, *clean]))
    # Rich pads Markdown with blank lines around blocks: drop trailing blank ones.
    while len(lines) > 1 and isinstance(lines[-1], Strip) and not lines[-1].text[GUTTER_WIDTH:].strip():
        lines.pop()
    return lines


def _render_text(entry: TextEntry, width: int, collapse_commentary: bool) -> list[RenderedLine]:
    body = safe_text(entry.text)
    lines: list[RenderedLine] = []
    if entry.dropped_chars:
        lines.append(
            _one_line([(f"… {entry.dropped_chars} earlier characters dropped", STYLE_MARKER)], width)
        )
    phase = entry.phase
    if phase is TextPhase.FINAL:
        lines.append(_one_line([("● answer", STYLE_FINAL_HEADER)], width))
        lines.extend(_markdown_lines(body, width) if body.strip() else [])
        return lines
    if phase is TextPhase.COMMENTARY:
        wrapped = _wrap(body, width, STYLE_COMMENTARY, "│ ", STYLE_COMMENTARY)
        if collapse_commentary:
            return [*lines, collapsed_commentary(entry, width, len(wrapped))]
        return [*lines, *wrapped]
    # Streaming or interrupted: provisional text.
    wrapped = _wrap(body, width, STYLE_STREAMING, "┊ ", STYLE_MARKER) if body else []
    suffix = ("… streaming", STYLE_MARKER) if phase is TextPhase.STREAMING else ("⚠ interrupted", STYLE_WAIT)
    if wrapped and wrapped[-1].cell_len + 1 + len(suffix[0]) <= width:
        wrapped[-1].append(" ")
        wrapped[-1].append(*suffix)
    else:
        wrapped.append(_one_line([("┊ ", STYLE_MARKER), suffix], width))
    return [*lines, *wrapped]


def collapsed_commentary(entry: TextEntry, width: int, count: int) -> Text:
    """The one line a folded commentary block shows: how long it is and how it starts.

    ``count`` is the expanded block's line count (the view passes the count it already rendered).
    """
    width = max(width, MIN_WIDTH)
    word = "line" if count == 1 else "lines"
    preview = safe_line(entry.text[: width * 2]).strip()
    return _one_line(
        [(f"▸ commentary ({count} {word})", STYLE_COMMENTARY), ("  " + preview, STYLE_COMMENTARY)], width
    )


def _render_tool(entry: ToolEntry, width: int, wrap: bool = False, whole: bool = False) -> list[RenderedLine]:
    icon, style = _TOOL_LOOK[entry.state]
    parts: list[tuple[str, Style | None]] = [
        (f"{icon} ", style),
        (safe_line(entry.name) or "tool", STYLE_NAME),
    ]
    if entry.args_summary:
        parts.append(("  " + safe_line(entry.args_summary), None))
    parts.append(("  " + TOOL_WORDS[entry.state], style))
    if entry.duration_ms is not None:
        parts.append((" " + duration_words(entry.duration_ms), STYLE_DIM))
    if (whole or entry.state is not ToolState.COMPLETED) and entry.result_summary:
        parts.append(("  — " + safe_line(entry.result_summary), STYLE_DIM))
    return _fit(parts, width, wrap or whole)


def _render_approval(
    entry: ApprovalEntry,
    width: int,
    wrap: bool = False,
    whole: bool = False,
    you: bool = False,
    recorded: bool = True,
) -> list[RenderedLine]:
    approval = entry.approval
    tool = safe_line(approval.tool_name or "tool") if approval else "tool"
    summary = safe_line(approval.summary or "") if approval else ""
    if not entry.decided:
        icon, style = _APPROVAL_LOOK["pending"]
        parts: list[tuple[str, Style | None]] = [
            (f"{icon} {approval_words(entry)}  ", style),
            (tool, STYLE_NAME),
        ]
        if summary:
            parts.append(("  " + summary, None))
        if entry.status != "pending":
            parts.append((f"  (now {safe_line(entry.status)})", STYLE_DIM))
        return _fit(parts, width, wrap)
    status = entry.status
    icon, style = _APPROVAL_LOOK.get(status, ("•", STYLE_DIM))
    parts = [(f"{icon} {safe_line(approval_words(entry))}  ", style), (tool, STYLE_NAME)]
    by_rule = by_rule_words(entry)
    if by_rule is not None:  # nobody was asked: which rule allowed what, and who set the rule
        parts.append(("  " + safe_line(by_rule[0]), STYLE_DIM))
        parts.append(("  " + by_rule[1], None))
    else:
        who = decider_part(approval, you=you, recorded=recorded) if approval is not None else None
        if who:
            parts.append(("  " + who, STYLE_DIM))
        if whole and summary:
            parts.append(("  " + summary, None))
    if approval is not None and approval.approver_comment and by_rule is None:
        parts.append(("  “" + safe_line(approval.approver_comment) + "”", None))
    return _fit(parts, width, wrap or whole)


def _render_note(
    entry: NoteEntry, width: int, whole: bool = False, by: str | None = None
) -> list[RenderedLine]:
    icon, style = NOTE_LOOK.get(entry.state, ("•", STYLE_DIM))
    note = entry.note
    parts: list[tuple[str, Style | None]] = [(f"✉ {safe_line(note_words(entry.state))} {icon}", style)]
    if by:
        parts.append((f" by {safe_line(by, 40)}", STYLE_DIM))
    if note is not None:
        parts.append(("  “" + safe_line(note.text, None if whole else 80) + "”", None))
        extra = []
        route = delivery_route(note)
        if route:
            extra.append(route)
        if note.undeliverable_reason:
            extra.append(safe_line(note.undeliverable_reason, None if whole else 60))
        if extra:
            parts.append(("  " + " · ".join(extra), STYLE_DIM))
    return _fit(parts, width, whole)


def _render_run(entry: RunEntry, width: int, whole: bool = False) -> list[RenderedLine]:
    icon, style = _RUN_LOOK[entry.status]
    parts: list[tuple[str, Style | None]] = [(f"{icon} {RUN_WORDS[entry.status]}", style)]
    if entry.detail:
        parts.append(("  " + safe_line(entry.detail), None))
    return _fit(parts, width, whole)


def _render_session(entry: SessionEntry, width: int, whole: bool = False) -> list[RenderedLine]:
    if entry.ended:
        parts: list[tuple[str, Style | None]] = [(f"■ {session_words(entry)}", STYLE_RUN)]
        if entry.reason:
            parts.append(("  " + safe_line(entry.reason), STYLE_DIM))
        return _fit(parts, width, whole)
    return [_one_line([(f"● {session_words(entry)}", STYLE_RUN)], width)]


def render_marker(count: int, width: int, not_loaded: int = 0) -> Text:
    """The first line when earlier entries are gone (dropped by the model or past the view's line cap)
    or were never loaded (a long session opened at its newest events): say so, and where to get them."""
    parts: list[str] = []
    if not_loaded:
        parts.append(f"… {not_loaded:,} earlier events not loaded; preloop sessions export has all")
    if count:
        word = "entry" if count == 1 else "entries"
        parts.append(f"{count} earlier {word} dropped" if parts else f"… {count} earlier {word} dropped")
    return _one_line([(" · ".join(parts), STYLE_MARKER)], max(width, MIN_WIDTH))


STYLE_RULE = Style(bold=True, color="cyan")
STYLE_DIGEST_LABEL = Style(bold=True)
RULE = "─"


def render_since_rule(
    looked: str, width: int, *, earlier_than_loaded: bool = False, between: int | None = None
) -> Text:
    """The rule above the first entry that is new since the operator last looked (``looked``: "14:02"):
    ``── new since you last looked (14:02) ─────``. A mark older than everything loaded says how many
    events lie between it and the first one shown, where the server can tell, or that it is earlier."""
    words = f"new since you last looked ({looked})"
    if earlier_than_loaded:
        if between:
            noun = "event" if between == 1 else "events"
            words += f" · {between:,} {noun} between not loaded"
        elif between is None:
            words += " · earlier than the loaded part"
    head = f"{RULE * 2} {words} "
    width = max(width, MIN_WIDTH)
    fill = max(width - cell_len(head), 2)
    return _one_line([(head + RULE * fill, STYLE_RULE)], width)


def render_digest_line(line: str, width: int) -> Text:
    """One line of the digest shown above the rule (``client.digest.digest_lines``: already terminal-safe),
    its first word ("Away", "Approvals:", "Note", "Agent:") in bold, cut to the width."""
    label, sep, rest = line.partition(" ")
    return _one_line([("  ", None), (label + sep, STYLE_DIGEST_LABEL), (rest, None)], max(width, MIN_WIDTH))


def render_empty_view(view: View, hidden: int, width: int) -> Text:
    """The one line a view with no entry in it shows: that it is empty on purpose, which view it is, and
    how many entries the other views hold."""
    words = f"∅ {view.nothing} · view: {view.label}"
    if hidden:
        words += f" · {hidden:,} {'entry' if hidden == 1 else 'entries'} in other views"
    return _one_line([(words, STYLE_MARKER)], max(width, MIN_WIDTH))


def render_entry(
    entry: TimelineEntry,
    width: int,
    *,
    collapse_commentary: bool = False,
    wrap: bool = False,
    whole: bool = False,
    reading: Reading = Reading(),  # noqa: B008 (frozen)
) -> list[RenderedLine]:
    """The lines of one entry at ``width`` cells; the view calls it again when the entry changes.
    ``wrap`` shows tool, approval and unknown-event lines in full instead of cut to one line; ``whole``
    shows every line in full and also what the compact line leaves out (a finished tool's result, the
    summary of a decided approval, a long note): what find searches, shown for its current match.
    ``reading`` says who reads (``client.entry_words.Reading``): a decision of this operator reads "by you",
    others the decider's name; a colleague's note "by dana"; on a server that keeps no decider, a decision
    nobody is named for says so (``client.present.NOT_RECORDED``). Find searches the same words."""
    width = max(width, MIN_WIDTH)
    if isinstance(entry, TextEntry):
        return _render_text(entry, width, collapse_commentary and not whole)
    if isinstance(entry, ToolEntry):
        return _render_tool(entry, width, wrap, whole)
    if isinstance(entry, ApprovalEntry):
        you = reading.you(entry.approval)
        return _render_approval(entry, width, wrap, whole, you, reading.deciders_recorded)
    if isinstance(entry, NoteEntry):
        return _render_note(entry, width, whole, reading.sender(entry.note))
    if isinstance(entry, RunEntry):
        return _render_run(entry, width, whole)
    if isinstance(entry, SessionEntry):
        return _render_session(entry, width, whole)
    if isinstance(entry, DroppedEntry):
        return [render_marker(entry.count, width)]
    assert isinstance(entry, UnknownEntry)
    parts: list[tuple[str, Style | None]] = [
        ("? unknown event ", STYLE_DIM),
        (safe_line(entry.event_type, 60), STYLE_DIM),
    ]
    if entry.summary:
        parts.append(("  " + safe_line(entry.summary), STYLE_DIM))
    return _fit(parts, width, wrap or whole)


_COPY_WIDTH = 100_000
"""Wide enough that no line of an entry is cut: the model caps every one-line field far below it."""


def copy_text(entry: TimelineEntry) -> str:
    """The entry as the operator reads it, plain and whole (not cut to the window, commentary not folded):
    what copying the highlighted entry puts on the clipboard. Terminal-safe like everything shown."""
    if isinstance(entry, TextEntry):
        return safe_text(entry.text).strip("\n").rstrip()
    lines = render_entry(entry, _COPY_WIDTH, whole=True)
    return "\n".join(line_plain(line).rstrip() for line in lines)


CURSOR_MARK = "▌"
"""The first cell of every line of the highlighted entry: the cursor without colour (``NO_COLOR``)."""


def cursor_strip(strip: Strip, width: int, mark_style: Style, style: Style, pad_style: Style) -> Strip:
    """A line of the highlighted (cursor) entry: :data:`CURSOR_MARK` in the first cell, the line moved one
    cell right (cut with ``…`` when it no longer fits), ``style`` laid over it and the rest of the width
    filled with ``pad_style``, so the highlight is a bar across the view."""
    room = max(width - 1, 1)
    if strip.cell_length > room:
        last = strip.crop(room - 1, room)
        tail_style = next((seg.style for seg in last), None)
        strip = Strip.join([strip.crop(0, room - 1), Strip([Segment("…", tail_style)], 1)])
    body = [
        Segment(text, style if seg_style is None else seg_style + style, control)
        for text, seg_style, control in strip
    ]
    if strip.cell_length < room:
        body.append(Segment(" " * (room - strip.cell_length), pad_style))
    return Strip([Segment(CURSOR_MARK, mark_style), *body], room + 1)


def highlight_strip(strip: Strip, spans: list[tuple[int, int]], style: Style, shift: int = 0) -> Strip:
    """``style`` laid over the characters of ``strip`` in ``spans`` (character offsets into the line's
    plain text, moved right by ``shift``): how find marks its matches without re-rendering the line."""
    if not spans:
        return strip
    out: list[Segment] = []
    index = 0
    position = 0
    for segment in strip:
        text, seg_style, control = segment
        end = position + len(text)
        if control or index >= len(spans):
            out.append(segment)
            position = end
            continue
        cut = position
        while index < len(spans):
            start, stop = spans[index][0] + shift, spans[index][1] + shift
            if start >= end:
                break
            low, high = max(start, cut), min(stop, end)
            if low < high:
                if low > cut:
                    out.append(Segment(text[cut - position : low - position], seg_style))
                laid = style if seg_style is None else seg_style + style
                out.append(Segment(text[low - position : high - position], laid))
                cut = high
            if stop > end:
                break  # the span goes on into the next segment
            index += 1
        if cut < end:
            out.append(Segment(text[cut - position :], seg_style))
        position = end
    return Strip(out, strip.cell_length)


def line_to_strip(line: RenderedLine, console: Console) -> Strip:
    """A stored line as a Strip (Text lines are rendered here, once per cache miss)."""
    if isinstance(line, Strip):
        return line
    return Strip(list(line.render(console)), line.cell_len)


def line_plain(line: RenderedLine) -> str:
    """The plain characters of a line (tests and copy use it)."""
    return line.text if isinstance(line, Strip) else line.plain
