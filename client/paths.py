"""Where the client and the local control plane keep their files (platformdirs' per-user directories).

The local server writes ``local_server_file()`` on start (mode 0600): ``{"url": ..., "token": ...}``. The
client falls back to it when no profile, flag or environment variable names a server, so the demo and a
plain ``preloop serve`` need no login step.

On Linux with an absolute ``HOME`` and the ``XDG_*_HOME`` variable unset, the directory is the XDG default
(``~/.config/preloop``, ``~/.local/share/preloop``, ``~/.local/state/preloop``), computed here: it is what
platformdirs answers (a test compares them), and importing platformdirs costs a scripted command ~10 ms
of its ~150 ms (it loads ``tempfile``). Every other case asks platformdirs, whose rules for the rest (a
relative ``HOME``, XDG variables, other systems) differ between its versions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "preloop"


def _override(var: str) -> Path | None:
    value = os.environ.get(var)
    return Path(value) if value else None


def _user_dir(xdg_var: str, default: str, kind: str) -> Path:
    """The per-user directory of ``kind`` ("config", "data", "state") for this app (see the docstring)."""
    home = os.environ.get("HOME", "")
    if sys.platform == "linux" and not os.environ.get(xdg_var) and os.path.isabs(home):
        return Path(home, default, APP_NAME)
    import platformdirs

    return Path(getattr(platformdirs, f"user_{kind}_dir")(APP_NAME))


def config_dir() -> Path:
    """Profiles (``config.toml``) live here; ``PRELOOP_CONFIG_DIR`` overrides (tests use it)."""
    return _override("PRELOOP_CONFIG_DIR") or _user_dir("XDG_CONFIG_HOME", ".config", "config")


def data_dir() -> Path:
    """The local server's SQLite database lives here; ``PRELOOP_DATA_DIR`` overrides."""
    return _override("PRELOOP_DATA_DIR") or _user_dir("XDG_DATA_HOME", ".local/share", "data")


def state_dir() -> Path:
    """Runtime state (the local server's address and token); ``PRELOOP_STATE_DIR`` overrides."""
    return _override("PRELOOP_STATE_DIR") or _user_dir("XDG_STATE_HOME", ".local/state", "state")


def exports_dir() -> Path:
    """Where the TUI's export key writes session exports (the user's data, next to the database)."""
    return data_dir() / "exports"


def local_server_file() -> Path:
    """``{"url", "token"}`` of the most recently started local server, readable by its owner only."""
    return state_dir() / "local-server.json"


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (mode 0600), atomically: a reader, or a crash mid-write,
    sees the old content or the new, never half (profiles, stored tokens, the local server's token)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)  # an older .tmp left by a crash keeps its mode through O_CREAT
    os.replace(tmp, path)


def default_db_path() -> Path:
    return data_dir() / "control-plane.sqlite3"
