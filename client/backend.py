"""The interface the TUI and the CLI talk to; it lives in :mod:`client.backends.base`.

Kept as a short import path (``from client.backend import Backend``) for the UI and scripts.
"""

from client.backends.base import (
    SERVER_KINDS,
    ApprovalDesk,
    ApprovalPage,
    AttentionFeed,
    Backend,
    Capabilities,
    HistoryDesk,
    LiveFeed,
    NoteDesk,
    RuleDesk,
    RuleSupport,
    ServerKind,
    SessionDesk,
    SessionFilter,
)

__all__ = [
    "SERVER_KINDS",
    "ApprovalDesk",
    "ApprovalPage",
    "AttentionFeed",
    "Backend",
    "Capabilities",
    "HistoryDesk",
    "LiveFeed",
    "NoteDesk",
    "RuleDesk",
    "RuleSupport",
    "ServerKind",
    "SessionDesk",
    "SessionFilter",
]
