"""Terminal cell widths without Rich: the same answers as Rich's ``cell_len`` (what the app draws with)."""

from __future__ import annotations

import unicodedata

import pytest
from rich.cells import cell_len as rich_cell_len
from rich.cells import get_character_cell_size

from client.cells import cell_len, char_width, clusters, fit, head, pad, tail

SAMPLES = [
    "plain ascii title",
    "漢字のタイトル",  # CJK: two cells each
    "修复登录页面的崩溃",
    "한국어 제목",  # precomposed Hangul
    "\u1112\u1161\u11ab",  # Hangul in jamo: one two-cell syllable
    "ＡＢＣ ｶﾀｶﾅ",  # fullwidth and halfwidth forms
    "café, cafe\u0301",  # a combining accent takes no cell
    "🎉 ship it 🚀",
    "👨\u200d👩\u200d👧 family",  # a zero-width-joiner sequence is one emoji
    "🇫🇷🇯🇵 flags",
    "⚠️ careful ❤️ #️⃣",  # VS16 widens a one-cell symbol, keycaps too
    "👍🏽 thumbs",  # a skin tone modifier takes no cell
    "ภาษาไทย",  # Thai with nonspacing vowels
    "हिन्दी शीर्षक",  # Devanagari with spacing and nonspacing marks
    "soft\u00adhyphen, zero\u200bwidth",
    "mixed 中文 and emoji 😀 and accents é",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_strings_measure_as_rich_measures_them(text: str) -> None:
    assert cell_len(text) == rich_cell_len(text)


def test_every_character_of_unicode_14_measures_as_rich_but_what_unicode_16_made_wide() -> None:
    """Every character Python's unicodedata knows agrees with Rich's table, except the symbols Unicode 16
    gave the East Asian Width W (Rich's table is newer): one cell here, two there."""
    differ: list[int] = []
    for cp in range(0x20, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if unicodedata.category(ch) == "Cn":
            continue  # not assigned in the Unicode version Python knows
        if char_width(ch) != get_character_cell_size(ch):
            differ.append(cp)
    newly_wide = [cp for cp in differ if char_width(chr(cp)) == 1 and get_character_cell_size(chr(cp)) == 2]
    assert differ == newly_wide
    assert all(unicodedata.category(chr(cp)) in ("So", "No") for cp in differ)
    assert len(differ) <= 188


@pytest.mark.parametrize("text", SAMPLES)
def test_cuts_fit_never_split_a_cluster_and_say_they_cut(text: str) -> None:
    bounds = {start for start, _, _ in clusters(text)} | {len(text)}
    for cells in range(0, cell_len(text) + 2):
        front, back, cut = head(text, cells), tail(text, cells), fit(text, cells)
        assert cell_len(front) <= cells and cell_len(back) <= cells and cell_len(cut) <= cells
        assert len(front) in bounds and len(text) - len(back) in bounds
        assert cell_len(front) >= cells - 1 and cell_len(back) >= cells - 1  # at most one cell short
        if cells >= cell_len(text):
            assert cut == text
        elif cells > 0:
            assert cut.endswith("…") and text.startswith(cut[:-1])
    assert cell_len(pad(text, cell_len(text) + 3)) == cell_len(text) + 3
