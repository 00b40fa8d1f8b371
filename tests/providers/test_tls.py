"""The light path's TLS: verified exactly as httpcore2's default context verifies (the one
the SDKs' clients use), the CA store read before the first TLS handshake and never for a
client that only talks plain http. Real servers on 127.0.0.1: a TLS server whose
certificate a throwaway CA (made with the `openssl` command in a temp dir) signed, a plain
http server that redirects to it, and a CONNECT proxy."""

from __future__ import annotations

import asyncio
import select
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http import server as http_server
from pathlib import Path

import httpcore2
import httpx2
import pytest

from sema_rpc.providers import http, transport
from sema_rpc.providers.tls import LazyTrustContext, client_ssl_context

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")

_SERVER_EXT = """subjectAltName=IP:127.0.0.1,DNS:localhost
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
"""


@dataclass
class Pki:
    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=sema test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)  # fmt: skip
    _openssl("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost", cwd=d)
    (d / "srv.ext").write_text(_SERVER_EXT)
    _openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "srv.ext", cwd=d)  # fmt: skip
    return Pki(d / "ca.pem", d / "srv.pem", d / "srv.key")


class _Quiet(http_server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(http_server.ThreadingHTTPServer):
    daemon_threads = True


def _serve(handler: type[http_server.BaseHTTPRequestHandler], tls: Pki | None) -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), handler)
    if tls is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls.cert, tls.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls else "http"
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def https_url(pki: Pki) -> Iterator[str]:
    class Ok(_Quiet):
        def do_GET(self) -> None:
            self._send(200, b"secure hello")

    yield from _serve(Ok, pki)


@pytest.fixture(scope="module")
def http_url(https_url: str) -> Iterator[str]:
    class Plain(_Quiet):
        def do_GET(self) -> None:
            if self.path == "/to-https":
                self._send(302, b"", location=https_url + "/")
            else:
                self._send(200, b"plain hello")

    yield from _serve(Plain, None)


class _Connect(socketserver.StreamRequestHandler):
    """A CONNECT proxy: tunnels bytes to the asked host and port; records the targets."""

    targets: list[str]

    def handle(self) -> None:
        line = self.rfile.readline().decode()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        method, target, _ = line.split(" ", 2)
        if method != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            return
        self.targets.append(target)
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as upstream:
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.wfile.flush()
            ends = [self.connection, upstream]
            while True:
                ready, _, _ = select.select(ends, [], [], 30)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is self.connection else self.connection).sendall(data)


