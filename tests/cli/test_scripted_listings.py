"""``sessions list`` and ``notes list`` are what scripts call, often in loops: against the real local server
over loopback, every listing prints, and every error is reported once, in the client's own words. Their
requests go through the app's one connection (one httpx client), so they reach the server through a proxy,
and an https server with the certificates ``SSL_CERT_FILE`` names, exactly as the app does.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from cli.main import main
from client import connection
from server.harness_client import HarnessSession
from tests.cli.helpers import with_sessions


@pytest.fixture
def data(live_server: Any) -> dict[str, Any]:
    """Six sessions (two ended, two with the same title, one with an escape sequence and non-ASCII text in
    its title); the first has notes in four states: delivered, pending, withdrawn, and pending with a
    short expiry."""
    from client.backends import connect
    from client.config import Settings

    async def shape(sessions: list[HarnessSession]) -> None:
        first = sessions[0].session_id
        async with await connect(Settings(live_server.url, live_server.token)) as client:
            await client.send_note("first: delivered", session_id=first)
            await sessions[0].claim_notes()
            await client.send_note("second: stays pending", session_id=first)
            third = await client.send_note("third: withdrawn", session_id=first)
            await client.withdraw_note(third.note_id)
            await client.send_note("fourth: expires soon", session_id=first, expires_in_seconds=120)
        await sessions[3].end()
        await sessions[4].end("crashed")

    ids, _ = with_sessions(
        live_server.url,
        live_server.token,
        [
            {"agent_name": "builder", "title": "Fix the build"},
            {"agent_name": "builder-2", "title": "Fix the build"},
            {"agent_name": "codexer", "agent_kind": "codex", "cwd": "/work/repo"},
            {"agent_name": "old", "title": "Refactor\x1b[31m the parser, ünïcode"},
            {"agent_name": "older"},
            {"agent_name": "quiet"},
        ],
        shape,
    )
    return {"ids": ids, "first": ids[0]}


CASES: list[Callable[[dict[str, Any]], list[str]]] = [
    lambda d: ["sessions", "list", "-o", "id"],
    lambda d: ["sessions", "list", "--json"],
    lambda d: ["sessions", "list"],
    lambda d: ["sessions", "list", "--json", "--active"],
    lambda d: ["sessions", "list", "-o", "id", "--limit", "2"],
    lambda d: ["sessions", "list", "--json", "--limit", "3"],
    lambda d: ["sessions", "list", "--json", "--agent", "builder"],
    lambda d: ["sessions", "list", "-o", "id", "--kind", "Codex", "--since", "1h"],
    lambda d: ["notes", "list", "--session", d["first"][:6], "--json"],
    lambda d: ["notes", "list", "--session", d["first"], "-o", "id"],
    lambda d: ["notes", "list", "--session", d["first"]],
    lambda d: ["notes", "list", "--session", d["first"][:8].upper(), "--json", "--state", "pending"],
    lambda d: ["notes", "list", "--session", d["ids"][5][:5], "--json"],
    lambda d: ["--server-kind", "auto", "notes", "list", "--session", d["first"][:6], "-o", "id"],
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_scripted_listing_prints_and_exits_0(
    case: int, data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = CASES[case](data)
    code = main(argv)
    out = capsys.readouterr()
    assert (code, out.err) == (0, "") and out.out
    if "--json" in argv:
        json.loads(out.out)


# ------------------------------------------------------------------------------------------ errors


def _outcome(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_an_unknown_short_id_is_reported_once(
    data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    unknown = next(p * 4 for p in "0123456789abcdef" if not any(i.startswith(p * 4) for i in data["ids"]))
    assert _outcome(["notes", "list", "--session", unknown, "--json"], capsys) == (
        1,
        "",
        f"preloop: no such session: no session starts with '{unknown}': "
        "`preloop sessions list` shows the ids\n",
    )


@pytest.mark.parametrize("watch", [[], ["--watch"]])
def test_approvals_for_a_full_session_id_that_does_not_exist_fail_as_notes_do(
    watch: list[str], data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "No pending approvals for session ...": a mistyped full id is an unknown session, said as
    ``notes list`` says it (exit 1)."""
    ghost = "0badc0de-0000-4000-8000-000000000000"
    assert ghost not in data["ids"]
    code, _out, err = _outcome(["notes", "list", "--session", ghost], capsys)
    assert code == 1 and ghost in err and "does not exist" in err
    assert _outcome(["approvals", "list", "--session", ghost, *watch], capsys) == (1, "", err)


