"""What a call will change, as the operator reads it before deciding (issue 24, section 1).

The pure preview of every tool shape the issue names, and of bad input: shown raw, with one line saying
why no diff is shown, never guessed.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from client.models import Approval
from client.preview import Preview, _opcodes, approval_preview, preview


def plain(p: Preview, limit: int | None = None) -> list[str]:
    lines = p.lines(limit)
    if limit is None:
        assert len(lines) == p.line_count, "the count a card says must be the lines there are"
    return [line.plain() for line in lines]


def test_an_edit_is_a_diff_with_its_file_and_counts() -> None:
    p = preview(
        "Edit",
        {
            "file_path": "src/checkout.py",
            "old_string": "def total(cart):\n    return sum(cart)\n",
            "new_string": "def total(cart):\n    return round(sum(cart), 2)\n",
        },
    )
    assert p.kind == "diff" and p.first_line == "src/checkout.py +1 −1"
    assert plain(p) == [
        "src/checkout.py  +1 −1",
        " def total(cart):",
        "-    return sum(cart)",
        "+    return round(sum(cart), 2)",
    ]
    (change,) = p.files
    assert (change.path, change.lang, change.added, change.removed) == ("src/checkout.py", "python", 1, 1)


def test_an_edit_keeps_three_lines_around_each_change_and_marks_the_gap() -> None:
    old = "\n".join(f"line {n}" for n in range(30))
    new = old.replace("line 2\n", "line two\n").replace("line 25", "line twenty-five")
    lines = plain(preview("Edit", {"file_path": "a.txt", "old_string": old, "new_string": new}))
    assert lines[0] == "a.txt  +2 −2"
    assert lines[1:4] == [" line 0", " line 1", "-line 2"]
    assert "⋯" in lines and " line 10" not in lines
    assert lines[-4:] == ["+line twenty-five", " line 26", " line 27", " line 28"]


def test_replace_all_is_said_on_the_file_line() -> None:
    p = preview("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y", "replace_all": True})
    assert p.lines(1)[0].plain() == "a.py  +1 −1 (every occurrence)"


def test_an_edit_that_changes_nothing_says_so() -> None:
    p = preview("Edit", {"file_path": "a.py", "old_string": "same", "new_string": "same"})
    assert plain(p)[1] == "no change: the old and new text are the same"


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({"old_string": "a", "new_string": "b"}, "the call names no file (file_path is missing)"),
        (
            {"file_path": "", "old_string": "a", "new_string": "b"},
            "the call names no file (file_path is empty)",
        ),
        (
            {"file_path": "a.py", "old_string": 5, "new_string": "b"},
            "old_string is not text (it is a number)",
        ),
        (
            {"file_path": "a.py", "old_string": ["a"], "new_string": "b"},
            "old_string is not text (it is a list)",
        ),
        ({"file_path": "a.py", "old_string": "a\ud800", "new_string": "b"}, "old_string is not valid text"),
        ({"file_path": "a.py", "old_string": "a"}, "new_string is missing"),
        ({"file_path": "a.py", "old_string": "a", "new_string": "b", "replace_all": "yes"}, "replace_all is"),
    ],
)
def test_a_bad_edit_is_shown_raw_with_the_reason(args: dict[str, Any], why: str) -> None:
    p = preview("Edit", args)
    assert p.kind == "raw" and p.problem is not None and p.problem.startswith(why)
    lines = plain(p)
    assert lines[0].startswith(f"No diff shown: {why}")
    assert lines[1] == "{" and lines[-1] == "}"
    assert p.first_line.startswith(f"no diff: {why}")
    assert all("\ud800" not in line for line in lines)  # nothing a terminal cannot write


def test_a_multi_edit_shows_each_edit_under_one_file() -> None:
    p = preview(
        "MultiEdit",
        {
            "file_path": "web/app.ts",
            "edits": [
                {"old_string": "let a = 1", "new_string": "const a = 1"},
                {"old_string": "foo()", "new_string": "bar()", "replace_all": True},
            ],
        },
    )
    assert plain(p) == [
        "web/app.ts  +2 −2",
        "edit 1 of 2",
        "-let a = 1",
        "+const a = 1",
        "edit 2 of 2 · every occurrence",
        "-foo()",
        "+bar()",
    ]
    assert p.files[0].lang == "typescript"


def test_a_multi_edit_with_a_bad_edit_is_shown_raw() -> None:
    p = preview("MultiEdit", {"file_path": "a.py", "edits": [{"old_string": "a", "new_string": "b"}, "x"]})
    assert p.kind == "raw" and p.problem == "edit 2 is not an object (it is str)"
    p = preview("MultiEdit", {"file_path": "a.py", "edits": [{"old_string": "a", "new_string": None}]})
    assert p.problem == "edit 1's new_string is not text (it is null)"


def test_a_write_is_its_whole_content_added() -> None:
    p = preview("Write", {"file_path": "docs/README.md", "content": "# Title\n\nBody\n"})
    assert p.first_line == "docs/README.md +3 lines (whole content)"
    assert plain(p) == ["docs/README.md  +3 lines (whole content)", "+# Title", "+", "+Body"]


def test_a_long_write_shows_its_first_lines_and_counts_the_rest() -> None:
    content = "".join(f"row {n}\n" for n in range(10_000))
    p = preview("Write", {"file_path": "big.csv", "content": content})
    assert p.line_count == 10_001 and p.files[0].added == 10_000
    assert p.text_lines(5, hint="x shows all") == [
        "big.csv  +10,000 lines (whole content)",
        "+row 0",
        "+row 1",
        "+row 2",
        "+row 3",
        "… 9,996 more lines (x shows all)",
    ]
    assert len(p.lines()) == p.line_count


def test_the_editor_tool_str_replace_create_and_insert() -> None:
    for tool in ("str_replace_based_edit_tool", "str_replace_editor"):
        replace = preview(
            tool, {"command": "str_replace", "path": "m.go", "old_str": "a := 1", "new_str": "a := 2"}
        )
        assert plain(replace) == ["m.go  +1 −1", "-a := 1", "+a := 2"]
        create = preview(tool, {"command": "create", "path": "new.rs", "file_text": "fn main() {}\n"})
        assert plain(create) == ["new.rs  +1 line (new file)", "+fn main() {}"]
        insert = preview(
            tool, {"command": "insert", "path": "a.py", "insert_line": 7, "new_str": "x = 1\ny = 2"}
        )
        assert plain(insert) == ["a.py  +2 −0", "insert after line 7", "+x = 1", "+y = 2"]
        at_start = preview(tool, {"command": "insert", "path": "a.py", "insert_line": 0, "insert_text": "#!"})
        assert plain(at_start)[1] == "insert at the start of the file"
    removal = preview("str_replace_editor", {"command": "str_replace", "path": "a.py", "old_str": "gone"})
    assert plain(removal) == ["a.py  +0 −1", "-gone"]


def test_the_editor_tool_reading_is_its_arguments_and_nonsense_is_raw() -> None:
    view = preview("str_replace_based_edit_tool", {"command": "view", "path": "a.py"})
    assert view.kind == "arguments" and view.first_line == "command: view (+1 more)"
    odd = preview("str_replace_based_edit_tool", {"command": "explode", "path": "a.py"})
    assert odd.kind == "raw" and "'explode' is not one this client knows" in (odd.problem or "")
    where = preview(
        "str_replace_editor", {"command": "insert", "path": "a.py", "insert_line": "end", "new_str": "x"}
    )
    assert where.kind == "raw" and where.problem == "insert_line is not a line number"


CODEX_PATCH = """*** Begin Patch
*** Add File: docs/new.md
+# New
+text
*** Update File: src/old_name.py
*** Move to: src/new_name.py
@@ def handler(event):
-    return None
+    return event
*** Delete File: tmp/scratch.txt
*** End Patch
"""


def test_apply_patch_in_the_begin_patch_format() -> None:
    p = preview("apply_patch", {"input": CODEX_PATCH})
    assert p.kind == "diff" and p.first_line == "3 files +3 −1: docs/new.md, src/old_name.py, tmp/scratch.txt"
    assert plain(p) == [
        "docs/new.md  +2 lines (new file)",
        "+# New",
        "+text",
        "src/old_name.py  +1 −1 (moved to src/new_name.py)",
        "@@ def handler(event):",
        "-    return None",
        "+    return event",
        "tmp/scratch.txt (deleted)",
    ]
    assert [f.action for f in p.files] == ["create", "edit", "delete"]


UNIFIED = """diff --git a/app/models.py b/app/models.py
index 3b18e51..a9c4f2d 100644
--- a/app/models.py
+++ b/app/models.py
@@ -10,3 +10,4 @@ class Invoice:
     id: int
