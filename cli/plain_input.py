"""What a person types to a plain-mode attach, decoded: notes, continuation lines and slash commands.

Pure (no I/O): ``cli.plain`` reads standard input and runs the commands. Kept apart so the rules of the
little input language (what is a note, what is refused so it never reaches an agent) read in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from client.ids import is_prefix
from client.steering import Verb
from client.textsafe import safe_line

HELP = (
    "Type a line to send it as a note (end a line with \\ to continue it). Commands:\n"
    "  /approve ID              approve that approval (its first 4+ characters are enough)\n"
    "  /decline ID [COMMENT]    decline it, optionally saying why\n"
    "  /withdraw NOTE_ID        withdraw a note that was not delivered yet\n"
    "  //text                   send a note that starts with '/'\n"
    "  /help, /quit\n"
    "The ID may be left out only while this attach has shown one approval and it is not of high or\n"
    "danger risk. Approving a danger-risk call asks 'approve <tool> <first line>? [y/N]': type y to approve."
)


@dataclass(frozen=True, slots=True)
class SendNote:
    text: str


@dataclass(frozen=True, slots=True)
class Decide:
    verb: Verb
    approval: str | None
    comment: str | None


@dataclass(frozen=True, slots=True)
class Withdraw:
    note: str


@dataclass(frozen=True, slots=True)
class ShowHelp:
    pass


@dataclass(frozen=True, slots=True)
class Quit:
    pass


@dataclass(frozen=True, slots=True)
class Refuse:
    reason: str


Command = SendNote | Decide | Withdraw | ShowHelp | Quit | Refuse


def parse_input(text: str) -> Command | None:
    """Turn one complete input (continuations already joined) into a command; None for a blank line."""
    if not text.strip():
        return None
    if text.startswith("//"):
        return SendNote(text[1:])
    if not text.startswith("/"):
        return SendNote(text)
    head, _, rest = text[1:].partition(" ")
    verb = head.strip().lower()
    rest = rest.strip()
    if "\n" in rest and verb != "decline":
        return Refuse(f"/{verb} takes a single line")
    if verb in ("approve", "decline"):
        first, _, tail = rest.partition(" ")
        if first and is_prefix(first):
            approval, comment = first, tail.strip() or None
        else:
            approval, comment = None, rest or None
        if verb == "approve" and comment:
            return Refuse("/approve takes only an approval id; to comment, decline or send a note")
        return Decide("approve" if verb == "approve" else "decline", approval, comment)
    if verb == "withdraw":
        if not rest or " " in rest:
            return Refuse("/withdraw needs one note id, e.g. /withdraw 3f2a")
        return Withdraw(rest)
    if verb in ("help", "?"):
        return ShowHelp()
    if verb in ("quit", "exit", "q"):
        return Quit()
    return Refuse(
        f"unknown command /{safe_line(verb, 30)}: not sent. /help lists commands; start with // to send a "
        "note that begins with '/'"
    )


class LineJoiner:
    """Joins lines that end in a backslash into one multi-line input."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    @property
    def pending(self) -> bool:
        """True while a note is being continued, i.e. the last line ended in a backslash."""
        return bool(self._parts)

    def flush(self) -> str:
        """Whatever was being continued when input ended ("" if nothing)."""
        text = "\n".join(self._parts)
        self._parts = []
        return text

    def feed(self, line: str) -> str | None:
        """Return the complete input once a line does not end in ``\\``; None while it continues."""
        line = line.rstrip("\r\n")
        if line.endswith("\\") and not line.endswith("\\\\"):
            self._parts.append(line[:-1])
            return None
        if line.endswith("\\\\"):
            line = line[:-1]  # an escaped backslash at the end: keep one, do not continue
        self._parts.append(line)
        text = "\n".join(self._parts)
        self._parts = []
        return text
