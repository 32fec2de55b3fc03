"""The notices steering outcomes get on every screen (``widgets.notices``)."""

from __future__ import annotations

from client.models import Note
from client.steering import TooLate
from widgets.notices import steering_notice


def _note(state: str) -> Note:
    return Note.model_validate({"note_id": "0123456789abcdef", "state": state, "text": "wait"})


def test_a_note_withdrawn_before_is_said_to_be_withdrawn_not_too_late() -> None:
    """Issue 23: the state the operator wanted holds, so it is no warning."""
    notice = steering_notice(TooLate(_note("cancelled")))
    assert notice == (
        "The note was already withdrawn; the agent will not see it.",
        "Withdrawn",
        "information",
    )
    delivered = steering_notice(TooLate(_note("delivered")))
    assert delivered is not None and delivered[2] == "warning" and "Too late" in delivered[0]
