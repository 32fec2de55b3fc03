"""Accounts and bearer tokens: who is calling, and the first account a fresh database gets.

Two kinds of principal: an :class:`Operator` (a human's token, may read and steer every session of its
account) and a :class:`Runtime` (an agent's token, bound to exactly one session). Only a token's SHA-256
is stored, so a copied database file grants nothing.

Every person gets a name: :meth:`Accounts.add_operator` (``preloop serve --add-operator dana``) adds a
user with that name to the first account and mints their own operator token, printed once; every note
and decision made with it is stored under that user and shown by name.

The first account's operator token (the one the demo and ``preloop serve`` hand to the local client) is
needed in clear again at every start, so that a client still holding it carries on after a restart. It
lives only in a file beside the database, readable by its owner alone (:func:`operator_token_file`);
the database keeps which account it belongs to (``meta.bootstrap_account``). Without that file (deleted,
or a database copied elsewhere) a start mints a new token for the same account. Databases written
before this kept the token itself in ``meta.bootstrap_token``: the first start moves it to the file and
erases it from the database (``secure_delete``, then a WAL checkpoint, so no old page keeps it).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from pathlib import Path

from client import paths
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


def operator_token_file(db_path: Path) -> Path:
    """Where the first account's operator token is kept in clear: beside the database, never in it."""
    return db_path.with_name(db_path.name + ".token")


def read_kept_token(path: Path) -> str | None:
    """The token a previous start kept in ``path``, or None (missing or unreadable: a new one is made)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def keep_token(path: Path, token: str) -> None:
    """Keep the operator token for the next start (mode 0600, written atomically)."""
    paths.replace_file(path, token + "\n")


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


OPERATOR_NAME_MAX = 64
"""The longest operator name (it is shown beside every decision and note)."""


class OperatorNameError(ValueError):
    """An operator name that cannot be used (empty, too long, control characters, or taken)."""


def check_operator_name(name: str) -> str:
    """The name as it will be shown, or :class:`OperatorNameError` saying why it cannot be."""
    text = " ".join(name.split())
    if not text:
        raise OperatorNameError("an operator name is empty: give the person's name, e.g. dana")
    if len(text) > OPERATOR_NAME_MAX:
        raise OperatorNameError(f"an operator name is at most {OPERATOR_NAME_MAX} characters")
    if any(not ch.isprintable() for ch in text):
        raise OperatorNameError("an operator name cannot hold control characters")
    return text


class Accounts:
    """Creates accounts and operators and resolves bearer tokens to principals."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def bootstrap(self, kept: str | None = None) -> str:
        """The first account's operator token, so the demo needs no login: ``kept`` (the token handed
        out at the last start) while it is still valid, else a new one for the same account, created with
        the account on a fresh database. The database stores only its hash (see the module docstring)."""
        account_id = await self._meta("bootstrap_account")
        candidates = [kept]
        legacy = await self._meta("bootstrap_token")
        if legacy is not None:  # written in clear by an earlier version: keep it valid, erase the copy
            candidates.append(legacy)
            owner = await self.authenticate(legacy)
            if account_id is None and isinstance(owner, Operator):
                account_id = owner.account_id
                await self._set_meta("bootstrap_account", account_id)
            await self.store.erase("DELETE FROM meta WHERE key = 'bootstrap_token'")
        for token in candidates:
            if token is None:
                continue
            principal = await self.authenticate(token)
            if isinstance(principal, Operator) and principal.account_id == account_id:
                return token
        if account_id is not None:
            user = await self.store.fetchone(
                "SELECT id FROM users WHERE account_id = ? ORDER BY created_at LIMIT 1", (account_id,)
            )
            if user is not None:
                token = new_token("plo_")
                async with self.store.write() as tx:
                    await insert_token(
                        tx,
                        token,
                        "operator",
                        account_id=account_id,
                        user_id=str(user["id"]),
                        api_key_id=str(uuid.uuid4()),
                    )
                return token
        account_id, token = await self._new_account("local", "Local Operator")
        await self._set_meta("bootstrap_account", account_id)
        return token

    async def add_operator(self, name: str) -> str:
        """A new person on the first account (made if this is a fresh database): a user named ``name`` and
        an operator token of their own, returned once (only its hash is kept). A name already taken on
        the account is refused: decisions are told apart by it."""
        display = check_operator_name(name)
        account_id = await self._meta("bootstrap_account")
        if account_id is None:
            await self.bootstrap()
            account_id = await self._meta("bootstrap_account")
        assert account_id is not None
        user_id, token = str(uuid.uuid4()), new_token("plo_")
        async with self.store.write() as tx:
            taken = await tx.fetchone(
                "SELECT 1 FROM users WHERE account_id = ? AND display = ?", (account_id, display)
            )
            if taken is not None:
                raise OperatorNameError(f"an operator named {display!r} already exists on this server")
            await tx.execute(
                "INSERT INTO users (id, account_id, display, created_at) VALUES (?, ?, ?, ?)",
                (user_id, account_id, display, ts(now_utc())),
            )
            await insert_token(
                tx, token, "operator", account_id=account_id, user_id=user_id, api_key_id=str(uuid.uuid4())
            )
        return token

    async def _meta(self, key: str) -> str | None:
        row = await self.store.fetchone("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    async def _set_meta(self, key: str, value: str) -> None:
        async with self.store.write() as tx:
            await tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    async def create_account(self, name: str, display: str) -> str:
        """A new account with one user and one operator token (returned; only its hash is kept).

        Tests use a second account to prove that another account's ids are 404s.
        """
        return (await self._new_account(name, display))[1]

    async def _new_account(self, name: str, display: str) -> tuple[str, str]:
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
        return account_id, token

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