def test_a_refused_token_is_reported_with_what_to_do(
    live_server: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRELOOP_URL", live_server.url)
    monkeypatch.setenv("PRELOOP_TOKEN", "not-the-token")
    assert _outcome(["sessions", "list", "-o", "id"], capsys) == (
        1,
        "",
        "preloop: not authorised: your token is invalid or expired: run `preloop login`\n",
    )


def test_a_dead_server_is_reported_with_what_to_do(
    live_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    live_server.stop()
    argv = ["--server-kind", "local", "--url", live_server.url, "--token", "t", "notes", "list"]
    assert _outcome([*argv, "--session", "abcd", "--json"], capsys) == (
        1,
        "",
        f"preloop: server unreachable: cannot reach {live_server.url}: is `preloop serve --port "
        f"{live_server.server.port}` running? (it was the last local server here)\n",
    )


def stop_listening(listener: socket.socket) -> None:
    """Close a listening socket and wake the thread blocked in its ``accept`` (on Linux a plain close
    leaves it blocked, and the join waited its whole 5 s)."""
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()


@pytest.fixture
def silent_server() -> Iterator[tuple[str, list[bytes]]]:
    """A server that accepts connections and reads requests but never answers: (its URL, what it read)."""
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            received.append(conn.recv(65536))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", received
    finally:
        stop_listening(listener)
        for conn in held:
            conn.close()
        thread.join(5)


def test_a_server_that_never_answers_is_waited_for_once(
    silent_server: tuple[str, list[bytes]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One request, one timeout, one sentence."""
    url, received = silent_server
    monkeypatch.setitem(connection.Connection.__init__.__kwdefaults__, "timeout", 0.5)
    argv = ["--server-kind", "local", "--url", url, "--token", "t", "sessions", "list", "-o", "id"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == (
        f"preloop: timed out: GET /api/v1/runtime-sessions got no answer from {url} within 0.5 s\n"
    )
    assert len(received) == 1 and received[0].startswith(b"GET /api/v1/runtime-sessions?")


# ---------------------------------------------------------------------------- proxies and https


class Forwarder:
    """A loopback server that passes each request on and relays the answer, one request per connection.

    Without ``upstream`` it is an HTTP proxy: each request names its target in absolute form. With
    ``upstream`` (host, port) and ``tls``, it is an https front for that plain http server. ``requests``
    holds each request line as it arrived (after the TLS handshake, so a client that refused the
    certificate leaves none)."""

    def __init__(self, upstream: tuple[str, int] | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.upstream = upstream
        self.tls = tls
        self.requests: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(raw,), daemon=True).start()

    def _one(self, raw: socket.socket) -> None:
        with raw:
            try:
                conn = self.tls.wrap_socket(raw, server_side=True) if self.tls else raw
            except OSError:  # ssl.SSLError too: the client refused the certificate
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                first, *headers = head.decode("latin-1").split("\r\n")
                self.requests.append(first)
                length = next(
                    (int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0
                )
                while len(body) < length:
                    body += conn.recv(65536)
                method, target, version = first.split(" ")
                upstream = self.upstream
                if upstream is None:
                    parts = urlsplit(target)
                    upstream = (parts.hostname or "", parts.port or 80)
                    target = parts.path + (f"?{parts.query}" if parts.query else "")
                kept = [h for h in headers if not h.lower().startswith(("connection:", "proxy-"))]
                request = "\r\n".join([f"{method} {target} {version}", *kept, "Connection: close", "", ""])
                with socket.create_connection(upstream) as server:
                    server.sendall(request.encode("latin-1") + body)
                    while chunk := server.recv(65536):
                        conn.sendall(chunk)

    def close(self) -> None:
        stop_listening(self.listener)
        self.thread.join(5)


@pytest.fixture
def forwarders() -> Iterator[Callable[..., Forwarder]]:
    made: list[Forwarder] = []

    def make(upstream: tuple[str, int] | None = None, tls: ssl.SSLContext | None = None) -> Forwarder:
        made.append(Forwarder(upstream, tls))
        return made[-1]

    yield make
    for forwarder in made:
        forwarder.close()


def _paths(forwarder: Forwarder) -> list[str]:
    return [line.split(" ")[1].split("?")[0] for line in forwarder.requests]


def test_a_proxy_in_the_environment_carries_the_requests_unless_no_proxy_names_the_server(
    live_server: Any,
    forwarders: Callable[..., Forwarder],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a"}, {"agent_name": "b"}])
    for name in ("http_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    argv = ["sessions", "list", "-o", "id"]
    direct = _outcome(argv, capsys)
    assert direct[0] == 0 and sorted(direct[1].split()) == sorted(ids)
    proxy = forwarders()
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
    assert _outcome(argv, capsys) == direct
    assert _paths(proxy) == [f"{live_server.url}/api/v1/runtime-sessions"]
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert _outcome(argv, capsys) == direct
    assert len(proxy.requests) == 1  # straight to the server this time


def _certificates(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate authority of our own (its certificate in a file, as ``SSL_CERT_FILE`` names one) and a
    server context with a certificate for 127.0.0.1 that it signed."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "preloop test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())

    def certificate(subject: Any, public_key: Any, *, ca: bool) -> Any:
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
            )
        )
        if ca:
            usage = {"key_cert_sign": True, "crl_sign": True, "digital_signature": False}
        else:
            usage = {"key_cert_sign": False, "crl_sign": False, "digital_signature": True}
            san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
            builder = builder.add_extension(san, critical=False)
        flags = dict.fromkeys(
            ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement"), False
        )
        builder = builder.add_extension(
            x509.KeyUsage(**usage, **flags, encipher_only=False, decipher_only=False), critical=True
        )
        return builder.sign(ca_key, hashes.SHA256())

    ca_file = folder / "ca.pem"
    ca_file.write_bytes(
        certificate(ca_name, ca_key.public_key(), ca=True).public_bytes(serialization.Encoding.PEM)
    )
    server_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    chain, key_file = folder / "server.pem", folder / "server.key"
    chain.write_bytes(
        certificate(server_name, key.public_key(), ca=False).public_bytes(serialization.Encoding.PEM)
    )
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain, key_file)
    return ca_file, context


def test_an_https_server_is_trusted_through_the_certificates_ssl_cert_file_names(
    live_server: Any,
    forwarders: Callable[..., Forwarder],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids, _ = with_sessions(live_server.url, live_server.token, [{"agent_name": "a"}])
    ca_file, server_tls = _certificates(tmp_path)
    plain = urlsplit(live_server.url)
    front = forwarders((plain.hostname, plain.port), server_tls)
    url = f"https://127.0.0.1:{front.port}"
    argv = ["--url", url, "--token", live_server.token, "sessions", "list", "-o", "id"]
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    code, out, err = _outcome(argv, capsys)  # verified against the usual authorities, which do not know ours
    assert (code, out) == (1, "") and err.startswith(f"preloop: server unreachable: cannot reach {url}")
    assert front.requests == []
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    assert _outcome(argv, capsys) == (0, f"{ids[0]}\n", "")
    assert _paths(front) == ["/api/v1/health", "/api/v1/runtime-sessions"]  # the server's kind asked first