-    total: float
+    total: Decimal
+    currency: str
{blank}
@@ -40 +41 @@ def load():
-    return None
\\ No newline at end of file
+    return row
\\ No newline at end of file
diff --git a/old.txt b/new.txt
similarity index 100%
rename from old.txt
rename to new.txt
""".replace("{blank}", " ")


def test_apply_patch_with_a_plain_unified_diff() -> None:
    p = preview("apply_patch", {"patch": UNIFIED})
    lines = plain(p)
    assert lines[0] == "app/models.py  +3 −2"
    assert lines[1] == "@@ -10,3 +10,4 @@ class Invoice:"
    assert "+    currency: str" in lines and "\\ No newline at end of file" in lines
    assert lines[-1] == "new.txt (moved from old.txt)"
    assert p.added == 3 and p.removed == 2


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        ("*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n", "it has no *** End Patch line"),
        (
            "*** Begin Patch\n*** Update File: a.py\nnonsense\n*** End Patch\n",
            "line 3 is not part of a change",
        ),
        (
            "*** Begin Patch\n*** Add File: a.py\nno plus\n*** End Patch\n",
            "line 3 of a new file does not start",
        ),
        ("*** Begin Patch\n+x\n*** End Patch\n", "line 2 is outside any file section"),
        ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\n", "its last hunk is cut off"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\ngarbage\n", "line 6 is not part of a hunk"),
        ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n@@ -5 +5 @@\n", "the hunk before line 5 ends early"),
        ("--- a/x\n@@ -1 +1 @@\n", "line 2 should be +++"),
        ("@@ -1 +1 @@\n-a\n+b\n", "line 1 is a hunk before any --- / +++ header"),
        ("just words", "it has no --- / +++ file header"),
    ],
)
def test_a_patch_that_does_not_parse_is_shown_raw_with_where(patch: str, why: str) -> None:
    p = preview("apply_patch", {"input": patch})
    assert p.kind == "raw"
    assert p.problem is not None and why in p.problem, p.problem
    assert plain(p)[0].startswith("No diff shown: the patch does not parse")


def test_apply_patch_without_a_patch_is_raw() -> None:
    p = preview("apply_patch", {"a": "x", "b": "y"})
    assert p.kind == "raw" and p.problem == "no argument holds the patch"


def test_any_argument_that_already_holds_a_unified_diff_is_shown_as_one() -> None:
    diff = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-Old title\n+New title\n"
    p = preview("github__create_pull_request", {"title": "Retitle", "body_diff": diff, "draft": True})
    assert p.kind == "diff"
    assert plain(p) == [
        "README.md  +1 −1",
        "@@ -1 +1 @@",
        "-Old title",
        "+New title",
        "title: Retitle",
        "draft: true",
    ]


def test_a_shell_command_keeps_its_lines_then_cwd_timeout_and_description() -> None:
    p = preview(
        "Bash",
        {
            "description": "Run the migration",
            "command": "cd /srv/app &&\n  alembic upgrade head",
            "timeout": 600000,
            "cwd": "/srv/app",
            "run_in_background": False,
        },
    )
    assert p.kind == "command" and p.first_line == "cd /srv/app && …"
    assert plain(p) == [
        "$ cd /srv/app &&",
        "    alembic upgrade head",
        "cwd: /srv/app",
        "timeout: 600000",
        "description: Run the migration",
        "run_in_background: false",
    ]


def test_a_shell_argv_is_joined_as_a_shell_would_read_it() -> None:
    p = preview(
        "shell", {"command": ["bash", "-lc", "rm -rf 'build dir'"], "workdir": "/repo", "timeout_ms": 5000}
    )
    assert plain(p) == ["$ bash -lc 'rm -rf '\"'\"'build dir'\"'\"''", "workdir: /repo", "timeout_ms: 5000"]
    for tool in ("run_command", "exec", "exec_command", "run_shell_command", "functions.shell"):
        assert preview(tool, {"command": "ls"}).kind == "command", tool
    assert preview("exec_command", {"cmd": "make test"}).first_line == "make test"


def test_a_patch_given_to_the_shell_is_shown_as_the_diff_it_is() -> None:
    p = preview("shell", {"command": ["apply_patch", CODEX_PATCH], "workdir": "/repo"})
    assert p.kind == "diff" and p.files[0].path == "docs/new.md"
    assert plain(p)[-1] == "workdir: /repo"


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({}, "command is missing"),
        ({"command": 3}, "command is neither text nor a list of words"),
        ({"command": ["ls", 1]}, "command is neither text nor a list of words"),
        ({"command": "  "}, "command is empty"),
    ],
)
def test_a_shell_call_without_a_readable_command_is_raw(args: dict[str, Any], why: str) -> None:
    p = preview("Bash", args)
    assert p.kind == "raw" and (p.problem or "").startswith(why)
    assert plain(p)[0].startswith(f"No command shown: {why}")


def test_anything_else_is_indented_json_with_long_strings_wrapped() -> None:
    long = "word " * 60
    p = preview("WebFetch", {"url": "https://example.com/a", "prompt": long, "notes": "one\ntwo\nthree"})
    assert p.kind == "arguments" and p.first_line == "url: https://example.com/a (+2 more)"
    lines = plain(p)
    assert lines[0] == "{" and lines[1] == '  "url": "https://example.com/a",'
    assert all(len(line) <= 100 for line in lines)
    prompt = [line for line in lines if "word" in line]
    assert len(prompt) == 4 and "".join(x.strip() for x in prompt).count("word") == 60
    assert [line.strip() for line in lines if "one" in line or "two" in line or "three" in line] == [
        '"notes": "one\\n',
        "two\\n",
        'three"',
    ]
    assert preview("Read", {}).first_line == "no arguments"


def test_bookkeeping_keys_are_left_out() -> None:
    p = preview("Bash", {"command": "ls", "_preloop_source": "claude_code"})
    assert "_preloop_source" not in "\n".join(plain(p)) and "claude_code" not in "\n".join(plain(p))


def test_hostile_names_and_lines_stay_inert() -> None:
    hostile = "[bold red]x[/] \x1b]0;title\x07\x1b[2J\u202eevil\r"
    for p in (
        preview("Edit", {"file_path": f"src/{hostile}.py", "old_string": hostile, "new_string": "ok"}),
        preview("Write", {"file_path": hostile, "content": f"{hostile}\n{hostile}"}),
        preview(
            "apply_patch", {"input": f"*** Begin Patch\n*** Add File: {hostile}\n+{hostile}\n*** End Patch"}
        ),
        preview("Bash", {"command": hostile, "cwd": hostile}),
        preview("Mystery", {"x": hostile}),
    ):
        text = "\n".join(plain(p)) + p.first_line
        assert "[bold red]x[/]" in text  # markup is text here; the widgets never parse it
        for bad in ("\x1b", "\x07", "\u202e", "\r"):
            assert bad not in text, (p.tool, bad)


def test_a_very_long_line_is_cut_saying_so() -> None:
    p = preview("Write", {"file_path": "min.js", "content": "x" * 5000})
    assert p.lines()[1].text.endswith("x … 3,000 more characters")


def test_the_model_for_scripts() -> None:
    p = preview("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"})
    data = p.to_json(limit=2)
    assert data["kind"] == "diff" and data["first_line"] == "a.py +1 −1" and data["more_lines"] == 1
    assert data["files"] == [
        {"path": "a.py", "lang": "python", "action": "edit", "added": 1, "removed": 1, "label": None}
    ]
    assert data["lines"][1] == {"kind": "del", "text": "a", "lang": "python"}
    assert p.to_json()["more_lines"] == 0 and len(p.to_json()["lines"]) == 3


def test_an_approval_is_previewed_once_per_record() -> None:
    approval = Approval(id="a1", tool_name="Bash", tool_args={"command": "ls"})
    assert approval_preview(approval) is approval_preview(approval)
    changed = approval.model_copy(update={"tool_args": {"command": "pwd"}})
    assert approval_preview(changed).first_line == "pwd"


def test_a_preview_never_raises() -> None:
    odd: list[tuple[str | None, dict[str, object] | None]] = [
        (None, None),
        ("Edit", {"file_path": "a", "old_string": "", "new_string": ""}),
        ("apply_patch", {"input": "*** Begin Patch\n*** End Patch"}),
        ("", {"": object()}),
    ]
    for tool, args in odd:
        p = preview(tool, args)
        assert p.first_line and plain(p) is not None


@pytest.mark.parametrize("seed", range(30))
def test_the_diff_turns_the_old_text_into_the_new(seed: int) -> None:
    """The opcodes of the fast diff, applied to the old lines, give the new ones."""
    rng = random.Random(seed)
    words = ["a", "b", "c", "d", "return x", "}", ""] + [f"line {n}" for n in range(40)]
    old = [rng.choice(words) for _ in range(rng.randint(0, 60))]
    new = list(old)
    for _ in range(rng.randint(0, 10)):
        at = rng.randint(0, len(new))
        if rng.random() < 0.5 and new[at:]:
            del new[at]
        else:
            new.insert(at, rng.choice(words))
    rebuilt: list[str] = []
    for tag, i1, i2, j1, j2 in _opcodes(old, new):
        rebuilt += old[i1:i2] if tag == "equal" else new[j1:j2]
        if tag == "equal":
            assert old[i1:i2] == new[j1:j2]
    assert rebuilt == new
