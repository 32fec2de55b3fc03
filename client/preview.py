"""What a tool call will change, as a preview an operator reads before deciding it (pure: no UI, no I/O).

:func:`preview` turns a call (its tool name and arguments) into a :class:`Preview`, the one model every
front end shows: the attach screen's approval card, the inbox (its ``x`` view and its side pane), the
"are you sure?" dialog, ``preloop approvals show`` (text, ``--json``), the digest and the export.

- File edits become a unified diff per file, with the file's name, its language (``lang``, for colouring)
  and its +/− counts: ``Edit`` (``file_path``, ``old_string``, ``new_string``, ``replace_all``),
  ``MultiEdit`` (``edits``), ``Write`` (the whole content, "+N lines"), ``str_replace_based_edit_tool`` /
  ``str_replace_editor`` (``str_replace``, ``create``, ``insert``), ``apply_patch`` (the ``*** Begin
  Patch`` format and plain unified diffs), and any call whose argument already holds a unified diff.
- Shell calls (``Bash``, ``shell``, ``run_command``, ``exec``, ``exec_command``, ``run_shell_command``;
  ``command`` as a string or an argv list) become the command, its lines kept, then its ``cwd``,
  ``timeout``, description and every other argument as ``key: value`` fields.
- Anything else is its arguments as indented JSON, long strings wrapped.
- Bad input is shown, not guessed: a patch that does not parse, an ``old_string`` that is not text, a
  missing ``file_path`` give a ``raw`` preview: one line saying why no diff is shown, then the arguments.

Nothing is cut silently: :meth:`Preview.lines` gives the first lines and :meth:`Preview.more` how many
follow, so a caller says "… 1,234 more lines". The model is lazy: it keeps the call's own strings and a
few counts, and makes the lines a caller asks for only when asked, so the card of a 10,000-line ``Write``
or patch costs the lines it shows (``benchmarks/bench_preview.py``). Every line's text is terminal-safe
(``client.textsafe``); the widgets still build ``rich.text.Text`` objects, never markup.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal

from client.models import Approval
from client.textsafe import safe_line, safe_text

__all__ = [
    "FileChange",
    "LineKind",
    "Preview",
    "PreviewKind",
    "PreviewLine",
    "approval_preview",
    "more_line",
    "preview",
    "preview_of",
    "visible_args",
]

PreviewKind = Literal["diff", "command", "arguments", "raw"]
LineKind = Literal["file", "hunk", "add", "del", "ctx", "meta", "command", "field", "json", "why"]

JSON_WRAP = 100
"""A JSON line longer than this many characters is wrapped onto continuation lines."""
LINE_CHARS = 2_000
"""A single line longer than this is cut, saying how many characters follow (a minified file's one line)."""
CONTEXT = 3
"""Unchanged lines kept around each change of an edit (as ``diff -u``)."""

SHELL_TOOLS = frozenset({"bash", "shell", "run_command", "exec", "exec_command", "run_shell_command"})
EDIT_TOOLS = frozenset({"edit"})
MULTI_EDIT_TOOLS = frozenset({"multiedit", "multi_edit"})
WRITE_TOOLS = frozenset({"write"})
EDITOR_TOOLS = frozenset({"str_replace_based_edit_tool", "str_replace_editor"})
PATCH_TOOLS = frozenset({"apply_patch", "applypatch"})

_LANGS = {
    "py": "python", "pyi": "python", "js": "javascript", "mjs": "javascript", "cjs": "javascript",
    "jsx": "jsx", "ts": "typescript", "tsx": "tsx", "json": "json", "md": "markdown", "toml": "toml",
    "yaml": "yaml", "yml": "yaml", "sh": "bash", "bash": "bash", "zsh": "bash", "rs": "rust", "go": "go",
    "java": "java", "kt": "kotlin", "rb": "ruby", "php": "php", "c": "c", "h": "c", "cc": "cpp",
    "cpp": "cpp", "hpp": "cpp", "cs": "csharp", "swift": "swift", "sql": "sql", "html": "html",
    "css": "css", "scss": "scss", "xml": "xml", "ini": "ini", "cfg": "ini", "tf": "terraform",
    "lua": "lua", "r": "r", "scala": "scala", "ex": "elixir", "exs": "elixir", "dockerfile": "docker",
    "makefile": "make", "mk": "make", "proto": "protobuf", "vue": "vue", "svelte": "html",
}  # fmt: skip
_NAMED = {"dockerfile": "docker", "makefile": "make", "gnumakefile": "make", "justfile": "make"}


def file_lang(path: str) -> str:
    """The language of a file for colouring, from its name ("src/app.py" → "python"); "" when unknown."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name in _NAMED:
        return _NAMED[name]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    return _LANGS.get(ext, "")


def visible_args(args: Mapping[str, object] | None) -> dict[str, object]:
    """The arguments an operator judges: keys starting with ``_`` are the server's bookkeeping
    (``_preloop_source``), not what the tool will do, so they are left out."""
    return {str(k): v for k, v in (args or {}).items() if not str(k).startswith("_")}


# --------------------------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class PreviewLine:
    """One line of a preview. ``text`` is terminal-safe and holds no line break; what it means is its
    ``kind``: a file's head (``text`` its path, with ``added``/``removed`` and a ``label`` such as "new
    file"), a hunk's head, an added / removed / unchanged line (without its sign), a diff's meta line,
    a command's line (``label`` "$" on the first), a field (``label`` its key), a JSON line, or the line
    saying why no diff is shown. ``lang`` is the file's language (colour) on a file's lines."""

    kind: LineKind
    text: str
    lang: str = ""
    added: int = 0
    removed: int = 0
    label: str = ""

    def plain(self) -> str:
        """The line as plain text, as ``diff -u`` and a shell would show it."""
        match self.kind:
            case "add":
                return f"+{self.text}"
            case "del":
                return f"-{self.text}"
            case "ctx":
                return f" {self.text}"
            case "file":
                label = f" ({self.label})" if self.label else ""
                return (
                    "  ".join(x for x in (self.text, counts(self.added, self.removed, self.label)) if x)
                    + label
                )
            case "command":
                return f"{self.label or ' '} {self.text}"
            case "field":
                return f"{self.label}: {self.text}"
        return self.text

    def to_json(self) -> dict[str, Any]:
        """The line for scripts (only the fields its kind uses)."""
        out: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.kind == "file":
            out.update(path=self.text, added=self.added, removed=self.removed, label=self.label or None)
        if self.lang:
            out["lang"] = self.lang
        if self.kind in ("command", "field") and self.label:
            out["label"] = self.label
        return out


def counts(added: int, removed: int, label: str = "") -> str:
    """``+3 −1``; a whole new content is "+12 lines"."""
    if label in ("new file", "whole content") and not removed:
        return f"+{added:,} line{'s' if added != 1 else ''}"
    if label and not added and not removed:
        return ""  # a file deleted, moved or binary: its label says what happens
    return f"+{added:,} −{removed:,}"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a call changes: its path (terminal-safe), language, what happens to it, +/− counts."""

    path: str
    lang: str
    action: Literal["edit", "write", "create", "delete", "move", "insert"]
    added: int
    removed: int
    label: str = ""

    def to_json(self) -> dict[str, Any]:
        """The file for scripts."""
        return {
            "path": self.path,
            "lang": self.lang or None,
            "action": self.action,
            "added": self.added,
            "removed": self.removed,
            "label": self.label or None,
        }


LineSource = Callable[[], Iterator[PreviewLine]]


@dataclass(frozen=True)
class Preview:
    """A call as the operator reads it before deciding: a diff, a command, its arguments, or (``raw``) its
    arguments with the reason no diff could be shown. Lines are made on demand (:meth:`lines`)."""

    tool: str
    kind: PreviewKind
    first_line: str
    """The preview in one line, without the tool's name: "src/app.py +3 −1", the command's first line,
    the first argument, or why no diff is shown. Dialogs name "tool, session, first line"."""
    line_count: int
    files: tuple[FileChange, ...] = ()
    problem: str | None = None
    """Why no diff is shown (``raw`` previews only)."""
    source: LineSource = field(default=lambda: iter(()), repr=False, compare=False)

    def lines(self, limit: int | None = None) -> list[PreviewLine]:
        """The first ``limit`` lines (None: all of them)."""
        found = self.source()
        return list(found if limit is None else islice(found, max(limit, 0)))

    def iter_lines(self) -> Iterator[PreviewLine]:
        """Every line, one at a time."""
        return self.source()

    def more(self, limit: int | None) -> int:
        """How many lines follow the first ``limit`` (0: none; None shows them all)."""
        return 0 if limit is None else max(self.line_count - max(limit, 0), 0)

    @property
    def added(self) -> int:
        """Lines added over every file."""
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        """Lines removed over every file."""
        return sum(f.removed for f in self.files)

    def text_lines(self, limit: int | None = None, *, hint: str = "") -> list[str]:
        """The preview as plain text lines, the first ``limit`` of them then "… N more lines (hint)"."""
        out = [line.plain() for line in self.lines(limit)]
        more = self.more(limit)
        if more:
            out.append(more_line(more, hint))
        return out

    def to_json(self, limit: int | None = None) -> dict[str, Any]:
        """The model for scripts (``approvals show --json``): every line unless ``limit`` is given, and how
        many were left out."""
        return {
            "tool": self.tool,
            "kind": self.kind,
            "first_line": self.first_line,
            "files": [f.to_json() for f in self.files],
            "added": self.added if self.files else None,
            "removed": self.removed if self.files else None,
            "problem": self.problem,
            "line_count": self.line_count,
            "lines": [line.to_json() for line in self.lines(limit)],
            "more_lines": self.more(limit),
        }


def more_line(more: int, hint: str = "") -> str:
    """ "… 1,234 more lines (x shows all)": what follows the lines shown."""
    return f"… {more:,} more line{'s' if more != 1 else ''}" + (f" ({hint})" if hint else "")


class NoDiff(ValueError):
    """The call names a change that cannot be shown as a diff; the message says why, in a few words."""


# ------------------------------------------------------------------------------------------ the entry


def _tool_key(name: str) -> str:
    return name.strip().lower().rsplit(".", 1)[-1]


def preview(tool: str | None, args: Mapping[str, object] | None) -> Preview:
    """The preview of one call (see the module docstring). Never raises: input it cannot read is shown
    raw with the reason."""
    name = safe_line(tool or "tool", 60)
    shown = visible_args(args)
    key = _tool_key(tool or "")
    try:
        if key in EDIT_TOOLS:
            return _edit(name, shown)
        if key in MULTI_EDIT_TOOLS:
            return _multi_edit(name, shown)
        if key in WRITE_TOOLS:
            return _write(name, shown)
        if key in EDITOR_TOOLS:
            return _editor(name, shown)
        if key in PATCH_TOOLS:
            return _apply_patch(name, shown)
        if key in SHELL_TOOLS:
            return _shell(name, shown)
        found = _patch_argument(shown)
        if found is not None:
            return _patch_preview(name, shown, found)
    except NoDiff as why:
        return _raw(name, shown, str(why), "command" if key in SHELL_TOOLS else "diff")
    except Exception as error:  # a call this client cannot read must still be shown, never crash a screen
        return _raw(name, shown, f"this client could not read the call ({type(error).__name__})", "preview")
    return _arguments(name, shown)


_CACHE: dict[str, tuple[object, Preview]] = {}
_CACHE_SIZE = 64


def preview_of(approval_id: str, tool: str | None, args: Mapping[str, object] | None) -> Preview:
    """:func:`preview`, remembered for the same record (``args`` is the very same object): the cards are
    drawn again on every change of the list, their approvals mostly unchanged."""
    hit = _CACHE.get(approval_id)
    if hit is not None and hit[0] is args:
        return hit[1]
    made = preview(tool, args)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[approval_id] = (args, made)
    return made


# ------------------------------------------------------------------------------------- reading args


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


_SURROGATE = re.compile("[\ud800-\udfff]")
"""What JSON can carry but no text is: half of a UTF-16 pair (``"\\ud800"``)."""


def _text(args: Mapping[str, object], key: str, *, default: str | None = None, what: str = "") -> str:
    """``args[key]`` as text, or NoDiff saying what is wrong with it."""
    if key not in args:
        if default is not None:
            return default
        raise NoDiff(f"{what or key} is missing")
    value = args[key]
    if not isinstance(value, str):
        raise NoDiff(f"{what or key} is not text (it is {_kind_of(value)})")
    if not value.isascii() and _SURROGATE.search(value):
        raise NoDiff(f"{what or key} is not valid text (it holds a lone surrogate)")
    return value


def _path(args: Mapping[str, object], key: str) -> str:
    value = args.get(key)
    if value is None:
        raise NoDiff(f"the call names no file ({key} is missing)")
    if not isinstance(value, str) or not value.strip():
        raise NoDiff(f"the call names no file ({key} is {_kind_of(value) if value != '' else 'empty'})")
    return value


def _flag(args: Mapping[str, object], key: str) -> bool:
    value = args.get(key, False)
    if not isinstance(value, bool):
        raise NoDiff(f"{key} is neither true nor false (it is {_kind_of(value)})")
    return value


# --------------------------------------------------------------------------------------- line helpers


def _safe(line: str) -> str:
    """One line, terminal-safe, a trailing carriage return dropped, a very long line cut (saying so)."""
    if line.endswith("\r"):
        line = line[:-1]
    if len(line) > LINE_CHARS:
        rest = len(line) - LINE_CHARS
        return safe_text(line[:LINE_CHARS]) + f" … {rest:,} more characters"
    return safe_text(line)


def _iter_text_lines(text: str, start: int = 0, end: int | None = None) -> Iterator[str]:
    """The lines of ``text[start:end]`` one by one, without copying the rest (a final newline ends the
    last line; it starts none)."""
    stop = len(text) if end is None else end
    pos = start
    while pos < stop:
        nl = text.find("\n", pos, stop)
        if nl < 0:
            yield text[pos:stop]
            return
        yield text[pos:nl]
        pos = nl + 1


def _count_lines(text: str) -> int:
    """How many lines :func:`_iter_text_lines` yields."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _path_line(path: str, lang: str, added: int, removed: int, label: str = "") -> PreviewLine:
    return PreviewLine("file", safe_line(path, 300), lang, added, removed, label)


def _extra_fields(args: Mapping[str, object], used: Iterable[str]) -> list[PreviewLine]:
    """The arguments a preview did not show otherwise, as fields: nothing the tool gets is hidden."""
    taken = set(used)
    return [_field(k, v) for k, v in args.items() if k not in taken]


def _field(key: str, value: object) -> PreviewLine:
    if isinstance(value, str):
        shown = value.replace("\r\n", "\n").replace("\n", " ↵ ")
    else:
        try:
            shown = json.dumps(value, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            shown = repr(value)
    return PreviewLine("field", _safe(shown), label=safe_line(key, 60))


# ---------------------------------------------------------------------------------------- file edits


def _split(text: str) -> list[str]:
    """The lines of a snippet (a final newline ends its last line; it starts none)."""
    lines = text.split("\n") if text else []
    if lines and text.endswith("\n"):
        lines.pop()
    return lines


@dataclass(frozen=True, slots=True)
class _Snippet:
    """A change of one text into another (an edit's ``old_string`` → ``new_string``): its opcodes are
    worked out once; the lines are made when asked."""

    old: list[str]
    new: list[str]
    groups: list[list[tuple[str, int, int, int, int]]]
    added: int
    removed: int

    @staticmethod
    def of(old_text: str, new_text: str) -> _Snippet:
        old, new = _split(old_text), _split(new_text)
        codes = _opcodes(old, new)
        added = sum(j2 - j1 for tag, _, _, j1, j2 in codes if tag in ("replace", "insert"))
        removed = sum(i2 - i1 for tag, i1, i2, _, _ in codes if tag in ("replace", "delete"))
        groups = _group(codes) if added or removed else []
        return _Snippet(old, new, groups, added, removed)

    @property
    def line_count(self) -> int:
        """How many lines :meth:`iter_lines` yields (a "⋯" between groups, the lines of each)."""
        total = max(len(self.groups) - 1, 0)
        for group in self.groups:
            for tag, i1, i2, j1, j2 in group:
                total += (i2 - i1) if tag == "equal" else (i2 - i1) + (j2 - j1)
        return total if self.groups else 1

    def iter_lines(self, lang: str) -> Iterator[PreviewLine]:
        if not self.groups:
            yield PreviewLine("meta", "no change: the old and new text are the same")
            return
        for n, group in enumerate(self.groups):
            if n:
                yield PreviewLine("hunk", "⋯")
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    for line in self.old[i1:i2]:
                        yield PreviewLine("ctx", _safe(line), lang)
                    continue
                for line in self.old[i1:i2]:
                    yield PreviewLine("del", _safe(line), lang)
                for line in self.new[j1:j2]:
                    yield PreviewLine("add", _safe(line), lang)


MATCHER_LINES = 1_000
"""A stretch of lines with no line found once on each side is handed to ``difflib`` only up to this many
lines a side; a longer one is shown as replaced (a correct diff, if not the shortest)."""

Opcode = tuple[str, int, int, int, int]


def _opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """``difflib``-style opcodes turning ``a`` into ``b``, in about linear time for code: lines that occur
    once on each side anchor the match (patience diff), and ``SequenceMatcher`` only sees the stretches
    between anchors, which is where the changes are (``SequenceMatcher`` alone is quadratic on a long file;
    ``benchmarks/bench_preview.py`` times a 10,000-line edit)."""
    blocks: list[tuple[int, int, int]] = []  # (i, j, size): a[i:i+size] == b[j:j+size]
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        first = alo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo, blo = alo + 1, blo + 1
        if alo > first:
            blocks.append((first, blo - (alo - first), alo - first))
        last = ahi
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
        if ahi < last:
            blocks.append((ahi, bhi, last - ahi))
        if alo == ahi or blo == bhi:
            continue
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        if anchors:
            prev_a, prev_b = alo, blo
            run = (0, 0, 0)
            for i, j in anchors:
                if run[2] and i == prev_a and j == prev_b:
                    run = (run[0], run[1], run[2] + 1)  # the anchors run on together: one block
                else:
                    if run[2]:
                        blocks.append(run)
                    if i > prev_a or j > prev_b:
                        stack.append((prev_a, i, prev_b, j))
                    run = (i, j, 1)
                prev_a, prev_b = i + 1, j + 1
            blocks.append(run)
            if prev_a < ahi or prev_b < bhi:
                stack.append((prev_a, ahi, prev_b, bhi))
        elif ahi - alo <= MATCHER_LINES and bhi - blo <= MATCHER_LINES:
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            blocks.extend((alo + i, blo + j, size) for i, j, size in matcher.get_matching_blocks() if size)
    blocks.sort()
    codes: list[Opcode] = []
    i = j = 0
    for bi, bj, size in [*blocks, (len(a), len(b), 0)]:
        if bi > i or bj > j:
            tag = "replace" if bi > i and bj > j else ("delete" if bi > i else "insert")
            codes.append((tag, i, bi, j, bj))
        if size:
            if codes and codes[-1][0] == "equal" and codes[-1][2] == bi and codes[-1][4] == bj:
                codes[-1] = ("equal", codes[-1][1], bi + size, codes[-1][3], bj + size)
            else:
                codes.append(("equal", bi, bi + size, bj, bj + size))
        i, j = bi + size, bj + size
    return codes


def _anchors(a: list[str], alo: int, ahi: int, b: list[str], blo: int, bhi: int) -> list[tuple[int, int]]:
    """The lines found exactly once in ``a[alo:ahi]`` and once in ``b[blo:bhi]``, the longest run of them
    in the same order on both sides, as (index in a, index in b)."""
    seg_a, seg_b = a[alo:ahi], b[blo:bhi]
    count_a, count_b = Counter(seg_a), Counter(seg_b)
    where_b = {line: j for j, line in enumerate(seg_b, blo)}
    pairs = [
        (i, where_b[line])
        for i, line in enumerate(seg_a, alo)
        if count_a[line] == 1 and count_b.get(line) == 1
    ]
    if not pairs:
        return []
    # The longest increasing run of b-indices (patience sorting), kept with back links.
    tails: list[int] = []
    tail_at: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k] = j
            tail_at[k] = n
        back[n] = tail_at[k - 1] if k else -1
    out: list[tuple[int, int]] = []
    n = tail_at[-1]
    while n >= 0:
        out.append(pairs[n])
        n = back[n]
    out.reverse()
    return out


def _group(codes: list[Opcode], n: int = CONTEXT) -> list[list[Opcode]]:
    """``SequenceMatcher.get_grouped_opcodes`` on opcodes already made."""
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    nn = n + n
    groups: list[list[tuple[str, int, int, int, int]]] = []
    group: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _diff_preview(
    name: str,
    files: list[FileChange],
    heads: list[PreviewLine],
    bodies: list[tuple[int, Callable[[], Iterator[PreviewLine]]]],
    extra: list[PreviewLine],
) -> Preview:
    """A diff preview: per file its head line then its body (``(line count, lines)``), then the fields."""

    def source() -> Iterator[PreviewLine]:
        for head, (_, body) in zip(heads, bodies, strict=True):
            yield head
            yield from body()
        yield from extra

    total = len(heads) + sum(n for n, _ in bodies) + len(extra)
    return Preview(name, "diff", _diff_first_line(files), total, tuple(files), source=source)


def _diff_first_line(files: list[FileChange]) -> str:
    if len(files) == 1:
        f = files[0]
        label = f" ({f.label})" if f.label else ""
        return " ".join(x for x in (safe_line(f.path, 120), counts(f.added, f.removed, f.label)) if x) + label
    added, removed = sum(f.added for f in files), sum(f.removed for f in files)
    names = ", ".join(safe_line(f.path, 40) for f in files[:3]) + (", …" if len(files) > 3 else "")
    return f"{len(files)} files +{added:,} −{removed:,}: {names}"


def _edit(name: str, args: Mapping[str, object]) -> Preview:
    path = _path(args, "file_path")
    old = _text(args, "old_string")
    new = _text(args, "new_string")
    every = _flag(args, "replace_all")
    snippet = _Snippet.of(old, new)
    lang = file_lang(path)
    label = "every occurrence" if every else ""
    change = FileChange(safe_line(path, 300), lang, "edit", snippet.added, snippet.removed, label)
    head = _path_line(path, lang, snippet.added, snippet.removed, label)
    extra = _extra_fields(args, ("file_path", "old_string", "new_string", "replace_all"))
    return _diff_preview(
        name, [change], [head], [(snippet.line_count, lambda: snippet.iter_lines(lang))], extra
    )


def _multi_edit(name: str, args: Mapping[str, object]) -> Preview:
    path = _path(args, "file_path")
    edits = args.get("edits")
    if not isinstance(edits, list) or not edits:
        raise NoDiff(
            "edits is missing" if edits is None else f"edits is not a list of edits ({_kind_of(edits)})"
        )
    snippets: list[tuple[_Snippet, bool]] = []
    for n, edit in enumerate(edits, 1):
        if not isinstance(edit, dict):
            raise NoDiff(f"edit {n} is not an object (it is {_kind_of(edit)})")
        old = _text(edit, "old_string", what=f"edit {n}'s old_string")
        new = _text(edit, "new_string", what=f"edit {n}'s new_string")
        snippets.append((_Snippet.of(old, new), _flag(edit, "replace_all")))
    lang = file_lang(path)
    added = sum(s.added for s, _ in snippets)
    removed = sum(s.removed for s, _ in snippets)
    total = len(snippets)

    def body() -> Iterator[PreviewLine]:
        for n, (snippet, every) in enumerate(snippets, 1):
            yield PreviewLine("hunk", f"edit {n} of {total}" + (" · every occurrence" if every else ""))
            yield from snippet.iter_lines(lang)

    count = total + sum(s.line_count for s, _ in snippets)
    change = FileChange(safe_line(path, 300), lang, "edit", added, removed)
    extra = _extra_fields(args, ("file_path", "edits"))
    return _diff_preview(name, [change], [_path_line(path, lang, added, removed)], [(count, body)], extra)


def _whole(
    name: str,
    args: Mapping[str, object],
    path: str,
    content: str,
    used: tuple[str, ...],
    *,
    action: Literal["write", "create"],
) -> Preview:
    """A whole file's content: every line added."""
    lang = file_lang(path)
    added = _count_lines(content)
    label = "whole content" if action == "write" else "new file"
    change = FileChange(safe_line(path, 300), lang, action, added, 0, label)

    def body() -> Iterator[PreviewLine]:
        for line in _iter_text_lines(content):
            yield PreviewLine("add", _safe(line), lang)

    head = _path_line(path, lang, added, 0, label)
    return _diff_preview(name, [change], [head], [(added, body)], _extra_fields(args, used))


def _write(name: str, args: Mapping[str, object]) -> Preview:
    path = _path(args, "file_path")
    content = _text(args, "content")
    return _whole(name, args, path, content, ("file_path", "content"), action="write")


def _editor(name: str, args: Mapping[str, object]) -> Preview:
    command = args.get("command")
    if command in ("view", "undo_edit"):
        return _arguments(name, args)  # reads or undoes: nothing new to show as a diff
    if not isinstance(command, str):
        raise NoDiff(
            "command is missing" if command is None else f"command is not text ({_kind_of(command)})"
        )
    path = _path(args, "path")
    lang = file_lang(path)
    if command == "create":
        content = _text(args, "file_text")
        return _whole(name, args, path, content, ("command", "path", "file_text"), action="create")
    if command == "str_replace":
        snippet = _Snippet.of(_text(args, "old_str"), _text(args, "new_str", default=""))
        change = FileChange(safe_line(path, 300), lang, "edit", snippet.added, snippet.removed)
        head = _path_line(path, lang, snippet.added, snippet.removed)
        extra = _extra_fields(args, ("command", "path", "old_str", "new_str"))
        return _diff_preview(
            name, [change], [head], [(snippet.line_count, lambda: snippet.iter_lines(lang))], extra
        )
    if command == "insert":
        where = args.get("insert_line")
        if not isinstance(where, int) or isinstance(where, bool) or where < 0:
            raise NoDiff("insert_line is missing" if where is None else "insert_line is not a line number")
        key = "insert_text" if "insert_text" in args and "new_str" not in args else "new_str"
        text = _text(args, key)
        added = _count_lines(text)
        change = FileChange(safe_line(path, 300), lang, "insert", added, 0)
        at = "at the start of the file" if where == 0 else f"after line {where:,}"

        def body() -> Iterator[PreviewLine]:
            yield PreviewLine("hunk", f"insert {at}")
            for line in _iter_text_lines(text):
                yield PreviewLine("add", _safe(line), lang)

        extra = _extra_fields(args, ("command", "path", "insert_line", key))
        return _diff_preview(name, [change], [_path_line(path, lang, added, 0)], [(added + 1, body)], extra)
    raise NoDiff(f"the editor command {safe_line(command, 30)!r} is not one this client knows")


# -------------------------------------------------------------------------------------------- patches


@dataclass(frozen=True, slots=True)
class _PatchFile:
    """One file of a parsed patch: where its lines are in the patch text (``start``..``end``), its head,
    how many lines its body shows, and the way to read its body lines again."""

    change: FileChange
    start: int
    end: int
    lines: int


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_UNIFIED_HINT = re.compile(r"^(?:diff --git |--- \S.*\n\+\+\+ \S)", re.MULTILINE)
_GIT_META = (
    "index ", "new file mode", "deleted file mode", "old mode", "new mode", "similarity index",
    "dissimilarity index", "rename from ", "rename to ", "copy from ", "copy to ", "Binary files ",
    "GIT binary patch",
)  # fmt: skip


def looks_like_patch(text: str) -> bool:
    """Whether ``text`` holds a patch: the ``*** Begin Patch`` format, or a unified diff (``--- a`` then
    ``+++ b``, or ``diff --git``) with at least one ``@@`` hunk or a git header."""
    head = text.lstrip()[:32]
    if head.startswith("*** Begin Patch"):
        return True
    return ("\n@@ " in text or "diff --git " in text) and bool(_UNIFIED_HINT.search(text))


def _patch_argument(args: Mapping[str, object]) -> tuple[str, str] | None:
    """The first argument (key, text) that already holds a patch, if any."""
    for key, value in args.items():
        if isinstance(value, str) and looks_like_patch(value):
            return key, value
    return None


def _apply_patch(name: str, args: Mapping[str, object]) -> Preview:
    for key in ("input", "patch", "diff", "content"):
        value = args.get(key)
        if isinstance(value, str):
            return _patch_preview(name, args, (key, value))
    found = _patch_argument(args)
    if found is None:
        strings = [(k, v) for k, v in args.items() if isinstance(v, str)]
        if len(strings) != 1:
            raise NoDiff("no argument holds the patch")
        found = strings[0]
    return _patch_preview(name, args, found)


def _patch_preview(name: str, args: Mapping[str, object], found: tuple[str, str]) -> Preview:
    key, text = found
    files = parse_patch(text)
    heads = [
        _path_line(f.change.path, f.change.lang, f.change.added, f.change.removed, f.change.label)
        for f in files
    ]
    bodies = [(f.lines, _patch_body(text, f)) for f in files]
    extra = _extra_fields(args, (key,))
    return _diff_preview(name, [f.change for f in files], heads, bodies, extra)


def _patch_body(text: str, f: _PatchFile) -> Callable[[], Iterator[PreviewLine]]:
    lang = f.change.lang

    def body() -> Iterator[PreviewLine]:
        for line in _iter_text_lines(text, f.start, f.end):
            yield _patch_line(line, lang)

    return body


def _patch_line(line: str, lang: str) -> PreviewLine:
    first = line[:1]
    if first == "+":
        return PreviewLine("add", _safe(line[1:]), lang)
    if first == "-":
        return PreviewLine("del", _safe(line[1:]), lang)
    if first == " ":
        return PreviewLine("ctx", _safe(line[1:]), lang)
    if line.startswith("@@"):
        return PreviewLine("hunk", _safe(line))
    if not line or line == "\r":
        return PreviewLine("ctx", "", lang)
    return PreviewLine("meta", _safe(line))


def parse_patch(text: str) -> list[_PatchFile]:
    """The files of a patch in either format; NoDiff saying where and why when it does not parse."""
    if text.lstrip()[:32].startswith("*** Begin Patch"):
        return _parse_codex(text)
    return _parse_unified(text)


def _numbered(text: str) -> Iterator[tuple[int, int, str]]:
    """(line number, where it ends, the line without a carriage return) for every line of ``text``."""
    pos, number, size = 0, 0, len(text)
    while pos < size:
        nl = text.find("\n", pos)
        end = size if nl < 0 else nl
        number += 1
        yield number, end, text[pos:end].rstrip("\r")
        pos = end + 1


def _patch_path(value: str, number: int) -> str:
    path = value.strip()
    if not path:
        raise NoDiff(f"the patch does not parse: line {number:,} names no file")
    return path


def _parse_codex(text: str) -> list[_PatchFile]:
    """The ``*** Begin Patch`` format: Add / Delete / Update File sections, ``*** Move to``, ``@@`` chunks,
    ``*** End of File``, closed by ``*** End Patch``."""
    files: list[_PatchFile] = []
    lines = _numbered(text)
    began = ended = False
    current: dict[str, Any] | None = None

    def close(end: int) -> None:
        nonlocal current
        if current is None:
            return
        path, action = current["path"], current["action"]
        if action == "edit" and current["hunks"] == 0 and current["moved"] is None:
            raise NoDiff(f"the patch does not parse: the update of {safe_line(path, 80)} changes nothing")
        label = {"create": "new file", "delete": "deleted"}.get(action, "")
        if current["moved"] is not None:
            label = f"moved to {safe_line(current['moved'], 120)}"
        change = FileChange(
            safe_line(path, 300), file_lang(path), action, current["added"], current["removed"], label
        )
        files.append(_PatchFile(change, current["start"], end, current["lines"]))
        current = None

    last_end = 0
    for number, end, line in lines:
        if not began:
            if not line.strip():
                continue
            if line.strip() != "*** Begin Patch":
                raise NoDiff(f"the patch does not parse: line {number:,} should be *** Begin Patch")
            began = True
            continue
        if ended:
            if line.strip():
                raise NoDiff(f"the patch does not parse: line {number:,} follows *** End Patch")
            continue
        if line.strip() == "*** End Patch":
            close(last_end)
            ended = True
            continue
        for marker, action in (
            ("*** Add File: ", "create"),
            ("*** Delete File: ", "delete"),
            ("*** Update File: ", "edit"),
        ):
            if line.startswith(marker):
                close(last_end)
                path = _patch_path(line[len(marker) :], number)
                current = {"path": path, "action": action, "start": end + 1, "added": 0, "removed": 0,
                           "lines": 0, "hunks": 0, "moved": None}  # fmt: skip
                break
        else:
            if current is None:
                raise NoDiff(f"the patch does not parse: line {number:,} is outside any file section")
            action = current["action"]
            if action == "delete":
                raise NoDiff(f"the patch does not parse: line {number:,} follows a Delete File")
            if line.startswith("*** Move to: ") and action == "edit" and current["lines"] == 0:
                current["moved"] = _patch_path(line[len("*** Move to: ") :], number)
                current["start"] = end + 1
            elif action == "create":
                if not line.startswith("+"):
                    raise NoDiff(
                        f"the patch does not parse: line {number:,} of a new file does not start with +"
                    )
                current["added"] += 1
                current["lines"] += 1
            elif line.startswith("@@"):
                current["hunks"] += 1
                current["lines"] += 1
            elif line == "*** End of File":
                current["lines"] += 1
            elif line[:1] in ("+", "-", " ") or line == "":
                if current["hunks"] == 0:
                    current["hunks"] = 1  # a first chunk may come without its @@ line
                current["added"] += line[:1] == "+"
                current["removed"] += line[:1] == "-"
                current["lines"] += 1
            else:
                raise NoDiff(f"the patch does not parse: line {number:,} is not part of a change")
        last_end = end
    if not began:
        raise NoDiff("the patch does not parse: it is empty")
    if not ended:
        raise NoDiff("the patch does not parse: it has no *** End Patch line (cut off?)")
    if not files:
        raise NoDiff("the patch does not parse: it names no file")
    return files


def _strip_prefix(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


@dataclass(slots=True)
class _UnifiedFile:
    """A file of a unified diff while it is read."""

    old: str | None = None
    new: str | None = None
    renamed_from: str | None = None
    renamed_to: str | None = None
    binary: bool = False
    start: int = 0
    end: int = 0
    added: int = 0
    removed: int = 0
    lines: int = 0
    hunks: int = 0
    blanks: int = 0
    """Blank lines after a hunk: counted with the file only when another hunk of it follows."""

    def change(self) -> FileChange:
        old, new = self.old or self.renamed_from, self.new or self.renamed_to
        if new == "/dev/null" and old:
            action, path, label = "delete", old, "deleted"
        elif old == "/dev/null" and new:
            action, path, label = "create", new, "new file"
        elif old and new and old != new:
            action, path, label = "move", new, f"moved from {safe_line(old, 120)}"
        else:
            action, path, label = "edit", new or old or "?", ""
        if self.binary:
            label = ", ".join(x for x in (label, "binary: no lines to show") if x)
        kind: Literal["edit", "create", "delete", "move"] = action  # type: ignore[assignment]
        return FileChange(safe_line(path, 300), file_lang(path), kind, self.added, self.removed, label)


def _parse_unified(text: str) -> list[_PatchFile]:
    """A plain unified diff (``diff -u``, ``git diff``): per file its git headers, ``--- old`` / ``+++ new``
    and ``@@ -a,b +c,d @@`` hunks whose line counts must add up. Text before the first file (a commit
    message) is not part of the change; anything else outside a hunk is an error."""
    files: list[_PatchFile] = []
    current: _UnifiedFile | None = None
    git = False
    """``current`` came from a ``diff --git`` line: it may hold no hunk (a rename, a binary file)."""
    minus: tuple[int, str] | None = None
    left_old = left_new = 0

    def close() -> None:
        nonlocal current
        if current is None:
            return
        if current.hunks == 0 and not (git and (current.renamed_to or current.binary or current.new is None)):
            name = safe_line(current.new or current.old or "a file", 80)
            raise NoDiff(f"the patch does not parse: {name} has no hunk")
        files.append(_PatchFile(current.change(), current.start, current.end, current.lines))
        current = None

    for number, end, line in _numbered(text):
        if left_old > 0 or left_new > 0:
            assert current is not None
            first = line[:1]
            if first == "+":
                left_new -= 1
                current.added += 1
            elif first == "-":
                left_old -= 1
                current.removed += 1
            elif first == " " or line == "":
                left_old -= 1
                left_new -= 1
            elif first != "\\":
                raise NoDiff(f"the patch does not parse: the hunk before line {number:,} ends early")
            if left_old < 0 or left_new < 0:
                raise NoDiff(f"the patch does not parse: line {number:,} runs past its hunk's line counts")
            current.lines += 1
            current.end = end
            continue
        if minus is not None:
            if not line.startswith("+++ "):
                raise NoDiff(f"the patch does not parse: line {number:,} should be +++ after the --- line")
            if current is None or not git or current.old is not None:
                close()
                git = False
                current = _UnifiedFile()
            current.old, current.new = minus[1], _strip_prefix(line[4:])
            if not current.old or not current.new:
                raise NoDiff(f"the patch does not parse: line {number:,} names no file")
            current.start = current.end = end + 1
            minus = None
            continue
        if line.startswith("--- "):
            minus = (number, _strip_prefix(line[4:]))
            continue
        if line.startswith("@@"):
            match = _HUNK.match(line)
            if current is None or current.new is None:
                raise NoDiff(
                    f"the patch does not parse: line {number:,} is a hunk before any --- / +++ header"
                )
            if match is None:
                raise NoDiff(
                    f"the patch does not parse: line {number:,} is not a hunk header (@@ -a,b +c,d @@)"
                )
            left_old = int(match.group(2)) if match.group(2) is not None else 1
            left_new = int(match.group(4)) if match.group(4) is not None else 1
            current.lines += current.blanks + 1
            current.blanks = 0
            current.hunks += 1
            current.end = end
            continue
        if line.startswith("diff --git "):
            close()
            git = True
            current = _UnifiedFile(start=end + 1, end=end)
            parts = line[len("diff --git ") :].split(" b/", 1)
            if len(parts) == 2:
                current.renamed_to = _strip_prefix("b/" + parts[1])
                current.renamed_from = _strip_prefix(parts[0])
                if current.renamed_from == current.renamed_to:
                    current.renamed_from = None
            continue
        if current is not None and current.hunks == 0 and line.startswith(_GIT_META):
            if line.startswith(("Binary files ", "GIT binary patch")):
                current.binary = True
            elif line.startswith("new file mode"):
                current.old = "/dev/null"
            elif line.startswith("deleted file mode"):
                current.new = "/dev/null"
            continue
        if current is not None and line.startswith("\\") and current.hunks:
            current.lines += current.blanks + 1
            current.blanks = 0
            current.end = end
            continue
        if not line.strip():
            if current is not None and current.hunks:
                current.blanks += 1
            continue
        if current is None and not files:
            continue  # a preamble (a commit message, a mail header) before the first file
        raise NoDiff(f"the patch does not parse: line {number:,} is not part of a hunk")
    if minus is not None:
        raise NoDiff(f"the patch does not parse: line {minus[0]:,} (---) has no +++ line after it")
    if left_old > 0 or left_new > 0:
        raise NoDiff("the patch does not parse: its last hunk is cut off (fewer lines than its header says)")
    close()
    if not files:
        raise NoDiff("the patch does not parse: it has no --- / +++ file header")
    return files


# ----------------------------------------------------------------------------------------- commands


_CWD_KEYS = ("cwd", "workdir", "working_directory", "directory", "dir")
_TIMEOUT_KEYS = ("timeout", "timeout_ms", "timeout_seconds", "timeout_sec")
_WHY_KEYS = ("description", "justification", "reason")


def _shell(name: str, args: Mapping[str, object]) -> Preview:
    key = next((k for k in ("command", "cmd", "argv") if k in args), None)
    if key is None:
        raise NoDiff("command is missing")
    value = args[key]
    if isinstance(value, list):
        if not value or not all(isinstance(word, str) for word in value):
            raise NoDiff(f"{key} is neither text nor a list of words")
        words: list[str] = list(value)
        if len(words) == 2 and _tool_key(words[0]) in PATCH_TOOLS and looks_like_patch(words[1]):
            return _patch_preview(name, args, (key, words[1]))
        text = shlex.join(words)
    elif isinstance(value, str):
        text = value
    else:
        raise NoDiff(f"{key} is neither text nor a list of words (it is {_kind_of(value)})")
    if not text.strip():
        raise NoDiff(f"{key} is empty")
    order = [*_CWD_KEYS, *_TIMEOUT_KEYS, *_WHY_KEYS]
    known = [_field(k, args[k]) for k in order if k in args]
    fields = known + _extra_fields(args, (key, *order))
    count = _count_lines(text)

    def source() -> Iterator[PreviewLine]:
        for n, line in enumerate(_iter_text_lines(text)):
            yield PreviewLine("command", _safe(line), "bash", label="" if n else "$")
        yield from fields

    first = _safe(next(_iter_text_lines(text), ""))
    shown = safe_line(first, 160) + (" …" if count > 1 else "")
    return Preview(name, "command", shown, count + len(fields), source=source)


# --------------------------------------------------------------------------------------- everything else


_ESCAPE = re.compile(r"\\.")


def _wrap_json(line: str, width: int = JSON_WRAP) -> Iterator[str]:
    """One line of indented JSON; a long one (a long string) broken after each ``\\n`` it holds and at
    ``width``, its continuation lines indented under it."""
    if len(line) <= width and "\\n" not in line:
        yield line
        return
    indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
    pieces: list[str] = []
    pos = 0
    for match in _ESCAPE.finditer(line):
        if match.group() == "\\n":
            pieces.append(line[pos : match.end()])
            pos = match.end()
    pieces.append(line[pos:])
    room = max(width - len(indent), 20)
    first = True
    for piece in pieces:
        if not piece:
            continue
        size = width if first else room
        while piece:
            chunk, piece = piece[:size], piece[size:]
            yield chunk if first else indent + chunk
            first = False
            size = room


def _json_text(args: Mapping[str, object]) -> str:
    try:
        return json.dumps(dict(args), indent=2, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(dict(args))


def _json_source(text: str) -> LineSource:
    def source() -> Iterator[PreviewLine]:
        for line in _iter_text_lines(text):
            for piece in _wrap_json(line):
                yield PreviewLine("json", _safe(piece))

    return source


def _arguments(name: str, args: Mapping[str, object]) -> Preview:
    text = _json_text(args)
    source = _json_source(text)
    count = sum(1 for _ in source())
    if args:
        key, value = next(iter(args.items()))
        first = _field(key, value).plain()
        more = len(args) - 1
        first = safe_line(first, 160) + (f" (+{more} more)" if more else "")
    else:
        first = "no arguments"
    return Preview(name, "arguments", first, count, source=source)


def _raw(name: str, args: Mapping[str, object], why: str, what: str) -> Preview:
    """The arguments as they came, after one line saying why no ``what`` (diff, command) is shown."""
    reason = f"No {what} shown: {why}."
    text = _json_text(args)
    json_lines = _json_source(text)
    count = sum(1 for _ in json_lines())

    def source() -> Iterator[PreviewLine]:
        yield PreviewLine("why", safe_line(reason))
        yield from json_lines()

    first = safe_line(f"no {what}: {why}", 200)
    return Preview(name, "raw", first, count + 1, problem=safe_line(why), source=source)


def approval_preview(approval: Approval) -> Preview:
    """The preview of an approval's call (remembered while its record is the same)."""
    return preview_of(approval.id, approval.tool_name, approval.tool_args)
