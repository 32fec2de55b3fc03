"""Unsent note drafts, one per session, kept in memory and (optionally) in files that survive a crash.

An operator half-way through a long note who goes back to the list, attaches to another session, or whose
terminal dies must find the text again on re-attach. The attach screen saves the note box here on every
change and when it leaves; it loads it back on attach. A sent note clears its draft.

Files: ``<directory>/<session id>.txt`` (UTF-8, mode 0600, written to a temporary file and renamed by
:func:`client.paths.replace_file`, so a kill mid-write leaves the old draft or the new one, never half).
The default directory is ``client.paths.state_dir() / "drafts"``. Without a directory the store is memory
only (tests, snapshots). A draft that cannot be written (disk full, read-only home) stays in memory:
saving never raises.

Two costs, two moments. Every keystroke is written (write and rename: ~0.3 ms), which is all it takes for
the app being killed or crashing to lose nothing: the kernel has the file. Flushing it to the disk itself
(``fsync``: ~1 ms, at times 10+ ms on a busy disk) is what survives the machine losing power; that is done
by ``put(..., durable=True)``, which the attach screen calls half a second after an edit (so at most twice
a second while typing) and on leaving.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from client.paths import flush_to_disk, replace_file

_SAFE_KEY = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


class DraftStore:
    """``get`` / ``put`` by session id; ``put`` of blank text forgets the draft."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._memory: dict[str, str] = {}

    def _path(self, session_id: str) -> Path | None:
        if self.directory is None or not _SAFE_KEY.match(session_id) or session_id.startswith("."):
            return None
        return self.directory / f"{session_id}.txt"

    def get(self, session_id: str) -> str:
        """The draft for a session ("" if none): memory first, then the file a previous run left."""
        if session_id in self._memory:
            return self._memory[session_id]
        path = self._path(session_id)
        if path is None:
            return ""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return ""
        self._memory[session_id] = text
        return text

    def put(self, session_id: str, text: str, *, durable: bool = False) -> None:
        """Remember ``text`` as the session's draft (blank text: forget it); ``durable`` also flushes the
        file to the disk (see the module docstring). Never raises."""
        if not text.strip():
            self._memory.pop(session_id, None)
            path = self._path(session_id)
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            return
        path = self._path(session_id)
        if self._memory.get(session_id) == text:
            if durable and path is not None:
                with contextlib.suppress(OSError):
                    flush_to_disk(path)
            return
        self._memory[session_id] = text
        if path is None:
            return
        # On failure the draft is still in memory: losing the file copy must not stop the operator typing.
        with contextlib.suppress(OSError):
            replace_file(path, text, durable=durable)
