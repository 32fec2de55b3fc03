"""Which server and token the client uses, and where tokens are kept (never printed)."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import keyring
import keyring.backend
import keyring.backends.fail
import keyring.errors
import pytest

from client import config
from client.errors import ConfigError, NoKeyring, UsageError

URL = "http://127.0.0.1:8765"
TOKEN = "tok-ABCDEF-123456"


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A working keyring backend held in memory (this machine has none)."""

    priority = 10  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.store:
            raise keyring.errors.PasswordDeleteError("not found")
        del self.store[(service, username)]


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("PRELOOP_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("PRELOOP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PRELOOP_URL", raising=False)
    monkeypatch.delenv("PRELOOP_TOKEN", raising=False)
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    yield tmp_path
    keyring.set_keyring(previous)


@pytest.fixture
def memory_keyring() -> MemoryKeyring:
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    return backend


def write_local_server(tmp_path: Path, url: str = "http://127.0.0.1:9999", token: str = "local-tok") -> None:
    path = tmp_path / "state" / "local-server.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"url": url, "token": token}))


def test_nothing_configured_says_what_to_do() -> None:
    with pytest.raises(ConfigError, match="no server configured: pass --url, set PRELOOP_URL"):
        config.resolve_settings()


def test_without_a_keyring_storing_refuses_and_says_so() -> None:
    works, description = config.keyring_status()
    assert not works
    assert "no OS keyring" in description
    with pytest.raises(NoKeyring) as info:
        config.store_token(URL, TOKEN)
    assert "credentials.json" in str(info.value)
    assert TOKEN not in str(info.value)
    assert not config.credentials_file().exists()


def test_file_fallback_only_when_allowed_and_private(isolated: Path) -> None:
    assert config.store_token(URL + "/", TOKEN, allow_file=True) == "file"
    path = config.credentials_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.stored_token("HTTP://127.0.0.1:8765") == (TOKEN, "file")
    settings = config.resolve_settings(url=URL)
    assert (settings.token, settings.token_source) == (TOKEN, "file")
    assert config.delete_token(URL) == ["file"]
    assert config.stored_token(URL) == (None, None)
    assert not path.exists()


def test_keyring_is_used_when_it_works(memory_keyring: MemoryKeyring) -> None:
    assert config.keyring_status()[0]
    assert config.store_token(URL, TOKEN) == "keyring"
    assert memory_keyring.store == {("preloop", URL): TOKEN}
    assert not config.credentials_file().exists()
    assert config.stored_token(URL) == (TOKEN, "keyring")
    assert config.delete_token(URL) == ["keyring"]
    assert memory_keyring.store == {}


def test_profiles_round_trip_through_toml() -> None:
    config.save_profile("work", "https://Preloop.Example.com/", server_kind="preloop")
    config.save_profile('odd "name"', "http://127.0.0.1:1234")
    config.save_profile("😀 東京\\", "http://127.0.0.1:4321")
    loaded = config.load_config()
    assert loaded.profiles["😀 東京\\"].url == "http://127.0.0.1:4321"
    assert loaded.default_profile == "work"  # the first profile becomes the default
    assert loaded.profiles["work"].url == "https://preloop.example.com"
    assert loaded.profiles["work"].server_kind == "preloop"
    assert loaded.profiles['odd "name"'].url == "http://127.0.0.1:1234"
    config.save_profile('odd "name"', "http://127.0.0.1:1234", make_default=True)
    assert config.load_config().default_profile == 'odd "name"'
    assert config.delete_profile("work")
    assert not config.delete_profile("work")


def test_broken_config_file_is_named() -> None:
    path = config.config_file()
    path.parent.mkdir(parents=True)
    path.write_text("this is = = not toml")
    with pytest.raises(ConfigError, match=r"config\.toml"):
        config.load_config()


def test_precedence_flags_over_env_over_profile_over_local_file(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_local_server(isolated)
    s = config.resolve_settings()
    assert (s.url, s.token, s.token_source, s.server_kind) == (
        "http://127.0.0.1:9999",
        "local-tok",
        "local-server",
        "local",
    )

    config.save_profile("work", "https://preloop.example.com", server_kind="preloop")
    config.store_token("https://preloop.example.com", "profile-tok", allow_file=True)
    s = config.resolve_settings()
    assert (s.url, s.token, s.profile, s.server_kind, s.token_source) == (
        "https://preloop.example.com",
        "profile-tok",
        "work",
        "preloop",
        "file",
    )

    monkeypatch.setenv("PRELOOP_URL", "http://env.example:1")
    monkeypatch.setenv("PRELOOP_TOKEN", "env-tok")
    s = config.resolve_settings()
    assert (s.url, s.token, s.url_source, s.token_source) == ("http://env.example:1", "env-tok", "env", "env")

    s = config.resolve_settings(url="http://flag.example:2", token="flag-tok")
    assert (s.url, s.token, s.url_source, s.token_source) == (
        "http://flag.example:2",
        "flag-tok",
        "flag",
        "flag",
    )

    # an explicit profile beats the environment's URL (it is a flag)
    s = config.resolve_settings(profile="work")
    assert s.url == "https://preloop.example.com"
    with pytest.raises(UsageError, match="no profile named 'nope'"):
        config.resolve_settings(profile="nope")


def test_settings_repr_masks_the_token() -> None:
    s = config.Settings(url=URL, token=TOKEN, token_source="flag")
    assert TOKEN not in repr(s)
    assert TOKEN not in str(s)
    assert TOKEN not in f"{s}" and TOKEN not in repr([s]) and TOKEN not in repr(replace(s, profile="p"))
    assert "***" in repr(s)


def test_bad_url_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not a server URL"):
        config.resolve_settings(url="localhost:8765")


class CountingKeyring(MemoryKeyring):
    """A working keyring that counts lookups, to show when resolution never needs one."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def get_password(self, service: str, username: str) -> str | None:
        self.lookups += 1
        return super().get_password(service, username)


def test_the_local_server_files_own_token_goes_with_its_url_without_asking_the_keyring(
    isolated: Path,
) -> None:
    write_local_server(isolated, token="fresh-local-tok")
    counting = CountingKeyring()
    keyring.set_keyring(counting)
    counting.set_password("preloop", "http://127.0.0.1:9999", "stale-stored-tok")
    s = config.resolve_settings()
    assert (s.token, s.token_source, s.url_source) == ("fresh-local-tok", "local-server", "local-server")
    assert counting.lookups == 0
    # Named explicitly (a flag), the same URL still prefers the token stored for it.
    s = config.resolve_settings(url="http://127.0.0.1:9999")
    assert (s.token, s.token_source) == ("stale-stored-tok", "keyring")
    assert counting.lookups == 1


def test_scripted_commands_with_a_token_at_hand_never_import_the_keyring(isolated: Path) -> None:
    """Loading the keyring costs ~0.1 s per command; with PRELOOP_TOKEN or the local file it is not needed."""
    import os
    import subprocess
    import sys

    write_local_server(isolated)
    code = (
        "import sys; from client import config; s = config.resolve_settings(); "
        "print(s.token_source, 'keyring' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRELOOP_")}
    env.update(PRELOOP_CONFIG_DIR=str(isolated / "config"), PRELOOP_STATE_DIR=str(isolated / "state"))
    for extra, expected in (({}, "local-server False"), ({"PRELOOP_TOKEN": "t"}, "env False")):
        done = subprocess.run(
            [sys.executable, "-c", code], env={**env, **extra}, cwd=root, capture_output=True, text=True
        )
        assert done.stdout.strip() == expected, done.stderr


def test_an_unreachable_server_is_asked_about_by_the_command_that_serves_it(isolated: Path) -> None:
    """The question after "cannot reach X:" names what brings X back: the command the local-server file
    says started the last local server there, else the usual ports; nothing of ours for a remote server."""
    from server.embedded import write_local_server_file

    assert config.how_to_start("http://127.0.0.1:8766") == (
        "is the server running? (`preloop demo` serves this address)"
    )
    assert config.how_to_start("http://127.0.0.1:8765") == (
        "is the server running? (`preloop serve` starts a local one)"
    )
    assert config.how_to_start("https://preloop.example.com") == "is the server running?"
    assert config.how_to_start("http://127.0.0.1:41234") == "is the server running?"
    write_local_server_file("http://127.0.0.1:41234", "t", started_by="demo")
    assert config.how_to_start("http://127.0.0.1:41234/") == (
        "is `preloop demo --port 41234` running? (it was the last local server here)"
    )
    write_local_server_file("http://127.0.0.1:8766", "t", started_by="demo")
    assert config.how_to_start("http://127.0.0.1:8766") == (
        "is `preloop demo` running? (it was the last local server here)"
    )
    write_local_server_file("http://127.0.0.1:8765", "t", started_by="serve")
    assert config.how_to_start("http://127.0.0.1:8765") == (
        "is `preloop serve` running? (it was the last local server here)"
    )
    assert config.how_to_start("http://127.0.0.1:8766") == (  # the file names another server
        "is the server running? (`preloop demo` serves this address)"
    )
