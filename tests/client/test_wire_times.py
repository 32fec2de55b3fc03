"""Timestamps from either server become aware UTC instants, whatever zone (or none) they were sent in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from client.models import Note


def test_times_with_z_without_zone_and_with_an_offset_are_the_same_utc_instant() -> None:
    expected = datetime(2026, 11, 30, 11, 36, 35, tzinfo=UTC)
    for text in (
        "2026-11-30T11:36:35Z",
        "2026-11-30T11:36:35",
        "2026-11-30T11:36:35+00:00",
        "2026-11-30T13:36:35+02:00",
    ):
        note = Note.model_validate({"note_id": "n", "state": "pending", "text": "t", "created_at": text})
        assert note.created_at == expected, text
        assert note.created_at is not None and note.created_at.utcoffset() == timedelta(0)
    dumped = Note(note_id="n", state="pending", text="t", created_at=expected).model_dump(mode="json")
    assert dumped["created_at"] == "2026-11-30T11:36:35Z"
