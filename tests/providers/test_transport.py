"""Our HTTP/1.1 transport (the light path's) against real servers on 127.0.0.1 that
speak raw HTTP bytes: keep-alive and when a connection is not reused, chunked bodies,
a server cutting a body short, refused connections, redirects, proxies from the
environment (NO_PROXY decided as httpx2 decides it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx2
import pytest

from sema_rpc.providers import http, transport


@dataclass
class Seen:
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)


Reply = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]
"""Answers one request (its head and body); False closes the connection."""


async def _read_request(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head + (await reader.readexactly(length) if length else b"")


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Reply], Awaitable[tuple[str, Seen]]]]:
    servers: list[asyncio.Server] = []

    async def start(reply: Reply) -> tuple[str, Seen]:
        seen = Seen()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.connections += 1
            try:
                while (request := await _read_request(reader)) is not None:
                    seen.requests.append(request)
                    if not await reply(request, writer):
                        break
                    await writer.drain()
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen

    yield start
    for server in servers:
        server.close()


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


async def _ok(request: bytes, writer: asyncio.StreamWriter) -> bool:
    body = b"data: {}\n\n" * 3
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    return True


async def _post(client: transport.AsyncClient, url: str) -> bytes:
    response = await http.open_stream(
        client, url, {"content-type": "application/json"}, b'{"a":1}', max_retries=0
    )
    try:
        return b"".join([chunk async for chunk in response.aiter_bytes()])
    finally:
        await response.aclose()


async def test_a_connection_is_kept_alive_and_reused_after_a_response_read_to_its_end(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]],
) -> None:
    url, seen = await serve(_ok)
    async with http.new_transport() as client:
        assert await _post(client, url + "/v1/messages") == b"data: {}\n\n" * 3
        assert await _post(client, url + "/v1/messages") == b"data: {}\n\n" * 3
    assert seen.connections == 1
    head, _, body = seen.requests[0].partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    assert lines[0] == b"post /v1/messages http/1.1"
    assert body == b'{"a":1}'
    assert b"x-stainless-retry-count: 0" in lines
    assert b"content-length: 7" in lines
    assert b"accept-encoding: gzip, deflate" in lines  # as httpx2's client asks
    assert any(line.startswith(b"user-agent: python-httpx2/") for line in lines)
    assert any(line.startswith(b"host: 127.0.0.1:") for line in lines)


async def test_an_abandoned_stream_closes_its_connection(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]],
) -> None:
    async def slow(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()
        await asyncio.sleep(0.3)
        writer.write(b"6\r\nsecond\r\n0\r\n\r\n")
        return True

    url, seen = await serve(slow)
    async with http.new_transport() as client:
        response = await client.stream("POST", url + "/", {}, b"x")
        chunks = response.aiter_bytes()
        assert await chunks.__anext__() == b"first"
        await chunks.aclose()  # type: ignore[attr-defined]
        await response.aclose()  # abandoned mid-body
        response = await client.stream("POST", url + "/", {}, b"x")
        assert await response.aread() == b"firstsecond"
        await response.aclose()
        response = await client.stream("POST", url + "/", {}, b"x")  # read to its end
        assert await response.aread() == b"firstsecond"
    assert seen.connections == 2
    assert len(seen.requests) == 3


async def test_a_chunked_body_arrives_piece_by_piece(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]],
) -> None:
    events = [b'event: a\ndata: {"n":%d}\n\n' % i for i in range(3)]

    async def chunked(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        writer.write(b"transfer-encoding: chunked\r\n\r\n")
        for event in events:
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")
        return True

    url, seen = await serve(chunked)
    async with http.new_transport() as client:
        response = await http.open_stream(client, url + "/", {}, b"{}", max_retries=0)
        assert response.headers.get("Content-Type") == "text/event-stream"
        reader = http.SseReader()
        got = [
            ev for chunk in [c async for c in response.aiter_bytes()] for ev in reader.feed(chunk)
        ]
        await response.aclose()
        assert got == [(b"a", b'{"n":%d}' % i) for i in range(3)]
        assert await _post(client, url + "/") == b"".join(events)
    assert seen.connections == 1


async def test_a_body_cut_short_is_the_same_failure_as_with_httpx2(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]],
) -> None:
    async def cut(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\ndata: {}\n\n")
        return False  # closes mid-body

    url, _ = await serve(cut)

    async def failure(client: object) -> tuple[str, str | None]:
        response = await http.open_stream(client, url + "/", {}, b"{}", max_retries=0)
        try:
            with pytest.raises(Exception) as caught:
                async for _ in response.aiter_bytes():
                    pass
        finally:
            await response.aclose()
        classified = http.classify_transport(caught.value, started=True)
        wrapped = http.classify_transport(http.transport_failure(caught.value), started=True)
        assert classified is not None and wrapped is not None
        return classified.kind, wrapped.kind

    async with http.new_transport() as ours:
        got = await failure(ours)
    async with http.new_client() as theirs:
        expected = await failure(theirs)
    assert got == expected == ("stream_cut", "stream_cut")


async def test_a_refused_connection_is_retried_then_a_connection_error() -> None:
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    async with http.new_transport() as client:
        with pytest.raises(http.TransportFailure, match=r"Connection error\.") as caught:
            await http.open_stream(client, f"http://127.0.0.1:{port}/", {}, b"{}", max_retries=1)
    assert isinstance(caught.value.__cause__, transport.ConnectError)
    failure = http.classify_transport(caught.value, started=False)
    assert failure is not None and failure.kind == "connection"


async def test_a_read_timeout_is_an_idle_timeout(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]],
) -> None:
    async def silent(request: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(2)
        return False

    url, _ = await serve(silent)
    async with http.new_transport() as client:
        with pytest.raises(http.TransportFailure, match=r"Request timed out\.") as caught:
            await http.open_stream(
                client, url + "/", {}, b"{}", max_retries=0, timeout=http.light_timeout(None, 0.2)
            )
    assert http.is_idle_timeout(caught.value)
    failure = http.classify_transport(caught.value, started=False)
    assert failure is not None and failure.kind == "idle_timeout"


async def test_redirects_keep_or_drop_the_body_and_credentials_as_httpx2_does(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]],
) -> None:
    other_url, other = await serve(_ok)

    async def redirect(request: bytes, writer: asyncio.StreamWriter) -> bool:
        path = request.split(b" ", 2)[1]
        where = {
            b"/307": b"/done",
            b"/303": b"/done",
            b"/away": other_url.encode() + b"/there",
        }.get(path)
        if where is None:
            return await _ok(request, writer)
        status = b"307" if path == b"/307" else b"303" if path == b"/303" else b"302"
        writer.write(
            b"HTTP/1.1 %s X\r\nlocation: %s\r\ncontent-length: 0\r\n\r\n" % (status, where)
        )
        return True

    url, seen = await serve(redirect)
    secret = {"authorization": "Bearer k", "x-api-key": "k"}
    async with http.new_transport() as client:
        for path in ("/307", "/303", "/away"):
            response = await client.stream("POST", url + path, secret, b"{}")
            await response.aread()
            await response.aclose()
            assert response.status_code == 200
    heads = [r.lower() for r in seen.requests]
    assert heads[1].startswith(b"post /done ") and heads[1].endswith(b"{}")  # 307
    assert heads[3].startswith(b"get /done ") and b"content-length" not in heads[3]  # 303
    assert b"authorization: bearer k" in heads[1]  # the same origin keeps it
    there = other.requests[0].lower()
    assert there.startswith(b"get /there ")  # 302: a POST becomes a GET
    assert b"authorization" not in there and b"x-api-key" not in there


async def test_an_http_url_goes_through_the_environments_proxy_unless_no_proxy_says(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy_url, proxied = await serve(_ok)  # answers itself: enough to see the request line
    url, direct = await serve(_ok)
    monkeypatch.setenv("HTTP_PROXY", proxy_url.replace("http://", "http://me:pw@"))
    async with http.new_transport() as client:
        await _post(client, url + "/v1?x=1")
    assert proxied.requests[0].startswith(b"POST " + url.encode() + b"/v1?x=1 HTTP/1.1")
    assert b"\r\nproxy-authorization: basic bwu6chc=\r\n" in proxied.requests[0].lower()
    assert direct.requests == []
    monkeypatch.setenv("no_proxy", "example.test, 127.0.0.1")
    async with http.new_transport() as client:
        await _post(client, url + "/v1")
    assert direct.requests[0].startswith(b"POST /v1 HTTP/1.1")
    assert len(proxied.requests) == 1


@pytest.mark.parametrize(
    "no_proxy",
    ["", "*", "example.test", ".example.test", "api.example.test:8443", "127.0.0.1", "other"],
)
@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.test/v1",
        "https://api.example.test:8443/v1",
        "http://example.test/",
        "http://127.0.0.1:9/",
        "http://localhost:9/",
    ],
)
def test_which_urls_use_the_proxy_is_decided_as_httpx2_decides(
    url: str, no_proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("ALL_PROXY", "http://all.test:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    reference = httpx2.AsyncClient(trust_env=True)
    theirs = reference._transport_for_url(httpx2.URL(url))
    expected = None
    if theirs is not reference._transport:
        expected = str(theirs._pool._proxy_url.host.decode())  # type: ignore[attr-defined]
    ours = transport.AsyncClient()._proxy_for(transport._Url(url))
    assert (ours.host if ours else None) == expected


async def test_a_gzip_body_is_decoded(
    serve: Callable[[Reply], Awaitable[tuple[str, Seen]]],
) -> None:
    import gzip

    body = gzip.compress(b"data: {}\n\n" * 50)

    async def zipped(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n")
        writer.write(b"content-length: %d\r\n\r\n%s" % (len(body), body))
        return True

    url, _ = await serve(zipped)
    async with http.new_transport() as client:
        assert await _post(client, url + "/") == b"data: {}\n\n" * 50
