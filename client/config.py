"""Which server to talk to and with which token: profiles, the OS keyring, and their precedence.

Where things live (all under :func:`client.paths.config_dir`, ``PRELOOP_CONFIG_DIR`` overrides):

* ``config.toml``: profiles, name → server URL and the server kind last seen there::

      default_profile = "work"

      [profiles."work"]
      url = "https://preloop.example.com"
      server_kind = "preloop"

* the token: in the OS keyring (service ``preloop``, user = the normalised server URL). When no keyring
  backend works (headless machines: ``keyring.backends.fail``), :func:`store_token` refuses with
  :class:`~client.errors.NoKeyring` unless the caller passes ``allow_file=True`` after asking the user;
  then it goes to ``credentials.json`` (mode 0600).

Precedence in :func:`resolve_settings` (the first that gives a value wins, separately for URL and token):
``url=``/``token=`` (command-line flags) > ``PRELOOP_URL`` / ``PRELOOP_TOKEN`` > the profile (named, else the
default) with its stored token > the local server file (:func:`client.paths.local_server_file`).
When the URL itself came from the local server file, the token written beside it is that server's own
(another local server started later writes its own), so it is used without asking the keyring.

The keyring is imported and asked only when a token is actually looked up there: loading its backend is
start-up time every scripted command would otherwise pay even with ``PRELOOP_TOKEN`` set.

:func:`token_reader` reads the token again the same way (but for the server already chosen), so a running
app whose token expires carries on after ``preloop login`` in another terminal.

The token is never printed, logged or put in an error: :class:`Settings` masks it in ``repr``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from client import paths
from client.backends.base import SERVER_KINDS, ServerKind
from client.errors import ConfigError, NoKeyring, UsageError

__all__ = [
    "KEYRING_SERVICE",
    "Config",
    "Profile",
    "Settings",
    "TokenSource",
    "config_file",
    "credentials_file",
    "delete_profile",
    "delete_token",
    "keyring_status",
    "load_config",
    "local_server_url",
    "normalise_url",
    "read_local_server",
    "remember_server_kind",
    "resolve_settings",
    "save_profile",
    "store_token",
    "stored_token",
    "token_reader",
]

KEYRING_SERVICE = "preloop"
TokenSource = Literal["flag", "env", "keyring", "file", "local-server"]
UrlSource = Literal["flag", "env", "profile", "local-server"]


def config_file() -> Path:
    """``config.toml`` with the profiles."""
    return paths.config_dir() / "config.toml"


def credentials_file() -> Path:
    """The opt-in token file used only when no keyring works (mode 0600)."""
    return paths.config_dir() / "credentials.json"


def normalise_url(url: str) -> str:
    """One spelling per server, so a token stored for ``http://X/`` is found for ``HTTP://x``."""
    text = url.strip().rstrip("/")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest:
        raise UsageError(f"'{text[:80]}' is not a server URL (expected http://host:port or https://host)")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}"


# --------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class Settings:
    """The server to use and how we got there; ``token_source`` lets ``preloop auth status`` explain it."""

    url: str
    token: str | None = field(repr=False)
    profile: str | None = None
    server_kind: ServerKind | None = None
    token_source: TokenSource | None = None
    url_source: UrlSource | None = None

    def __repr__(self) -> str:
        token = "***" if self.token else None
        return (
            f"Settings(url={self.url!r}, token={token!r}, profile={self.profile!r}, "
            f"server_kind={self.server_kind!r}, token_source={self.token_source!r}, "
            f"url_source={self.url_source!r})"
        )

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class Profile:
    """A named server, so people switch with ``--profile work`` instead of retyping URLs."""

    name: str
    url: str
    server_kind: ServerKind | None = None


@dataclass(frozen=True, slots=True)
class Config:
    """The parsed ``config.toml``."""

    profiles: dict[str, Profile] = field(default_factory=dict)
    default_profile: str | None = None

    def profile(self, name: str | None) -> Profile | None:
        """The named profile, else the default one, else the only one; None when there are none."""
        if name is not None:
            return self.profiles.get(name)
        if self.default_profile and self.default_profile in self.profiles:
            return self.profiles[self.default_profile]
        if len(self.profiles) == 1:
            return next(iter(self.profiles.values()))
        return None

    def profile_for_url(self, url: str) -> Profile | None:
        """The profile already naming this server (URLs compared normalised), so a login or a detected
        server kind updates it instead of creating a twin."""
        wanted = normalise_url(url)
        for prof in self.profiles.values():
            if normalise_url(prof.url) == wanted:
                return prof
        return None


