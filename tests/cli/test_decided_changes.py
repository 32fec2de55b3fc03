"""The digest and the export show what a decided file edit changed: the same preview the app and
``preloop approvals show`` give (issue 24, section 1), over the real local server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest

from cli.main import main
from tests.cli.test_approvals_show import EDIT, _pending

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())


async def test_the_digest_and_the_export_show_the_diff_of_a_decided_edit(
    live_server, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    async with live_server.harness() as harness:
        agent = await harness.start_session(agent_name="builder", title="Round the totals")
        edit = asyncio.create_task(agent.permission_check("Edit", EDIT))
        [edit_id] = await _pending(live_server.url, live_server.token, 1)
        assert await asyncio.to_thread(main, ["approvals", "approve", edit_id]) == 0
        await asyncio.wait_for(edit, 30)
        shell = asyncio.create_task(agent.permission_check("Bash", {"command": "make deploy"}))
        [shell_id] = await _pending(live_server.url, live_server.token, 1)
        assert await asyncio.to_thread(main, ["approvals", "decline", shell_id, "--comment", "not now"]) == 0
        await asyncio.wait_for(shell, 30)
        capsys.readouterr()
        sid = agent.session_id

        assert await asyncio.to_thread(main, ["sessions", "digest", sid, "--since", "30m"]) == 0
        text = capsys.readouterr().out
        assert "✓ Edit approved" in text and "src/checkout.py +1 −1" in text

        assert (
            await asyncio.to_thread(main, ["sessions", "digest", sid, "--since", "30m", "--format", "md"])
            == 0
        )
        md = capsys.readouterr().out
        block = md[md.index("```diff") :]
        assert block.splitlines()[1:5] == [
            "    src/checkout.py  +1 −1",
            "     def total(cart):",
            "    -    return sum(cart)",
            "    +    return round(sum(cart), 2)",
        ]
        assert md.count("```diff") == 1  # the declined shell call is not an edit

        assert await asyncio.to_thread(main, ["sessions", "digest", sid, "--since", "30m", "--json"]) == 0
        decided = {x["tool"]: x for x in json.loads(capsys.readouterr().out)["approvals_decided"]}
        assert decided["Edit"]["change"]["first_line"] == "src/checkout.py +1 −1"
        assert decided["Bash"]["change"] is None

        assert await asyncio.to_thread(main, ["sessions", "export", sid, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
        changes = {a["tool"]: a["change"] for a in doc["approvals"]}
        assert changes["Bash"] is None
        assert changes["Edit"]["lines"] == [
            "src/checkout.py  +1 −1",
            " def total(cart):",
            "-    return sum(cart)",
            "+    return round(sum(cart), 2)",
        ]
        assert changes["Edit"]["files"][0]["added"] == 1 and changes["Edit"]["more_lines"] == 0

        target = tmp_path / "review.md"
        assert await asyncio.to_thread(main, ["sessions", "export", sid, "-o", str(target)]) == 0
        review = target.read_text()
        section = review[review.index("## Changes decided") :]
        assert section.splitlines()[2].startswith("**Edit** approved at ")
        assert "```diff\nsrc/checkout.py  +1 −1\n def total(cart):\n-    return sum(cart)\n" in section
