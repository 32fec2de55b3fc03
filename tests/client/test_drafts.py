"""Drafts of one session written by two windows (two apps, or two machines sharing a home directory): no
window's text is lost to the other's keystrokes, a re-attach offers both, and a draft sent in one window
does not come back in another (issue 23 section 4)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from client.drafts import DraftStore

SID = "0b7d1c9e-5f4a-4c1e-9d3b-2a6f8e7c1d00"

TYPIST = """
import sys
from pathlib import Path
from client.drafts import DraftStore

folder, session, text = sys.argv[1:4]
store = DraftStore(Path(folder))
for n in range(1, len(text) + 1):  # a keystroke at a time, as the note box writes it
    store.put(session, text[:n])
store.put(session, text, durable=True)  # leaving the screen
"""


def _marker_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("── ")]


def test_two_windows_typing_at_once_in_two_processes_both_keep_their_draft(tmp_path: Path) -> None:
    """The trial: the second window's keystrokes overwrote the draft file and MARKER1 was gone on
    re-attach. Two processes type into one session's drafts at once; a re-attach offers both texts,
    each under a line naming the window it came from."""
    first = "MARKER1 do not restart the database " * 4
    second = "MARKER2 the canary is still red " * 4
    typists = [
        subprocess.Popen([sys.executable, "-c", TYPIST, str(tmp_path), SID, text]) for text in (first, second)
    ]
    assert [typist.wait(60) for typist in typists] == [0, 0]

    reader = DraftStore(tmp_path)
    offered = reader.get(SID)
    assert first.strip() in offered and second.strip() in offered
    assert reader.merged(SID) == 2
    markers = _marker_lines(offered)
    assert len(markers) == 2 and all(m.startswith("── draft left in another window (pid ") for m in markers)
    assert all(re.search(r" on this machine, (\d\d \w{3} )?\d\d:\d\d\) ──$", m) for m in markers), markers
    assert sorted(d.text for d in reader.saved(SID)) == sorted([first, second])


def test_a_lone_draft_comes_back_as_it_was_and_files_are_private(tmp_path: Path) -> None:
    """One window's draft (a restart, a crash): back as it was, no marker; its file is the owner's only."""
    DraftStore(tmp_path).put(SID, "half a note\nsecond line")
    reader = DraftStore(tmp_path)
    assert reader.get(SID) == "half a note\nsecond line" and reader.merged(SID) == 0
    (saved,) = reader.saved(SID)
    assert saved.path.parent == tmp_path / SID and saved.path.stat().st_mode & 0o777 == 0o600


def test_own_draft_first_then_the_other_window_s_marked(tmp_path: Path) -> None:
    """A window that has a draft of its own and re-attaches finds the other window's under it."""
    mine, other = DraftStore(tmp_path), DraftStore(tmp_path)
    other.put(SID, "MARKER1")
    mine.put(SID, "MARKER2")
    offered = mine.get(SID)
    assert offered.splitlines()[0] == "MARKER2" and offered.splitlines()[2] == "MARKER1"
    assert _marker_lines(offered) == [offered.splitlines()[1]] and mine.merged(SID) == 1


def test_a_draft_sent_in_one_window_is_not_offered_again_by_the_other(tmp_path: Path) -> None:
    """B shows A's draft untouched; A sends it (its draft goes); B leaves. No later re-attach brings the
    sent words back as unsent text, and B's own words stay."""
    a, b = DraftStore(tmp_path), DraftStore(tmp_path)
    a.put(SID, "MARKER1 sent from A")
    b.put(SID, "MARKER2 of B")
    shown = b.get(SID)
    b.put(SID, shown)  # the box loads it
    assert "MARKER1 sent from A" in shown
    a.put(SID, "")  # A sent its note: the box is empty, its draft forgotten
    b.put(SID, shown, durable=True)  # B leaves, the offer still standing in its box, untouched
    later = DraftStore(tmp_path)
    assert later.get(SID) == "MARKER2 of B"
    assert [d.text for d in later.saved(SID)] == ["MARKER2 of B"]