def _kind(value: Any) -> ServerKind | None:
    for kind in SERVER_KINDS:
        if value == kind:
            return kind
    return None


def load_config() -> Config:
    """Read ``config.toml``; a missing file is an empty config, a broken one a ConfigError naming it."""
    path = config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; fix or delete the file") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read {path}: {exc}; fix or delete the file") from None
    profiles: dict[str, Profile] = {}
    table = raw.get("profiles", {})
    if isinstance(table, dict):
        for name, entry in table.items():
            if isinstance(entry, dict) and isinstance(entry.get("url"), str):
                profiles[str(name)] = Profile(str(name), entry["url"], _kind(entry.get("server_kind")))
    default = raw.get("default_profile")
    return Config(profiles, default if isinstance(default, str) else None)


def _write_config(config: Config) -> None:
    """Write ``config.toml`` with a TOML writer: any name (emoji, CJK, quotes, backslashes) is escaped the
    way TOML reads it back (JSON's ``\\ud83d`` surrogate escapes are not TOML, and broke every command)."""
    import tomli_w  # only when a profile changes: scripted commands never write the config

    document: dict[str, Any] = {}
    if config.default_profile:
        document["default_profile"] = config.default_profile
    profiles: dict[str, dict[str, str]] = {}
    for prof in config.profiles.values():
        entry = {"url": prof.url}
        if prof.server_kind:
            entry["server_kind"] = prof.server_kind
        profiles[prof.name] = entry
    if profiles:
        document["profiles"] = profiles
    header = "# preloop client profiles (tokens are not stored here)\n"
    paths.replace_file(config_file(), header + tomli_w.dumps(document))


def save_profile(
    name: str, url: str, *, server_kind: ServerKind | None = None, make_default: bool | None = None
) -> Profile:
    """Remember ``name`` → ``url`` (and the server kind seen there). The first profile becomes the default;
    ``make_default=True`` forces it. Does not touch tokens (see :func:`store_token`)."""
    if not name.strip():
        raise UsageError("a profile needs a name")
    config = load_config()
    prof = Profile(name.strip(), normalise_url(url), server_kind)
    profiles = {**config.profiles, prof.name: prof}
    default = config.default_profile
    if make_default or (make_default is None and (not default or default not in profiles)):
        default = prof.name
    _write_config(Config(profiles, default))
    return prof


def remember_server_kind(name: str, kind: ServerKind) -> bool:
    """Note the server kind detected on first contact in profile ``name``, so later commands skip the
    detection request. Returns whether the file changed (False for an unknown profile or the same kind)."""
    config = load_config()
    prof = config.profiles.get(name)
    if prof is None or prof.server_kind == kind:
        return False
    profiles = {**config.profiles, name: Profile(prof.name, prof.url, kind)}
    _write_config(Config(profiles, config.default_profile))
    return True


def delete_profile(name: str) -> bool:
    """Forget a profile (not its token: :func:`delete_token` does that). False if there was none."""
    config = load_config()
    if name not in config.profiles:
        return False
    profiles = {k: v for k, v in config.profiles.items() if k != name}
    default = config.default_profile if config.default_profile != name else None
    _write_config(Config(profiles, default))
    return True


# --------------------------------------------------------------------------------------------- tokens


def keyring_status() -> tuple[bool, str]:
    """(works, description): whether an OS keyring backend is usable here, and which one it is."""
    import keyring  # imported on first use: slow, and most commands never need it

    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # keyring raises assorted errors when misconfigured
        return False, f"keyring failed to load ({type(exc).__name__})"
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    module = type(backend).__module__
    if module.startswith(("keyring.backends.fail", "keyring.backends.null")):
        return False, f"no OS keyring backend is available ({name})"
    priority = getattr(backend, "priority", 1)
    if isinstance(priority, int | float) and priority <= 0:
        return False, f"the keyring backend {name} is not usable"
    return True, name


def _read_credentials() -> dict[str, str]:
    path = credentials_file()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path} ({type(exc).__name__}); delete it and log in again") from None
    tokens = raw.get("tokens") if isinstance(raw, dict) else None
    if not isinstance(tokens, dict):
        return {}
    return {str(k): v for k, v in tokens.items() if isinstance(v, str)}


def _write_credentials(tokens: dict[str, str]) -> None:
    path = credentials_file()
    if not tokens:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    paths.replace_file(path, json.dumps({"tokens": tokens}, indent=2) + "\n")


