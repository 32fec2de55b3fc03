"""Unsent note drafts per session, kept in memory and in files that survive a crash, and never lost to a
second window.

An operator half-way through a long note who goes back to the list, attaches to another session, or whose
terminal dies must find the text again on re-attach. The attach screen saves the note box here on every
change and when it leaves (:meth:`DraftStore.put`); it loads it back on attach (:meth:`DraftStore.get`).
A sent note clears its draft.

**Each writer its own file.** Two windows on one session (two apps, or two machines sharing a home
directory) each write only their own file, ``<directory>/<session id>/<writer>.json``: the writer is this
store, named after its host, process id and a random token. No window ever writes another's file, so
nobody's keystrokes overwrite anybody's draft (never last-writer-wins). A file is written whole to a
temporary file and renamed (:func:`client.paths.replace_file`, mode 0600), so a kill mid-write leaves the
old draft or the new one, never half, and a reader never sees half of one.

**Re-attach offers every draft.** :meth:`DraftStore.get` returns this window's own text and the drafts the
other writers left for the session, each under a marker line naming where and when it was written::

    my own words
    ── draft left in another window (pid 4242 on this machine, 14:02) ──
    the other window's words

A single draft from another writer (the usual case: the app was restarted, or crashed) comes back as it
was, without a marker. Drafts with the same text are offered once.

**Who owns an offered draft.** A draft shown here still belongs to the window that wrote it, as long as
it stands in the box here exactly as offered (its marker line and text untouched): this window's file
lists it as an offer and every reader leaves it out of this window's words, so the next re-attach offers
it once, from its owner's file, with whatever its owner has typed since. It becomes this window's the
moment the operator acts on it here: sends the box, clears it, edits or deletes the offered text. Then
its owner's file is removed (only if it still holds what was offered: an owner who typed more since keeps
the newer draft), and the text lives in this window's file or is gone with the note it became.

**A draft sent elsewhere does not come back.** What a user expects: a note sent from one window is sent,
and no window brings it back as unsent text. The window that sends removes its file; a copy of it shown in
another window is an untouched offer, which is never written to that window's file, so it is not offered
again on any later re-attach. (The other window's box keeps showing it until that window attaches to
the session afresh; its timeline shows the note as sent meanwhile.) Likewise a window whose file was
removed because another window took its draft over does not write it back unless its operator types
more: the text it holds unchanged was acted on elsewhere.

Legacy files from before per-writer files (``<directory>/<session id>.txt``) are offered as drafts of an
earlier run, owned as above.

The default directory is ``client.paths.state_dir() / "drafts"``. Without a directory the store is memory
only (tests, snapshots). A draft that cannot be written (disk full, read-only home) stays in memory:
saving never raises.

Two costs, two moments. Every keystroke is written (write and rename: well under a millisecond), which is
all it takes for the app being killed or crashing to lose nothing: the kernel has the file. Flushing it to
the disk itself (``fsync``, milliseconds on a busy disk) is what survives the machine losing power; that
is done by ``put(..., durable=True)``, which the attach screen calls half a second after an edit (so at
most twice a second while typing) and on leaving.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from client.paths import flush_to_disk, replace_file
from client.textsafe import safe_line

_SAFE_KEY = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_HOST_CHARS = re.compile(r"[^A-Za-z0-9-]+")
FORMAT = 1
MARK = "──"


def _host() -> str:
    return _HOST_CHARS.sub("-", socket.gethostname()).strip("-")[:40] or "host"


@dataclass(frozen=True, slots=True)
class SavedDraft:
    """One writer's draft as its file holds it: ``text`` is that writer's own words (copies of drafts
    offered to it from other writers, still untouched, are left out: they are their owners')."""

    path: Path
    text: str
    host: str | None
    pid: int | None
    saved: datetime | None


@dataclass(frozen=True, slots=True)
class _Offer:
    """A draft of another writer put in the box here: ``block`` is what was inserted (marker and text)."""

    path: Path
    text: str
    block: str


def _in_place(block: str, text: str) -> int:
    """Where ``block`` stands whole in ``text`` (on lines of its own), else -1."""
    start = text.find(block)
    while start >= 0:
        end = start + len(block)
        if (start == 0 or text[start - 1] == "\n") and (end == len(text) or text[end] == "\n"):
            return start
        start = text.find(block, start + 1)
    return -1


def _without(text: str, blocks: list[str]) -> str:
    """``text`` with each block that stands whole in it taken out (with the line break joining it)."""
    for block in blocks:
        at = _in_place(block, text)
        if at < 0:
            continue
        end = at + len(block)
        if end < len(text):
            end += 1  # the line break after it
        elif at > 0:
            at -= 1  # the line break before it
        text = text[:at] + text[end:]
    return text


class DraftStore:
    """``get`` / ``put`` by session id; ``put`` of blank text forgets the draft (see the module
    docstring for files, writers and what a re-attach offers)."""

    def __init__(self, directory: Path | None = None, *, writer: str | None = None) -> None:
        self.directory = directory
        self.host = _host()
        self.writer = writer or f"{self.host}-{os.getpid()}-{secrets.token_hex(3)}"
        """This store's name among the writers of a session's drafts (its file name)."""
        self._memory: dict[str, str] = {}
        self._offers: dict[str, list[_Offer]] = {}
        self._merged: dict[str, int] = {}

    # ------------------------------------------------------------------ paths

    def _folder(self, session_id: str) -> Path | None:
        if self.directory is None or not _SAFE_KEY.match(session_id) or session_id.startswith("."):
            return None
        return self.directory / session_id

    def _own(self, session_id: str) -> Path | None:
        folder = self._folder(session_id)
        return None if folder is None else folder / f"{self.writer}.json"

    # ------------------------------------------------------------------ reading

    def saved(self, session_id: str) -> list[SavedDraft]:
        """Every writer's draft for the session on disk, this store's own included, oldest first; drafts
        with nothing of their writer's own are left out."""
        folder = self._folder(session_id)
        if folder is None or self.directory is None:
            return []
        paths = [self.directory / f"{session_id}.txt"]
        with contextlib.suppress(OSError):
            paths += sorted(p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
        found = [draft for draft in map(self._read, paths) if draft is not None and draft.text.strip()]
        oldest = datetime.min.replace(tzinfo=UTC)
        return sorted(found, key=lambda d: d.saved or oldest)

    def _read(self, path: Path, kind: str | None = None) -> SavedDraft | None:
        """A draft file (``kind``: ".json" or ".txt", else its suffix), None when it cannot be read."""
        try:
            raw = path.read_text(encoding="utf-8")
            when = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except (OSError, UnicodeDecodeError):
            return None
        if (kind or path.suffix) == ".txt":
            return SavedDraft(path, raw, None, None, when)
        try:
            data = json.loads(raw)
            text = _without(str(data["text"]), [str(o["block"]) for o in data.get("offered", [])])
            pid, host = data.get("pid"), data.get("host")
        except (ValueError, KeyError, TypeError, AttributeError):
            return SavedDraft(path, raw, None, None, when)  # unreadable as a draft: offered as it is
        return SavedDraft(
            path, text, str(host) if host is not None else None, pid if isinstance(pid, int) else None, when
        )

    def get(self, session_id: str) -> str:
        """The text to put in the session's note box ("" if none): this window's draft, then every other
        writer's, each under a marker line (one draft alone comes back as it was). What is offered is
        remembered, so :meth:`put` can tell an offer left untouched from one the operator acted on."""
        offers = self._offers.get(session_id, [])
        own = _without(self._memory.get(session_id, ""), [o.block for o in offers])
        own_path = self._own(session_id)
        others = [d for d in self.saved(session_id) if d.path != own_path]
        parts: list[SavedDraft] = []
        seen = {own.strip()} if own.strip() else set()
        new_offers: list[_Offer] = []
        for draft in others:
            key = draft.text.strip()
            if key in seen:  # the same words twice: offered once; taking one over takes both
                first = next((o.block for o in new_offers if o.text.strip() == key), None)
                new_offers.append(_Offer(draft.path, draft.text, first if first is not None else own))
                continue
            seen.add(key)
            parts.append(draft)
        if not own.strip() and len(parts) == 1:
            draft = parts[0]
            block = draft.text.strip("\n")
            self._record(session_id, [_Offer(draft.path, draft.text, block), *new_offers], 0)
            return block
        text = own.rstrip("\n")
        for draft in parts:
            block = f"{self._marker(draft)}\n{draft.text.strip(chr(10))}"
            new_offers.append(_Offer(draft.path, draft.text, block))
            text = f"{text}\n{block}" if text else block
        self._record(session_id, new_offers, len(parts))
        return text

    def merged(self, session_id: str) -> int:
        """How many other writers' drafts the last :meth:`get` put under marker lines (0: none, or one
        alone, which comes back unmarked)."""
        return self._merged.get(session_id, 0)

    def _record(self, session_id: str, offers: list[_Offer], merged: int) -> None:
        self._offers[session_id] = offers
        self._merged[session_id] = merged

    def _marker(self, draft: SavedDraft) -> str:
        when = ""
        if draft.saved is not None:
            local = draft.saved.astimezone()
            same_day = local.date() == datetime.now().astimezone().date()
            when = local.strftime("%H:%M" if same_day else "%d %b %H:%M")
        if draft.path.suffix == ".txt":
            return f"{MARK} draft saved by an earlier run ({when}) {MARK}"
        host = "this machine" if draft.host in (None, self.host) else safe_line(draft.host or "", 40)
        pid = f"pid {draft.pid} on " if draft.pid is not None else ""
        return f"{MARK} draft left in another window ({pid}{host}{', ' if when else ''}{when}) {MARK}"

    # ------------------------------------------------------------------ writing

    def put(self, session_id: str, text: str, *, durable: bool = False) -> None:
        """Remember ``text`` as the session's draft (blank text: forget it); ``durable`` also flushes the
        file to the disk (see the module docstring). An offered draft no longer standing untouched in
        ``text`` was acted on here: its owner's file goes. Never raises."""
        path = self._own(session_id)
        offers = self._offers.get(session_id, [])
        kept = [o for o in offers if text.strip() and _in_place(o.block, text) >= 0]
        taken = [o for o in offers if o not in kept]
        unchanged = self._memory.get(session_id) == text and not taken
        if taken:
            self._offers[session_id] = kept
            for offer in taken:
                self._take_over(offer)
        if not text.strip():
            self._memory.pop(session_id, None)
            self._forget_file(path)
            return
        if unchanged:
            if durable and path is not None:
                with contextlib.suppress(OSError):
                    flush_to_disk(path)
            return
        self._memory[session_id] = text
        if path is None:
            return
        if not _without(text, [o.block for o in kept]).strip():
            self._forget_file(path)  # nothing of this window's own: the offers are in their owners' files
            return
        data = {
            "format": FORMAT,
            "writer": self.writer,
            "host": self.host,
            "pid": os.getpid(),
            "text": text,
            "offered": [{"from": o.path.name, "block": o.block} for o in kept],
        }
        # On failure the draft is still in memory: losing the file copy must not stop the operator typing.
        with contextlib.suppress(OSError):
            replace_file(path, json.dumps(data, ensure_ascii=False), durable=durable)

    def _forget_file(self, path: Path | None) -> None:
        if path is None:
            return
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only when it was the last draft of the session

    def _take_over(self, offer: _Offer) -> None:
        """The operator acted here on another writer's draft: remove its file, unless its owner has
        written more since it was offered (then the newer draft stays theirs)."""
        claim = offer.path.with_name(f".{offer.path.name}.{self.writer}.claim")
        try:
            os.rename(offer.path, claim)  # atomic: an owner writing meanwhile makes a new file, never lost
        except OSError:
            return  # gone already: sent, cleared or taken over elsewhere
        try:
            still = self._read(claim, offer.path.suffix)
            if still is not None and still.text.strip() != offer.text.strip():
                self._put_back(claim, offer.path)  # the owner typed more since: theirs still
        finally:
            with contextlib.suppress(OSError):
                claim.unlink(missing_ok=True)
        if offer.path.suffix == ".json":  # (a legacy file lies in the drafts folder itself)
            with contextlib.suppress(OSError):
                offer.path.parent.rmdir()  # only when it was the last draft of the session

    @staticmethod
    def _put_back(claim: Path, path: Path) -> None:
        """Return a claimed file to its name, unless its owner has written a newer one there meanwhile."""
        try:
            os.link(claim, path)
        except FileExistsError:
            pass  # the owner's newer draft is there
        except OSError:  # a file system without hard links
            with contextlib.suppress(OSError):
                if not path.exists():
                    os.rename(claim, path)