def test_acting_on_an_offered_draft_makes_it_this_window_s(tmp_path: Path) -> None:
    """An offer edited here is this window's text from then on (its owner's file goes, so it is not
    offered twice); sending the box forgets every draft it showed."""
    DraftStore(tmp_path).put(SID, "MARKER1 left by a closed window")
    b = DraftStore(tmp_path)
    shown = b.get(SID)
    b.put(SID, shown)
    assert [d.text for d in DraftStore(tmp_path).saved(SID)] == ["MARKER1 left by a closed window"]
    b.put(SID, shown + " and more")
    assert [d.text for d in DraftStore(tmp_path).saved(SID)] == ["MARKER1 left by a closed window and more"]

    DraftStore(tmp_path).put(SID, "MARKER3 from a third window")
    c = DraftStore(tmp_path)
    box = c.get(SID)
    assert "and more" in box and "MARKER3" in box and c.merged(SID) == 2
    c.put(SID, box)
    c.put(SID, "")  # sent: the box is empty
    assert DraftStore(tmp_path).saved(SID) == [] and DraftStore(tmp_path).get(SID) == ""
    assert not (tmp_path / SID).exists()


def test_an_owner_who_typed_more_since_the_offer_keeps_the_newer_draft(tmp_path: Path) -> None:
    a, b = DraftStore(tmp_path), DraftStore(tmp_path)
    a.put(SID, "MARKER1")
    b.put(SID, b.get(SID))
    a.put(SID, "MARKER1, and A goes on typing")
    b.put(SID, "")  # B cleared its box: what it showed was the older words
    assert [d.text for d in DraftStore(tmp_path).saved(SID)] == ["MARKER1, and A goes on typing"]


def test_a_window_whose_draft_was_taken_over_writes_it_back_only_when_typing_more(tmp_path: Path) -> None:
    a, b = DraftStore(tmp_path), DraftStore(tmp_path)
    a.put(SID, "MARKER1")
    b.put(SID, b.get(SID))
    b.put(SID, "")  # B sent it
    a.put(SID, "MARKER1", durable=True)  # A leaves with the same words still in its box: sent already
    assert DraftStore(tmp_path).get(SID) == ""
    a.put(SID, "MARKER1 plus")  # A's operator typed more: that is a draft again
    assert DraftStore(tmp_path).get(SID) == "MARKER1 plus"


def test_the_same_words_in_two_windows_are_offered_once(tmp_path: Path) -> None:
    DraftStore(tmp_path).put(SID, "same words")
    DraftStore(tmp_path).put(SID, "same words\n")
    reader = DraftStore(tmp_path)
    assert reader.get(SID) == "same words" and reader.merged(SID) == 0
    reader.put(SID, "")  # sent: both copies go
    assert DraftStore(tmp_path).saved(SID) == []


def test_a_draft_file_of_an_earlier_version_is_offered_and_taken_over(tmp_path: Path) -> None:
    (tmp_path / f"{SID}.txt").write_text("written by an earlier version", encoding="utf-8")
    mine = DraftStore(tmp_path)
    mine.put(SID, "mine")
    offered = mine.get(SID)
    assert offered.startswith("mine\n── draft saved by an earlier run (")
    assert offered.endswith("\nwritten by an earlier version")
    mine.put(SID, "mine and the earlier words, merged by hand")
    assert not (tmp_path / f"{SID}.txt").exists()


def test_what_another_writer_s_file_says_never_drives_the_terminal(tmp_path: Path) -> None:
    """A marker names the other window's host: text from a file, made safe (no escape sequences)."""
    folder = tmp_path / SID
    folder.mkdir()
    forged = {"text": "words", "host": "evil\x1b]52;c;ZWNobw==\x07host", "pid": 7, "offered": []}
    (folder / "evil.json").write_text(json.dumps(forged), encoding="utf-8")
    mine = DraftStore(tmp_path)
    mine.put(SID, "mine")
    (marker,) = _marker_lines(mine.get(SID))
    assert "\x1b" not in marker and "\x07" not in marker and "pid 7 on evil" in marker


def test_a_store_without_a_folder_keeps_drafts_in_memory(tmp_path: Path) -> None:
    store = DraftStore()
    store.put(SID, "kept in memory")
    assert store.get(SID) == "kept in memory" and store.saved(SID) == []
    store.put(SID, " ")
    assert store.get(SID) == ""