def store_token(url: str, token: str, *, allow_file: bool = False) -> Literal["keyring", "file"]:
    """Keep ``token`` for ``url``: in the OS keyring when one works, else in the 0600 credentials file
    but only with ``allow_file=True`` (ask the user first). Raises NoKeyring, saying so, otherwise."""
    key = normalise_url(url)
    if not token.strip():
        raise UsageError("the token is empty")
    works, description = keyring_status()
    if works:
        import keyring.errors  # imported on first use: slow, and most commands never need it

        try:
            keyring.set_password(KEYRING_SERVICE, key, token)
        except keyring.errors.KeyringError as exc:
            works, description = False, f"the keyring refused to store it ({type(exc).__name__})"
        else:
            return "keyring"
    if not allow_file:
        raise NoKeyring(
            f"{description}: the token was not stored; allow storing it in {credentials_file()} "
            "(readable only by you), or pass it with PRELOOP_TOKEN"
        )
    tokens = _read_credentials()
    tokens[key] = token.strip()
    _write_credentials(tokens)
    return "file"


def stored_token(url: str) -> tuple[str | None, Literal["keyring", "file"] | None]:
    """The token stored for ``url`` and where it was found (keyring first, then the file)."""
    key = normalise_url(url)
    works, _ = keyring_status()
    if works:
        import keyring.errors  # imported on first use: slow, and most commands never need it

        try:
            value = keyring.get_password(KEYRING_SERVICE, key)
        except keyring.errors.KeyringError:
            value = None
        if value:
            return value, "keyring"
    value = _read_credentials().get(key)
    return (value, "file") if value else (None, None)


def delete_token(url: str) -> list[str]:
    """Forget the token for ``url`` everywhere it is kept; returns the places it was removed from."""
    key = normalise_url(url)
    removed: list[str] = []
    works, _ = keyring_status()
    if works:
        import keyring.errors  # imported on first use: slow, and most commands never need it

        try:
            keyring.delete_password(KEYRING_SERVICE, key)
            removed.append("keyring")
        except keyring.errors.KeyringError:
            pass  # PasswordDeleteError: nothing stored there
    tokens = _read_credentials()
    if key in tokens:
        del tokens[key]
        _write_credentials(tokens)
        removed.append("file")
    return removed


# --------------------------------------------------------------------------------------------- resolution


SERVE_PORT = 8765
"""``preloop serve``'s port unless ``--port`` says otherwise."""

DEMO_PORT = 8766
"""``preloop demo``'s port, the same on every run, so a client still attached after a crash finds it again
(another free one, with a notice, when something else holds it)."""

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _local_server_record() -> dict[str, Any] | None:
    """What the file our local server writes on start holds (a dict with a ``url``), or None."""
    try:
        raw = json.loads(paths.local_server_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("url"), str):
        return None
    return raw


def read_local_server() -> tuple[str, str | None] | None:
    """(url, token) from the file our local server writes on start, or None if there is none."""
    raw = _local_server_record()
    if raw is None:
        return None
    token = raw.get("token")
    return raw["url"], token if isinstance(token, str) else None


def local_server_url(started_by: str) -> str | None:
    """The URL in the local-server file when the command ``started_by`` ("demo", "serve") wrote it."""
    raw = _local_server_record()
    return str(raw["url"]) if raw is not None and raw.get("started_by") == started_by else None


def how_to_start(url: str) -> str:
    """The question to ask when ``url`` does not answer, naming the command that serves it when it is one
    of ours: the one the local-server file says started the last local server there (``preloop demo`` or
    ``preloop serve``, with ``--port`` when not its usual one), else by the usual ports on this machine. A
    URL no local command serves (a Preloop or Dendrux server elsewhere) gets no suggestion."""
    try:
        target = urlsplit(normalise_url(url))
        port = target.port
    except (UsageError, ValueError):
        return "is the server running?"
    record = _local_server_record()
    if record is not None and _same_server(record["url"], url):
        kind = record.get("started_by")
        demo = kind == "demo" if kind in ("serve", "demo") else port == DEMO_PORT  # (older files: by port)
        command, usual = ("preloop demo", DEMO_PORT) if demo else ("preloop serve", SERVE_PORT)
        flag = "" if port in (usual, None) else f" --port {port}"
        return f"is `{command}{flag}` running? (it was the last local server here)"
    if target.scheme == "http" and target.hostname in _LOOPBACK:
        if port == SERVE_PORT:
            return "is the server running? (`preloop serve` starts a local one)"
        if port == DEMO_PORT:
            return "is the server running? (`preloop demo` serves this address)"
    return "is the server running?"


