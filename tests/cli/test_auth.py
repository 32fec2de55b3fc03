"""``preloop login | logout | auth status``: the token is checked, stored where the user allowed, never shown.

The keyring is forced to the "fail" backend (tests/cli/conftest.py), as on a headless machine: login must
say so and offer the explicit file fallback instead of silently writing a file.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from cli.main import main
from client import paths
from tests.cli.helpers import preloop


@pytest.fixture
def no_local_file(live_server) -> None:
    """Without the local-server file, only what login stored can authenticate."""
    paths.local_server_file().unlink()


def test_login_without_keyring_offers_the_file_and_stores_nothing(live_server, no_local_file) -> None:
    done = preloop("login", "--url", live_server.url, "--with-token", input=live_server.token + "\n")
    assert done.returncode == 1
    assert (
        "no keyring" in done.stderr and "--store file" in done.stderr and "Nothing was stored" in done.stderr
    )
    assert live_server.token not in done.stdout + done.stderr
    assert not (paths.config_dir() / "credentials.json").exists()


def test_login_with_file_store_then_status_then_logout(live_server, no_local_file) -> None:
    done = preloop(
        "login", "--url", live_server.url, "--with-token", "--store", "file", input=live_server.token + "\n"
    )
    assert done.returncode == 0, done.stderr
    assert "Logged in to" in done.stdout and "(mode 0600)" in done.stdout
    creds = paths.config_dir() / "credentials.json"
    assert stat.S_IMODE(os.stat(creds).st_mode) == 0o600
    assert live_server.token in creds.read_text()
    assert live_server.token not in done.stdout + done.stderr

    # a profile now names the server, so commands need no flags
    listed = preloop("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["items"] == []

    status = preloop("auth", "status")
    assert status.returncode == 0, status.stderr
    assert "from the credentials file; not shown" in status.stdout and "ok, local server" in status.stdout
    assert live_server.token not in status.stdout + status.stderr

    out = preloop("logout")
    assert out.returncode == 0 and "removed the token" in out.stdout
    assert not creds.exists() or live_server.token not in creds.read_text()
    after = preloop("auth", "status")
    assert after.returncode == 1
    assert "Token:    none" in after.stdout and "preloop login" in after.stdout
    again = preloop("logout")
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_login_refuses_a_bad_token_and_keeps_nothing(live_server, no_local_file) -> None:
    done = preloop("login", "--url", live_server.url, "--with-token", "--store", "file", input="plo_bogus\n")
    assert done.returncode == 1
    assert "not authorised" in done.stderr and "plo_bogus" not in done.stderr
    assert not (paths.config_dir() / "credentials.json").exists()


def test_login_needs_a_terminal_or_with_token(live_server, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["login", "--url", live_server.url]) == 2
    assert "--with-token" in capsys.readouterr().err


def test_status_uses_env_and_never_prints_the_token(live_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRELOOP_URL", live_server.url)
    monkeypatch.setenv("PRELOOP_TOKEN", live_server.other_token)
    done = preloop("auth", "status")
    assert done.returncode == 0
    assert "(from PRELOOP_URL)" in done.stdout and "(from PRELOOP_TOKEN; not shown)" in done.stdout
    assert live_server.other_token not in done.stdout + done.stderr
    monkeypatch.setenv("PRELOOP_TOKEN", "plo_expired")
    bad = preloop("auth", "status")
    assert bad.returncode == 1 and "not working: not authorised" in bad.stdout


def test_a_profile_named_with_emoji_cjk_and_quotes_is_saved_and_later_commands_work(
    live_server, no_local_file
) -> None:
    import tomllib

    name = "prod 😀 東京 \"quoted\" 'single' back\\slash"
    done = preloop(
        "login",
        "--url",
        live_server.url,
        "--profile",
        name,
        "--with-token",
        "--store",
        "file",
        input=live_server.token + "\n",
    )
    assert done.returncode == 0, done.stderr
    saved = tomllib.loads((paths.config_dir() / "config.toml").read_text(encoding="utf-8"))
    assert saved["default_profile"] == name
    assert saved["profiles"][name]["url"] == live_server.url
    # every later command reads the file back: by default, and by the profile's name
    for args in (("sessions", "list", "--json"), ("--profile", name, "sessions", "list", "--json")):
        listed = preloop(*args)
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout)["items"] == []
    status = preloop("auth", "status")
    assert status.returncode == 0, status.stderr
    assert f"Profile:  {name}" in status.stdout
