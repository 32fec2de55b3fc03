"""Session export: the JSON validates against the shipped schema; the Markdown stays inert on GitHub.

The Markdown is parsed with markdown-it (CommonMark + GFM tables, what GitHub renders) to check the
structure a reader sees: no HTML from agent text, every table row one row with all its cells, every
agent text inside its own closed code block.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
from markdown_it import MarkdownIt
from markdown_it.token import Token

from client.export import build_export, md_block, md_inline, to_json, to_markdown
from client.models import Approval, ApprovalDecider, Note, Session
from client.timeline import Timeline
from tests.client.test_timeline import SID, Feed, approval, note, session_row

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())
NOW = datetime(2026, 3, 1, 10, 30, tzinfo=UTC)
HOSTILE = (
    "```\n</details><script>alert(1)</script>\n| x | y |\n@everyone $a^2$ :boom: [link](http://evil) *em*"
)


def validate(doc: dict[str, Any]) -> None:
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def incident() -> Timeline:
    """A session with everything an export shows, with hostile text in every place an agent can write."""
    ev, timeline = Feed(), Timeline()
    t = "2026-03-01T10:00:{:02d}Z"
    timeline.apply(ev("session.started", at=t.format(0), session=session_row(agent_name="builder")))
    timeline.apply(ev("run.started", at=t.format(1), run_id="r1", task="fix | the <b>build</b>"))
    timeline.apply(ev("model.delta", at=t.format(2), run_id="r1", iteration=1, text=HOSTILE))
    timeline.apply(
        ev(
            "tool.started",
            at=t.format(3),
            run_id="r1",
            call_id="c1",
            iteration=1,
            name="Bash",
            args_summary="rm -rf `dist` | tee <out>",
        )
    )
    timeline.apply(
        ev(
            "approval.requested",
            at=t.format(4),
            approval=approval(
                "a1",
                summary="Allow rm -rf | dist?",
                risk_level="danger",
                tool_args={"command": "rm -rf dist\x1b[2J"},
                requested_at=t.format(4),
            ),
        )
    )
    timeline.apply(
        ev(
            "note.created",
            at=t.format(5),
            note=note(
                "n1",
                "pending",
                text="stop | now\n<img src=x onerror=alert(1)>",
                created_at=t.format(5),
                author={"display": "Ana <ops>"},
            ),
        )
    )
    timeline.apply(
        ev(
            "approval.decided",
            at=t.format(6),
            approval=approval(
                "a1",
                "declined",
                approver_comment="no | never\n`rm`",
                decided_by_human=True,
                requested_at=t.format(4),
                resolved_at=t.format(6),
            ),
        )
    )
    timeline.apply(
        ev(
            "tool.completed",
            at=t.format(7),
            run_id="r1",
            call_id="c1",
            name="Bash",
            status="denied",
            duration_ms=3125,
        )
    )
    timeline.apply(
        ev(
            "note.delivered",
            at=t.format(8),
            note=note(
                "n1",
                "delivered",
                text="stop | now\n<img src=x onerror=alert(1)>",
                created_at=t.format(5),
                delivered_at=t.format(8),
                author={"display": "Ana <ops>"},
            ),
        )
    )
    timeline.apply(ev("model.delta", at=t.format(9), run_id="r1", iteration=2, text="OK, stopping."))
    timeline.apply(ev("model.step", at=t.format(9), run_id="r1", iteration=2, phase="final_answer"))
    timeline.apply(ev("run.completed", at=t.format(10), run_id="r1", answer="Stopped.\n\n````\nno build"))
    timeline.apply(ev("session.ended", at=t.format(11), session=session_row(ended_at=t.format(11))))
    return timeline


def test_export_json_validates_and_holds_every_fact() -> None:
    doc = build_export(SID, incident(), exported_at=NOW)
    validate(doc)
    validate(json.loads(to_json(doc)))  # what is written to the file round-trips
    kinds = [item["kind"] for item in doc["timeline"]]
    assert kinds[:3] == ["session_started", "run", "commentary"]
    assert "final_answer" in kinds and kinds[-1] == "session_ended"
    [tool] = [item for item in doc["timeline"] if item["kind"] == "tool_call"]
    assert (tool["name"], tool["outcome"], tool["duration_ms"]) == ("Bash", "denied", 3125)
    [n1] = doc["notes"]
    assert [(s["state"], s["at"]) for s in n1["states"]] == [
        ("pending", "2026-03-01T10:00:05Z"),
        ("delivered", "2026-03-01T10:00:08Z"),
    ]
    assert n1["author"] == "Ana <ops>"
    assert n1["then"]["kind"] == "text" and n1["then"]["summary"].startswith("final answer: Stopped.")
    [a1] = doc["approvals"]
    # The server says a person decided but not who: said so, no name invented.
    assert a1["decided_by"] == {"kind": "human", "detail": "an operator", "you": False}
    assert (a1["status"], a1["decided_at"], a1["comment"]) == (
        "declined",
        "2026-03-01T10:00:06Z",
        "no | never\n`rm`",
    )
    assert "\x1b" not in json.dumps(doc)  # the escape sequence in the arguments is neutralised
    assert doc["final_answer"] == "Stopped.\n\n````\nno build"
    assert doc["tool_calls"] == {"count": 1, "failed": 1, "total_duration_ms": 3125}
    # the Markdown says a duration as the timeline's tool line does (``client.entry_words``)
    md = to_markdown(doc)
    assert "3.1s in total" in md and "| denied | 3.1s |" in md and "3.1 s" not in md


def test_server_lists_win_over_the_timeline_and_fill_what_it_missed() -> None:
    later = Note.model_validate(note("n1", "acknowledged", created_at="2026-03-01T10:00:05Z"))
    unseen = Note.model_validate(note("n9", "expired", expired_at="2026-03-01T09:00:00Z"))
    pending = Approval.model_validate(approval("a9", requested_at="2026-03-01T10:20:00Z"))
    doc = build_export(SID, incident(), notes=[later, unseen], approvals=[pending], exported_at=NOW)
    validate(doc)
    states = {n["note_id"]: n["state"] for n in doc["notes"]}
    assert states == {"n1": "acknowledged", "n9": "expired"}
    by_id = {a["approval_id"]: a for a in doc["approvals"]}
    assert by_id["a9"]["decided_by"] is None and by_id["a9"]["decided_at"] is None


def test_decided_by_says_what_the_server_knows() -> None:
    ai = Approval.model_validate(approval("x", "approved", decided_by_ai=True, ai_model="judge-1"))
    auto = Approval.model_validate(approval("y", "approved", auto_approved_reason="read-only tool"))
    gone = Approval.model_validate(approval("z", "expired"))
    doc = build_export(SID, Timeline(), approvals=[ai, auto, gone], exported_at=NOW)
    validate(doc)
    assert [a["decided_by"]["kind"] for a in doc["approvals"]] == ["ai", "policy", "expiry"]
    assert doc["approvals"][0]["decided_by"]["detail"] == "an AI reviewer (judge-1)"
    assert doc["approvals"][0]["decided_by"]["name"] == "judge-1"
    assert doc["approvals"][1]["decided_by"]["detail"] == "a standing rule (read-only tool)"


def test_an_empty_timeline_still_exports() -> None:
    doc = build_export(SID, Timeline(), exported_at=NOW)
    validate(doc)
    md = to_markdown(doc)
    assert "*No events.*" in md and "*No tool calls.*" in md and "*No notes.*" in md


def _tokens(md: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(md)


def _walk(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for token in tokens:
        out.append(token)
        out.extend(_walk(token.children or []))
    return out


def test_markdown_renders_agent_text_inert() -> None:
    doc = build_export(SID, incident(), exported_at=NOW)
    md = to_markdown(doc)
    tokens = _tokens(md)
    every = _walk(tokens)
    # No HTML from anyone but us (our own <br> line breaks inside cells are the only inline HTML).
    html = [t.content for t in every if t.type in ("html_inline", "html_block")]
    assert set(html) <= {"<br>"}, html
    # No links were made from agent text.
    assert not [t for t in every if t.type == "link_open"]
    # Each agent text sits in its own closed fence, with its content intact.
    fences = [t.content for t in tokens if t.type == "fence"]
    assert HOSTILE + "\n" in fences
    assert "Stopped.\n\n````\nno build\n" in fences
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[1:] == ["Final answer", "Timeline", "Tool calls", "Notes", "Approvals"]
    # Every table row keeps its cell count (a "|" in agent text did not add a column).
    tables: list[list[int]] = []
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            tables.append([])
        if t.type == "tr_open":
            j, cells = i + 1, 0
            while tokens[j].type != "tr_close":
                cells += tokens[j].type in ("td_open", "th_open")
                j += 1
            tables[-1].append(cells)
    assert [set(rows) for rows in tables] == [{2}, {6}, {5}, {8}]
    assert [len(rows) for rows in tables] == [10, 2, 2, 2]  # header + rows; the note is one row
    text = "".join(t.content for t in every if t.type == "text")
    assert "stop | now" in text and "no | never" in text and "rm -rf `dist` | tee <out>" in text


def test_md_inline_and_block_escape_what_github_would_render() -> None:
    rendered = MarkdownIt("commonmark").enable("table").render(md_inline("**b** <i>x</i> [l](u) `c`\nnext"))
    assert rendered == "<p>**b** &lt;i&gt;x&lt;/i&gt; [l](u) `c`<br>next</p>\n"
    block = "\n".join(md_block("a ``` b\n`````"))
    assert block.startswith("``````text\n") and block.endswith("\n``````")
    assert md_inline(None) == "" and md_inline("abcdef", limit=4) == "abc…"


def test_list_items_carry_no_html_and_the_operator_is_named_the_same_in_both_tables() -> None:
    """Issue 18: a two-line note in the timeline's list read "stop | now<br>..."; its notes were by
    "Ana <ops>" while the approval she declined was by "an operator". A list item's line breaks are plain
    text, and a decision reads as the server names its decider (issue 24: our server stores every
    decision with its operator): the same name as her notes; "you" for the operator who exports."""
    timeline = incident()
    [decided] = timeline.approvals
    timeline.approvals[decided] = timeline.approvals[decided].model_copy(
        update={"decider": ApprovalDecider(name="Ana <ops>", user_id="u-ana")}
    )
    doc = build_export(SID, timeline, exported_at=NOW)
    validate(doc)
    [n1], [a1] = doc["notes"], doc["approvals"]
    assert a1["decided_by"]["detail"] == n1["author"] == a1["decided_by"]["name"]
    assert (a1["decided_by"]["kind"], a1["decided_by"]["you"]) == ("human", False)
    md = to_markdown(doc)
    items = [line for line in md.splitlines() if line.startswith("- ")]
    assert any("stop \\| now ↵ \\<img" in line for line in items), items
    assert not any("<br>" in line for line in items)
    assert any("declined by Ana \\<ops\\>" in line for line in items), items
    mine = build_export(SID, timeline, exported_at=NOW, by_you=lambda a: a.id == decided)
    assert mine["approvals"][0]["decided_by"]["detail"] == "you"
    assert mine["approvals"][0]["decided_by"]["you"] is True


def test_a_server_that_keeps_no_decider_is_said_once_and_no_one_is_named() -> None:
    """A Dendrux app records no decider: the document says so once (JSON and Markdown) and names no one."""
    timeline = incident()
    [decided] = timeline.approvals
    timeline.approvals[decided] = timeline.approvals[decided].model_copy(update={"decided_by_human": False})
    doc = build_export(SID, timeline, exported_at=NOW, deciders_recorded=False)
    validate(doc)
    assert doc["deciders_recorded"] is False
    assert doc["approvals"][0]["decided_by"] == {"kind": "unknown", "detail": None, "you": False}
    md = to_markdown(doc)
    assert md.count("does not record who decided") == 1


def test_the_session_cost_is_exported_when_the_server_gives_one_and_absent_otherwise() -> None:
    priced = Session.model_validate(
        session_row(
            token_usage={"input_tokens": 9800, "output_tokens": 2200, "total_tokens": 12000},
            estimated_cost=0.42,
        )
    )
    doc = build_export(SID, incident(), session=priced, exported_at=NOW)
    validate(doc)
    assert doc["session"]["cost"] == {
        "input_tokens": 9800,
        "output_tokens": 2200,
        "total_tokens": 12000,
        "cost_usd": 0.42,
    }
    # ("$" escaped: GitHub would read "$...$" as math)
    assert "| Cost | \\$0.42 · 12k tokens (9.8k in / 2.2k out) |" in to_markdown(doc)
    # Preloop's zeros for a session without model calls, or a server with no figures: no cost at all.
    zeros = Session.model_validate(
        session_row(
            token_usage={"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}, estimated_cost=0.0
        )
    )
    for row in (zeros, Session.model_validate(session_row())):
        doc = build_export(SID, incident(), session=row, exported_at=NOW)
        validate(doc)
        assert "cost" not in doc["session"] and "| Cost |" not in to_markdown(doc)
        assert "$0.00" not in to_markdown(doc)


def test_an_expiry_reads_as_one_in_the_timeline_and_the_table() -> None:
    """The trial: "Approval for Bash expired by nobody decided before it expired"."""
    ev, timeline = Feed(), Timeline()
    asked = approval("e1", tool_name="Bash", summary="rm -rf dist")
    timeline.apply(ev("approval.requested", at="2026-03-01T10:00:01Z", approval=asked))
    gone = approval("e1", "expired", tool_name="Bash", resolved_at="2026-03-01T10:01:01Z")
    timeline.apply(ev("approval.decided", at="2026-03-01T10:01:01Z", approval=gone))
    md = to_markdown(build_export(SID, timeline, exported_at=NOW))
    assert "by nobody" not in md
    assert "Approval for **Bash** expired before anyone decided" in md
    [row] = [line for line in md.splitlines() if line.startswith("|") and "expired" in line]
    assert "nobody decided before it expired" not in row and "| nobody |" in row
