"""Accounts and bearer tokens: who is calling, and the first account a fresh database gets.

Two kinds of principal: an :class:`Operator` (a human's token, may read and steer every session of its
account) and a :class:`Runtime` (an agent's token, bound to exactly one session). Only a token's SHA-256
is stored; the bootstrap operator token is kept in ``meta`` so the local client can be handed it again.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass

from server.shapes import dt
from server.store import Store, WriteTx, now_utc, ts


@dataclass(frozen=True, slots=True)
class Operator:
    """A human's bearer token: may read and steer every session of its account."""

    account_id: str
    user_id: str
    display: str
    api_key_id: str


@dataclass(frozen=True, slots=True)
class Runtime:
    """An agent's runtime token: bound to exactly one session."""

    account_id: str
    session_id: str
    api_key_id: str


def mask_token(token: str) -> str:
    """What may be printed of a token: a short prefix, never the secret part."""
    return token[:8] + "…"


def hash_token(token: str) -> str:
    """What the database keeps of a token, so a copied database file grants nothing."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(prefix: str) -> str:
    """A fresh secret; the prefix (``plo_`` operator, ``plr_`` runtime) says its kind at a glance."""
    return prefix + secrets.token_urlsafe(32)


async def insert_token(
    tx: WriteTx,
    token: str,
    kind: str,
    *,
    account_id: str,
    api_key_id: str,
    user_id: str | None = None,
    session_id: str | None = None,
    expires_at: str | None = None,
) -> None:
    """Store one token (by hash): the single place both token kinds are written."""
    await tx.execute(
        "INSERT INTO tokens (token_hash, kind, account_id, user_id, session_id, api_key_id, created_at,"
        " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (hash_token(token), kind, account_id, user_id, session_id, api_key_id, ts(now_utc()), expires_at),
    )


class Accounts:
    """Creates accounts and resolves bearer tokens to principals."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def bootstrap(self) -> str:
        """The first account's operator token, created on first start, so the demo needs no login."""
        row = await self.store.fetchone("SELECT value FROM meta WHERE key = 'bootstrap_token'")
        if row is not None:
            return str(row["value"])
        token = await self.create_account("local", "Local Operator")
        async with self.store.write() as tx:
            await tx.execute("INSERT INTO meta (key, value) VALUES ('bootstrap_token', ?)", (token,))
        return token

    async def create_account(self, name: str, display: str) -> str:
        """A new account with one user and one operator token (returned; only its hash is kept).

        Tests use a second account to prove that another account's ids are 404s.
        """
        account_id, user_id = str(uuid.uuid4()), str(uuid.uuid4())
        token = new_token("plo_")
        now = ts(now_utc())
        async with self.store.write() as tx:
            await tx.execute(
                "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)", (account_id, name, now)
            )
            await tx.execute(
                "INSERT INTO users (id, account_id, display, created_at) VALUES (?, ?, ?, ?)",
                (user_id, account_id, display, now),
            )
            await insert_token(
                tx, token, "operator", account_id=account_id, user_id=user_id, api_key_id=str(uuid.uuid4())
            )
        return token

    async def authenticate(self, token: str) -> Operator | Runtime | None:
        """The principal behind a bearer token, or None if the token is unknown or expired."""
        row = await self.store.fetchone(
            "SELECT t.*, u.display FROM tokens t LEFT JOIN users u ON u.id = t.user_id WHERE token_hash = ?",
            (hash_token(token),),
        )
        if row is None:
            return None
        expires = dt(row["expires_at"])
        if expires is not None and expires <= now_utc():
            return None
        if row["kind"] == "operator":
            return Operator(
                row["account_id"], row["user_id"], row["display"] or "Operator", row["api_key_id"]
            )
        return Runtime(row["account_id"], row["session_id"], row["api_key_id"])