@pytest.fixture
def connect_proxy() -> Iterator[tuple[str, list[str]]]:
    targets: list[str] = []
    handler = type("Handler", (_Connect,), {"targets": targets})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", targets
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def _hashed_dir(pki: Pki, into: Path) -> Path:
    """An OpenSSL CA directory (`<subject hash>.0`) holding the throwaway CA."""
    into.mkdir()
    out = subprocess.run(
        ["openssl", "x509", "-hash", "-noout", "-in", str(pki.ca)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    shutil.copy(pki.ca, into / f"{out.stdout.strip()}.0")
    return into


# ---- the same verification as httpcore2's default context --------------------------------


def _settings(ctx: ssl.SSLContext) -> dict[str, object]:
    return {
        "protocol": ctx.protocol,
        "verify_mode": ctx.verify_mode,
        "check_hostname": ctx.check_hostname,
        "options": ctx.options,
        "verify_flags": ctx.verify_flags,
        "minimum_version": ctx.minimum_version,
        "maximum_version": ctx.maximum_version,
        "keylog_filename": ctx.keylog_filename,
        "cert_store_stats": ctx.cert_store_stats(),
        "ca_certs": ctx.get_ca_certs(binary_form=True),
    }


@pytest.mark.parametrize("env", ["system", "SSL_CERT_FILE", "SSL_CERT_DIR"])
def test_the_context_trusts_what_httpcore2s_default_context_trusts(
    env: str, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env == "SSL_CERT_FILE":
        monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
        monkeypatch.setenv("SSLKEYLOGFILE", str(tmp_path / "keys.log"))
    elif env == "SSL_CERT_DIR":
        monkeypatch.setenv("SSL_CERT_DIR", str(_hashed_dir(pki, tmp_path / "certs")))
    ours = client_ssl_context()
    reference = httpcore2.default_ssl_context()
    assert _settings(ours) == _settings(reference)
    if env == "system":  # the machine's CA store was found and loaded
        assert ours.cert_store_stats()["x509_ca"] > 0


def test_the_ca_store_is_read_at_the_first_handshake_not_before(
    pki: Pki, http_url: str, https_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SSL_CERT_FILE is read from the environment when the client is made, the file
    itself when the first TLS connection starts: a plain http exchange never reads it."""
    ca = tmp_path / "ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    with pytest.raises(FileNotFoundError):
        httpcore2.default_ssl_context()  # an eager context reads it at once

    async def exchange() -> tuple[str, str]:
        client = http.new_client()
        monkeypatch.delenv("SSL_CERT_FILE")
        async with client:
            plain = (await client.get(http_url + "/")).text
            ca.write_bytes(pki.ca.read_bytes())  # exists only now
            secure = (await client.get(https_url + "/")).text
        return plain, secure

    assert asyncio.run(exchange()) == ("plain hello", "secure hello")


async def test_https_is_verified_against_the_trust_store(
    pki: Pki, https_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not in the system store: refused.
    async with http.new_client() as client:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(https_url + "/")
    # Trusted through SSL_CERT_FILE: accepted.
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    async with http.new_client() as client:
        assert (await client.get(https_url + "/")).text == "secure hello"
    # The host name is checked too: the certificate names 127.0.0.1 and localhost only.
    ctx = client_ssl_context()
    assert isinstance(ctx, LazyTrustContext) and ctx.check_hostname
    assert ctx.verify_mode == ssl.CERT_REQUIRED


async def test_a_redirect_from_http_to_https_is_verified_the_same_way(
    pki: Pki, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with http.new_client() as client:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(http_url + "/to-https")
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    async with http.new_client() as client:
        response = await client.get(http_url + "/to-https")
    assert (response.status_code, response.text) == (200, "secure hello")
    assert str(response.url).startswith("https://")


async def test_https_through_a_connect_proxy_is_verified(
    pki: Pki,
    https_url: str,
    connect_proxy: tuple[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy, targets = connect_proxy
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    async with http.new_client() as client:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(https_url + "/")
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    async with http.new_client() as client:
        assert (await client.get(https_url + "/")).text == "secure hello"
    assert targets == [https_url.removeprefix("https://")] * 2


# ---- the warm-up ------------------------------------------------------------------------


@pytest.mark.parametrize("base_url", ["https://api.example.test", None, "http://127.0.0.1:9"])
def test_the_warm_up_loads_the_ca_store_ahead_only_for_https(
    base_url: str | None, pki: Pki, https_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For an https base URL (None: the providers' https default) the warm-up reads the
    CA file: gone before the first handshake, it is not missed. For plain http it is
    read only by the first handshake, and then it is missed."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(pki.ca.read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    http._prebuilt.clear()
    try:
        http.prewarm(base_url)
        assert len(http._prebuilt) == 1
        ca.unlink()

        async def first_request() -> str:
            async with http._make() as client:
                return (await client.get(https_url + "/")).text  # type: ignore[no-any-return]

        if base_url is None or base_url.startswith("https"):
            assert asyncio.run(first_request()) == "secure hello"
        else:
            with pytest.raises(FileNotFoundError):
                asyncio.run(first_request())
    finally:
        http._prebuilt.clear()


def test_a_warm_up_hands_its_client_over_even_when_the_ca_store_cannot_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    http._prebuilt.clear()
    try:
        with pytest.raises(FileNotFoundError):
            http.prewarm("https://api.example.test")
        assert len(http._prebuilt) == 1  # the first request is not held up by it
    finally:
        http._prebuilt.clear()


def test_a_context_loads_its_trust_once_from_many_threads(pki: Pki) -> None:
    ctx = LazyTrustContext(str(pki.ca))
    assert not ctx.trust_loaded
    threads = [threading.Thread(target=ctx.load_trust) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert ctx.trust_loaded
    assert ctx.cert_store_stats()["x509_ca"] == 1


# ---- the same, through the light path's own transport ------------------------------------


async def test_our_transport_verifies_https_against_the_trust_store(
    pki: Pki, https_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with http.new_transport() as client:
        with pytest.raises(transport.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(https_url + "/")
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    async with http.new_transport() as client:
        assert (await client.get(https_url + "/")).text == "secure hello"


async def test_our_transport_verifies_a_redirect_from_http_to_https_the_same_way(
    pki: Pki, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with http.new_transport() as client:
        with pytest.raises(transport.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(http_url + "/to-https")
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    async with http.new_transport() as client:
        response = await client.get(http_url + "/to-https")
    assert (response.status_code, response.text) == (200, "secure hello")
    assert str(response.url).startswith("https://")


async def test_our_transport_tunnels_https_through_a_connect_proxy_verified(
    pki: Pki,
    https_url: str,
    connect_proxy: tuple[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy, targets = connect_proxy
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    async with http.new_transport() as client:
        with pytest.raises(transport.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(https_url + "/")
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca))
    async with http.new_transport() as client:
        assert (await client.get(https_url + "/")).text == "secure hello"
    assert targets == [https_url.removeprefix("https://")] * 2


def test_our_transport_talks_plain_http_without_httpx2_or_a_trust_store(http_url: str) -> None:
    code = (
        "import asyncio, sys\n"
        "from sema_rpc.providers import http\n"
        "async def main():\n"
        "    async with http.new_transport() as client:\n"
        f"        return (await client.get({http_url + '/'!r})).text\n"
        "mods = ('httpx2', 'httpcore2', 'urllib.request', 'truststore')\n"
        "print(asyncio.run(main()), *(m in sys.modules for m in mods))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["plain", "hello", "False", "False", "False", "False"]
