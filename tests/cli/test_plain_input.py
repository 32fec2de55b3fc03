"""What a line typed into a plain attach does: a note, a command, or a refusal (never a stray note)."""

from __future__ import annotations

import pytest

from cli.plain_input import Decide, LineJoiner, Quit, Refuse, SendNote, ShowHelp, Withdraw, parse_input


def test_plain_text_is_a_note() -> None:
    assert parse_input("please run the tests first") == SendNote("please run the tests first")
    assert parse_input("   ") is None


def test_double_slash_sends_a_note_that_starts_with_a_slash() -> None:
    assert parse_input("//etc/hosts is read-only") == SendNote("/etc/hosts is read-only")


@pytest.mark.parametrize("line", ["/aprove", "/approved 1234", "/note hello", "/ hello", "/tmp is full"])
def test_unknown_slash_commands_are_refused_not_sent(line: str) -> None:
    command = parse_input(line)
    assert isinstance(command, Refuse)
    assert "not sent" in command.reason and "//" in command.reason


def test_approve_and_decline_with_and_without_ids() -> None:
    assert parse_input("/approve") == Decide("approve", None, None)
    assert parse_input("/approve 3f2a9c") == Decide("approve", "3f2a9c", None)
    assert parse_input("/decline") == Decide("decline", None, None)
    assert parse_input("/decline 3f2a9c too risky") == Decide("decline", "3f2a9c", "too risky")
    assert parse_input("/decline not on main") == Decide("decline", None, "not on main")
    assert isinstance(parse_input("/approve looks good to me"), Refuse)


def test_withdraw_needs_exactly_one_note_id() -> None:
    assert parse_input("/withdraw 9e1f") == Withdraw("9e1f")
    assert isinstance(parse_input("/withdraw"), Refuse)
    assert isinstance(parse_input("/withdraw a b"), Refuse)


def test_help_and_quit() -> None:
    assert parse_input("/help") == ShowHelp()
    assert parse_input("/quit") == Quit()


def test_trailing_backslash_continues_a_note_over_lines() -> None:
    joiner = LineJoiner()
    assert joiner.feed("first line\\\n") is None
    assert joiner.pending
    assert joiner.feed("/not a command here\\") is None
    text = joiner.feed("last line\n")
    assert text == "first line\n/not a command here\nlast line"
    assert parse_input(text or "") == SendNote("first line\n/not a command here\nlast line")
    assert not joiner.pending


def test_escaped_trailing_backslash_ends_the_line() -> None:
    assert LineJoiner().feed("C:\\path\\\\") == "C:\\path\\"


def test_input_ending_mid_note_sends_what_was_typed() -> None:
    joiner = LineJoiner()
    assert joiner.feed("one\\") is None and joiner.feed("two\\") is None
    assert joiner.flush() == "one\ntwo"
    assert joiner.flush() == "" and parse_input("") is None
