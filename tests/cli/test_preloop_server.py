"""The same commands against a Preloop-shaped server (the fake Preloop built from the 0.17.1 captures)."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from tests.fake_preloop import MAIN_SESSION, TOKEN, running_fake_preloop


def test_list_and_send_against_preloop(isolated_dirs, capsys: pytest.CaptureFixture[str]) -> None:
    with running_fake_preloop() as (_fake, url):
        flags = ["--url", url, "--token", TOKEN, "--server-kind", "preloop"]
        assert main(["sessions", "list", "--json", *flags]) == 0
        items = json.loads(capsys.readouterr().out)["items"]
        assert MAIN_SESSION in {item["id"] for item in items}
        assert main(["sessions", "list", *flags]) == 0
        assert MAIN_SESSION[:8] in capsys.readouterr().out
        assert (
            main(["notes", "send", "--session", MAIN_SESSION[:6], "hello from the cli", "--json", *flags])
            == 0
        )
        assert json.loads(capsys.readouterr().out)["target"] == {"kind": "session", "id": MAIN_SESSION}
        assert main(["notes", "list", "--session", MAIN_SESSION, "--json", *flags]) == 0
        texts = [n["text"] for n in json.loads(capsys.readouterr().out)["notes"]]
        assert "hello from the cli" in texts
        assert main(["sessions", "list", "--token", "wrong", "--url", url]) == 1
        assert "preloop login" in capsys.readouterr().err