def _same_server(a: str, b: str) -> bool:
    try:
        return normalise_url(a) == normalise_url(b)
    except UsageError:
        return False


@dataclass(frozen=True, slots=True)
class _Server:
    """The first half of :func:`resolve_settings`: which server, before any token is looked up."""

    url: str
    url_source: UrlSource
    profile: Profile | None
    local: tuple[str, str | None] | None
    server_kind: ServerKind | None


def _resolve_server(url: str | None, profile: str | None) -> _Server:
    config = load_config()
    if profile is not None and profile not in config.profiles:
        known = ", ".join(sorted(config.profiles)) or "none yet"
        raise UsageError(f"no profile named '{profile[:40]}' (known: {known}); `preloop login` creates one")
    env_url = os.environ.get("PRELOOP_URL") or None
    local = read_local_server()

    chosen: Profile | None = None
    url_source: UrlSource
    if url:
        final_url, url_source = normalise_url(url), "flag"
    elif env_url and profile is None:
        final_url, url_source = normalise_url(env_url), "env"
    elif (chosen := config.profile(profile)) is not None:
        final_url, url_source = normalise_url(chosen.url), "profile"
    elif local is not None:
        final_url, url_source = normalise_url(local[0]), "local-server"
    else:
        raise ConfigError(
            "no server configured: pass --url, set PRELOOP_URL, run `preloop login`, "
            "or start a local server with `preloop serve`"
        )
    if chosen is None and url_source != "profile":
        with contextlib.suppress(UsageError):
            chosen = config.profile_for_url(final_url)
    server_kind: ServerKind | None = chosen.server_kind if chosen else None
    if server_kind is None and local is not None and normalise_url(local[0]) == final_url:
        server_kind = "local"
    return _Server(final_url, url_source, chosen, local, server_kind)


def _with_token(server: _Server, token: str | None) -> Settings:
    """The second half: the token (the keyring or the credentials file only when no flag, no environment
    variable and not the local server's file gave one)."""
    env_token = os.environ.get("PRELOOP_TOKEN") or None
    local = server.local
    final_token: str | None = None
    token_source: TokenSource | None = None
    if token:
        final_token, token_source = token.strip(), "flag"
    elif env_token:
        final_token, token_source = env_token.strip(), "env"
    elif server.url_source == "local-server" and local is not None and local[1]:
        # The URL and token came together from the running server: no keyring lookup needed.
        final_token, token_source = local[1], "local-server"
    else:
        value, where = stored_token(server.url)
        if value and where:
            final_token, token_source = value, where
        elif local is not None and local[1] and normalise_url(local[0]) == server.url:
            final_token, token_source = local[1], "local-server"
    return Settings(
        url=server.url,
        token=final_token,
        profile=server.profile.name if server.profile else None,
        server_kind=server.server_kind,
        token_source=token_source,
        url_source=server.url_source,
    )


def resolve_settings(
    url: str | None = None, token: str | None = None, profile: str | None = None
) -> Settings:
    """Decide the server and token (see the module docstring for the precedence).

    Raises UsageError for an unknown profile or bad URL, ConfigError when nothing names a server.
    A missing token is not an error here: the server's 401 will say so in its own words.
    """
    return _with_token(_resolve_server(url, profile), token)


def token_reader(settings: Settings) -> Callable[[], str | None]:
    """How to read the token of ``settings`` again, the way :func:`resolve_settings` found it, for a
    connection whose token the server stopped accepting (expired, revoked, a restarted local server).

    A ``--token`` flag stays the answer: it names one token for this run; so does a token given directly
    (settings not made by :func:`resolve_settings`, which say where their token came from). Otherwise each
    call looks again
    at ``PRELOOP_TOKEN``, the keyring or credentials file (after ``preloop login`` in another terminal) and
    the local server's file (rewritten when it restarts), for the same server URL only. None when no
    token is found. Blocking (the keyring): call it in a thread from async code.
    """
    if settings.token_source in (None, "flag"):
        flag = settings.token
        return lambda: flag
    url, url_source, kind = settings.url, settings.url_source or "flag", settings.server_kind

    def read() -> str | None:
        local = read_local_server()
        if local is not None:
            try:
                same = normalise_url(local[0]) == url
            except UsageError:
                same = False
            if not same:
                local = None  # the file now names another server: its token is not this one's
        return _with_token(_Server(url, url_source, None, local, kind), None).token

    return read
