"""``client.paths`` finds the same directories as platformdirs, whether it asks platformdirs or not.

On Linux it computes the XDG defaults itself (importing platformdirs costs scripted commands ~10 ms);
a user's profiles, database and local-server file must not move because of that.
"""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest

from client import paths

KINDS = [
    (paths.config_dir, platformdirs.user_config_dir, "XDG_CONFIG_HOME"),
    (paths.data_dir, platformdirs.user_data_dir, "XDG_DATA_HOME"),
    (paths.state_dir, platformdirs.user_state_dir, "XDG_STATE_HOME"),
]


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PRELOOP_CONFIG_DIR", "PRELOOP_DATA_DIR", "PRELOOP_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("home", ["/home/op", "/home/op/", "/", "/srv//ops", "relative/home"])
@pytest.mark.parametrize("xdg", [None, "", "/var/xdg", "   ", "relative/dir"])
def test_every_directory_is_where_platformdirs_puts_it(
    monkeypatch: pytest.MonkeyPatch, home: str, xdg: str | None
) -> None:
    monkeypatch.setenv("HOME", home)
    for ours, theirs, variable in KINDS:
        if xdg is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, xdg)
        assert ours() == Path(theirs(paths.APP_NAME)), (variable, xdg, home)


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG defaults are computed on Linux only")
def test_the_usual_case_needs_no_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    """No XDG variables, an absolute HOME: the directories come without platformdirs being imported."""
    monkeypatch.setenv("HOME", "/home/op")
    for _, _, variable in KINDS:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delitem(sys.modules, "platformdirs")
    assert paths.state_dir() == Path("/home/op/.local/state/preloop")
    assert paths.config_dir() == Path("/home/op/.config/preloop")
    assert paths.data_dir() == Path("/home/op/.local/share/preloop")
    assert "platformdirs" not in sys.modules
