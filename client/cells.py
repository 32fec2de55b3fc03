"""How many terminal cells text takes: the command line's tables and the titles fitted to them.

``len()`` counts characters, but a terminal shows a CJK character or most emoji in two cells and a
combining accent in none, so a table padded with ``len`` lets every column after a wide title drift.
Text is measured here in *clusters*: a character with the zero-width ones that follow it (combining marks,
format characters), a variation selector 16 (which widens a one-cell emoji such as ``⚠️``), and what a
zero-width joiner glues on (``👨‍👩‍👧`` is one two-cell cluster). Cutting never splits a cluster.

The widths follow the rules of Rich's ``cell_len``, so the full-screen app (Rich) and the command line
agree: East Asian Width W or F is two cells; nonspacing, enclosing and spacing marks, format characters
(but the soft hyphen and the Arabic number signs), Hangul medial and final jamo and the emoji skin tones
are none. It is not Rich itself: the client layer loads no UI toolkit, and the scripted commands, whose
start-up is measured (``benchmarks/bench_cli_startup.py``), never load Rich. Python's
``unicodedata`` knows Unicode 14 (Python 3.11); Rich's table is newer, and the 188 symbols Unicode 16 made
wide (``☰``, the counting rods) count one cell here (tests/client/test_cells.py compares the two over every
assigned character).
"""

from __future__ import annotations

import unicodedata

ELLIPSIS = "…"

_ZWJ = "\u200d"
_VS16 = "\ufe0f"
_ZERO_CATEGORIES = frozenset({"Mn", "Me", "Mc", "Cf", "Zl", "Zp"})
_PREPENDED_MARKS = frozenset({0x600, 0x601, 0x602, 0x603, 0x604, 0x605, 0x6DD, 0x70F, 0x890, 0x891, 0x8E2})
_PREPENDED_MARKS |= {0x110BD, 0x110CD}
_NARROW_EMOJI_BASES = frozenset("#*0123456789")
"""ASCII characters a VS16 turns into a two-cell emoji (keycaps)."""


def char_width(ch: str) -> int:
    """Cells one character takes on its own (0, 1 or 2)."""
    cp = ord(ch)
    if 0x20 <= cp < 0x7F:
        return 1
    if cp < 0xA0:
        return 0  # C0 and C1 controls (never shown: client.textsafe replaces them)
    if cp == 0xAD or cp in _PREPENDED_MARKS:
        return 1
    if unicodedata.category(ch) in _ZERO_CATEGORIES:
        return 0
    if 0x1160 <= cp <= 0x11FF or 0xD7B0 <= cp <= 0xD7FF or cp in (0x3164, 0xFFA0) or 0x1F3FB <= cp <= 0x1F3FF:
        return 0  # Hangul medial and final jamo, the Hangul fillers, emoji skin tones
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def clusters(text: str) -> list[tuple[int, int, int]]:
    """``(start, end, cells)`` of each cluster of ``text`` (see the module docstring), covering it all."""
    spans: list[tuple[int, int, int]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if spans and ch == _ZWJ:  # glues the next character onto this cluster
            start, _, cells = spans[-1]
            i = min(i + 2, n)
            spans[-1] = (start, i, cells)
            continue
        if spans and ch == _VS16:
            start, end, cells = spans[-1]
            base = text[start]
            if cells == 1 and end - start == 1 and (base in _NARROW_EMOJI_BASES or not base.isascii()):
                cells = 2  # emoji presentation of a one-cell symbol
            i += 1
            spans[-1] = (start, i, cells)
            continue
        cells = char_width(ch)
        if cells == 0 and spans:
            start, _, before = spans[-1]
            spans[-1] = (start, i + 1, before)
        else:
            spans.append((i, i + 1, cells))
        i += 1
    return spans


def cell_len(text: str) -> int:
    """Cells ``text`` takes on a terminal (one line: no line breaks expected)."""
    if text.isascii() and text.isprintable():
        return len(text)
    return sum(cells for _, _, cells in clusters(text))


def head(text: str, cells: int) -> str:
    """The longest beginning of ``text`` that fits in ``cells`` (never half a cluster)."""
    if cells <= 0:
        return ""
    if text.isascii() and text.isprintable():
        return text[:cells]
    used = 0
    end = 0
    for _, stop, width in clusters(text):
        if used + width > cells:
            break
        used += width
        end = stop
    return text[:end]


def tail(text: str, cells: int) -> str:
    """The longest end of ``text`` that fits in ``cells`` (never half a cluster)."""
    if cells <= 0:
        return ""
    if text.isascii() and text.isprintable():
        return text[-cells:]
    used = 0
    start = len(text)
    for begin, _, width in reversed(clusters(text)):
        if used + width > cells:
            break
        used += width
        start = begin
    return text[start:]


def fit(text: str, cells: int) -> str:
    """``text`` as is when it fits in ``cells``, else its beginning and an ellipsis within ``cells``."""
    if cell_len(text) <= cells:
        return text
    return head(text, cells - 1) + ELLIPSIS if cells > 0 else ""


def pad(text: str, cells: int) -> str:
    """``text`` followed by spaces up to ``cells`` (a column's width), as ``str.ljust`` does for ASCII."""
    return text + " " * (cells - cell_len(text))
