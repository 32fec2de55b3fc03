"""``preloop sessions export`` against the fake Preloop (kind detected, history replayed from its activity
and polled notes/approvals): the same document, valid against the same schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from cli.main import main
from tests.fake_preloop import MAIN_SESSION, TOKEN, FakePreloop

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "export.schema.json").read_text())


pytestmark = pytest.mark.usefixtures("isolated_dirs")  # preloop's folders under tmp_path


@pytest.mark.parametrize("ended", [True, False], ids=["ended", "running"])
def test_export_a_preloop_session_to_json_and_markdown(
    fake: FakePreloop, base_url: str, tmp_path: Path, ended: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    if ended:
        fake.end_session()
    flags = ["--url", base_url, "--token", TOKEN]
    target = tmp_path / "incident.json"
    assert main(["sessions", "export", MAIN_SESSION[:8], "-o", str(target), *flags]) == 0
    assert "Exported session" in capsys.readouterr().err
    doc = json.loads(target.read_text())
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["session"]["id"] == MAIN_SESSION
    assert (doc["session"]["ended_at"] is not None) is ended
    kinds = {item["kind"] for item in doc["timeline"]}
    assert "tool_call" in kinds and "session_started" in kinds
    assert ("session_ended" in kinds) is ended
    assert main(["sessions", "export", MAIN_SESSION, "--format", "md", *flags]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# Session ") and "## Timeline" in md and "## Tool calls" in md
