"""Make untrusted text (agent output, tool arguments, notes) inert before it reaches a terminal.

Agent text can carry ANSI/CSI escapes, OSC sequences (window titles, hyperlinks, clipboard writes), C0/C1
control characters, Unicode bidi overrides and lone UTF-16 surrogates. None of them may reach the terminal.
This module is pure and has no UI import, so the CLI and the widgets share one definition of "safe". Rich
markup escaping is the widgets' job (they build ``rich.text.Text`` objects and never interpolate into
markup strings).
"""

from __future__ import annotations

import re

# ESC-introduced sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), DCS/SOS/PM/APC strings,
# and two-character escapes. Matched first so their parameters do not survive as visible garbage.
_ESCAPE_SEQ = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]            # CSI
  | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?  # OSC, terminated by BEL or ST (or cut off)
  | \x1b[PX^_][^\x1b]*(?:\x1b\\)?      # DCS, SOS, PM, APC
  | \x1b[@-Z\\-_]                      # other two-character escapes
  | \x9b[0-?]*[ -/]*[@-~]              # 8-bit CSI
  | \x9d[^\x07\x9c]*(?:\x07|\x9c)?     # 8-bit OSC
    """,
    re.VERBOSE,
)

# Bidi embeddings, overrides and isolates, plus other invisible format characters that reorder or hide text.
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_INVISIBLE = "\u200b\u2060\ufeff"
_CONTROL = "".join(chr(c) for c in range(0x00, 0x20) if chr(c) not in "\n\t") + "\x7f"
_C1 = "".join(chr(c) for c in range(0x80, 0xA0))
# Half of a UTF-16 pair: JSON can carry one ("\ud800"), no terminal encoding can write it.
_SURROGATES = "".join(chr(c) for c in range(0xD800, 0xE000))
_REPLACE_TABLE = {ord(ch): "\ufffd" for ch in _CONTROL + _C1 + _BIDI + _INVISIBLE + _SURROGATES}
_REPLACE_TABLE[ord("\t")] = "    "

REPLACEMENT = "\ufffd"


def safe_text(text: str, *, keep_newlines: bool = True) -> str:
    """Return ``text`` with escape sequences removed and control/bidi characters replaced by U+FFFD.

    Newlines survive when ``keep_newlines`` (multi-line notes and answers keep their shape); tabs become
    spaces so column maths stays right. ``\\r`` is replaced: it could overwrite what is already shown.
    """
    if not text:
        return text
    if "\x1b" in text or "\x9b" in text or "\x9d" in text:
        text = _ESCAPE_SEQ.sub(REPLACEMENT, text)
    if not keep_newlines:
        text = text.replace("\n", " ")
    return text.translate(_REPLACE_TABLE)


def safe_line(text: str, limit: int | None = None) -> str:
    """One terminal-safe line: line breaks become spaces and the result is cut to ``limit`` with ``…``."""
    line = safe_text(text.replace("\r\n", " ").replace("\n", " "))
    if limit is not None and len(line) > limit:
        return line[: max(limit - 1, 0)] + "…"
    return line
