"""Where the client and the local control plane keep their files (platformdirs, per user).

The local server writes ``local_server_file()`` on start (mode 0600): ``{"url": ..., "token": ...,
"started_by": "serve" | "demo"}``. The client falls back to it when no profile, flag or environment
variable names a server, so the demo and a plain ``preloop serve`` need no login step; and when that
server does not answer, it names the command that started it (``client.config.how_to_start``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import platformdirs

APP_NAME = "preloop"


def _override(var: str) -> Path | None:
    value = os.environ.get(var)
    return Path(value) if value else None


def config_dir() -> Path:
    """Profiles (``config.toml``) live here; ``PRELOOP_CONFIG_DIR`` overrides (tests use it)."""
    return _override("PRELOOP_CONFIG_DIR") or Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    """The local server's SQLite database lives here; ``PRELOOP_DATA_DIR`` overrides."""
    return _override("PRELOOP_DATA_DIR") or Path(platformdirs.user_data_dir(APP_NAME))


def state_dir() -> Path:
    """Runtime state (the local server's address and token); ``PRELOOP_STATE_DIR`` overrides."""
    return _override("PRELOOP_STATE_DIR") or Path(platformdirs.user_state_dir(APP_NAME))


def exports_dir() -> Path:
    """Where the TUI's export key writes session exports (the user's data, next to the database)."""
    return data_dir() / "exports"


def local_server_file() -> Path:
    """``{"url", "token", "started_by"}`` of the most recently started local server, readable by its owner
    only."""
    return state_dir() / "local-server.json"


def replace_file(path: Path, text: str, *, durable: bool = False) -> None:
    """Write ``text`` as the whole of ``path``, the one way anything here writes a file (profiles, stored
    tokens, the local server's token, marks, drafts, exports): only its owner may read it (mode 0600;
    its folder made, 0700, when missing), and it is written to a temporary file of its own in the same
    folder and renamed over it, so a crash, a kill or a second process writing at once leaves the old
    content or a new one, never half. ``durable`` also puts the file, and its name in the folder, on the
    disk itself (``fsync``: survives a power loss; slower on a busy disk). Raises ``OSError``; callers
    that must not fail catch it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        flush_to_disk(path)


def flush_to_disk(path: Path) -> None:
    """Put a file, and its name in its folder, on the disk itself (a power loss keeps it)."""
    for target, flags in ((path, os.O_RDONLY), (path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))):
        fd = os.open(target, flags)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def default_db_path() -> Path:
    return data_dir() / "control-plane.sqlite3"
