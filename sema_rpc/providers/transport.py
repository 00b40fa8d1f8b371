"""The light path's HTTP/1.1 client: asyncio streams + our own codec (`http11.py`), nothing
else of an HTTP stack (no httpx2, httpcore2, h11, urllib.request, email or `ssl` for a
plain-http origin).

What it does, the way the SDKs' httpx2 client does it for a streamed POST:

- a request with headers and a body, with the default headers httpx2's client adds
  (`Accept: */*`, `Accept-Encoding: gzip, deflate`, `Connection: keep-alive`, its
  User-Agent): the model server sees the same request as from the SDKs; the response's
  status and headers, then its body as bytes as they arrive (Content-Length or chunked,
  parsed by `http11.py`; a gzip or deflate body decoded with zlib, as httpx2 decodes it);
- keep-alive: one idle connection per origin, reused when the response before it was
  read to its end; a response abandoned, cancelled or failed, one whose server asked
  to close or spoke HTTP/1.0, or one whose body ran until the close, closes its
  connection. At most `max_connections` open at once (waiting for
  a free one is the pool timeout), at most `max_keepalive` idle;
- timeouts (`Timeouts`): connect, each read, each write, the wait for a free connection;
  each raises its own `TimeoutException` subclass, as httpx2 names them;
- TLS for https only, with the given context (`tls.client_ssl_context()`: its trust
  store loaded before the first handshake, off the event loop), SNI and the host name
  checked against the origin's host;
- proxies from the environment, as httpx2's `trust_env` reads them: `HTTPS_PROXY`,
  `HTTP_PROXY`, `ALL_PROXY` (lower case first), `NO_PROXY` (`*`, hosts, `.domain`,
  `domain` with its subdomains, `host:port`, IP addresses). An http URL goes to an
  http proxy in absolute form; an https one through a CONNECT tunnel, then TLS to the
  origin;
- redirects (at most `MAX_REDIRECTS`): 307/308 keep method and body; 301/302 turn a
  POST, 303 anything but HEAD, into a GET without body; `Authorization` and
  `x-api-key` are not sent to another origin.

Errors are this module's classes, named and nested as httpx2's (`RequestError` ⊃
`TransportError` ⊃ `TimeoutException` ⊃ `ConnectTimeout`/`ReadTimeout`/...;
`ConnectError`, `ReadError`, `WriteError`, `RemoteProtocolError`, `ProxyError`; beside
`TransportError`: `DecodingError`, `TooManyRedirects`), so `http.py` and the providers
classify both alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from sema_rpc.providers import http11
from sema_rpc.providers.transport_errors import (
    ConnectError,
    ConnectTimeout,
    DecodingError,
    NetworkError,
    PoolTimeout,
    ProxyError,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    RequestError,
    TimeoutException,
    TooManyRedirects,
    TransportError,
    WriteError,
    WriteTimeout,
)
from sema_rpc.providers.transport_values import (
    Headers,
    Timeouts,
    _bypasses,
    _Url,
    environment_proxies,
)

__all__ = [
    "AsyncClient",
    "ConnectError",
    "ConnectTimeout",
    "DecodingError",
    "Headers",
    "NetworkError",
    "PoolTimeout",
    "ProxyError",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "RequestError",
    "Response",
    "TimeoutException",
    "Timeouts",
    "TooManyRedirects",
    "TransportError",
    "WriteError",
    "WriteTimeout",
    "environment_proxies",
]

MAX_REDIRECTS = 20
"""httpx2's default bound on redirects followed for one request."""
_READ_SIZE = 65536


# ------------------------------------------------------------------------ connections


class _Conn:
    __slots__ = ("key", "parser", "reader", "writer")

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, key: Any
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.key = key
        self.parser: http11.ResponseParser | None = None
        """The response to the request in flight (or the last one)."""

    def reusable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        try:
            self.writer.close()
        except Exception:  # closing is best effort  # pragma: no cover
            pass

    async def send(
        self, request: bytes, parser: http11.ResponseParser, timeout: float | None
    ) -> None:
        """Write `request` (its head and body); `parser` reads its response."""
        self.parser = parser
        try:
            self.writer.write(request)
            await asyncio.wait_for(self.writer.drain(), timeout)
        except TimeoutError as exc:
            raise WriteTimeout("timed out writing the request") from exc
        except OSError as exc:
            raise WriteError("") from exc

    async def event(self, timeout: float | None) -> Any:
        """The response's next event (`http11.Head`, body bytes or `http11.END`),
        reading from the socket as needed; a malformed response, or a close before its
        end, raises `RemoteProtocolError`."""
        parser = self.parser
        assert parser is not None
        while True:
            ev = parser.next_event()
            if ev is not http11.NEED_DATA:
                return ev
            try:
                data = await asyncio.wait_for(self.reader.read(_READ_SIZE), timeout)
            except TimeoutError as exc:
                raise ReadTimeout("timed out reading the response") from exc
            except OSError as exc:  # no message, as httpx2's (anyio's BrokenResourceError)
                raise ReadError("") from exc
            if data:
                parser.feed(data)
            else:
                parser.feed_eof()


class _Zlib:
    """gzip / deflate (zlib-wrapped, or raw as some servers send it) as httpx2 decodes."""

    def __init__(self, gzip: bool) -> None:
        import zlib

        self._zlib = zlib
        self._gzip = gzip
        self._first = True
        self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> bytes:
        zlib = self._zlib
        first, self._first = self._first, False
        try:
            return self._obj.decompress(data)
        except zlib.error as exc:
            if first and not self._gzip:
                self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.decode(data)
            raise DecodingError(str(exc)) from exc

    def flush(self) -> bytes:
        try:
            return self._obj.flush()
        except self._zlib.error as exc:  # pragma: no cover
            raise DecodingError(str(exc)) from exc


def _decoder(encoding: str | None) -> _Zlib | None:
    value = (encoding or "").strip().lower()
    if value in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if value == "deflate":
        return _Zlib(gzip=False)
    return None  # identity, or one httpx2 would not decode either


class Response:
    """A response whose body is read by `aiter_bytes()` (once) or `aread()`."""

    def __init__(
        self, client: AsyncClient, conn: _Conn, head: http11.Head, url: str, read: Any
    ) -> None:
        self.status_code = head.status
        self.headers = Headers(head.headers)
        self.url = url
        self.http_version = f"HTTP/{head.version}"
        self._client = client
        self._conn: _Conn | None = conn
        self._read_timeout = read
        self._content: bytes | None = None

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        if self._content is not None:
            if self._content:
                yield self._content
            return
        conn = self._conn
        if conn is None:
            raise ReadError("the response was closed")
        done = False
        decoder = _decoder(self.headers.get("content-encoding"))
        try:
            while True:
                ev = await conn.event(self._read_timeout)
                if ev is http11.END:
                    done = True
                    if decoder is not None and (rest := decoder.flush()):
                        yield rest
                    return
                data = ev if decoder is None else decoder.decode(ev)
                if data:
                    yield data
        finally:
            if self._conn is conn:  # not already closed by `aclose()`
                self._conn = None
                self._client._release(conn, done)

    async def aread(self) -> bytes:
        if self._content is None:
            self._content = b"".join([chunk async for chunk in self.aiter_bytes()])
        return self._content

    @property
    def content(self) -> bytes:
        if self._content is None:
            raise RuntimeError("the body has not been read")
        return self._content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._client._release(conn, False)


class AsyncClient:
    """The connection pool and request sending of one event loop."""

    def __init__(
        self,
        *,
        ssl_context: Any = None,
        timeout: Timeouts | None = None,
        max_connections: int = 1000,
        max_keepalive: int = 100,
        socket_options: list[tuple[int, int, Any]] | None = None,
        user_agent: str | None = None,
        trust_env: bool = True,
    ) -> None:
        self._ssl_context = ssl_context
        self.timeout = timeout or Timeouts(600.0, connect=5.0)
        self._max_keepalive = max_keepalive
        self._slots = asyncio.Semaphore(max_connections)
        self._socket_options = socket_options or []
        self._user_agent = user_agent
        self._proxies = environment_proxies() if trust_env else {"no": []}
        self._idle: dict[Any, _Conn] = {}
        self.is_closed = False

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self.abandon()

    def abandon(self) -> None:
        """Close the idle connections (no await: callable when the loop is gone)."""
        self.is_closed = True
        idle, self._idle = self._idle, {}
        for conn in idle.values():
            conn.close()
            self._slots.release()

    # ---------------------------------------------------------------- requests

    async def get(self, url: str, **kwargs: Any) -> Response:
        return await self.request("GET", url, **kwargs)

    async def post(self, url: str, **kwargs: Any) -> Response:
        return await self.request("POST", url, **kwargs)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes = b"",
        timeout: Any = None,
    ) -> Response:
        """The whole response, its body read."""
        response = await self.stream(method, url, headers or {}, content, timeout=timeout)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    async def stream(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes = b"",
        *,
        timeout: Any = None,
    ) -> Response:
        """The response once its headers are in, redirects followed; the caller reads
        the body and closes it."""
        timeouts = self.timeout if timeout is None else Timeouts.of(timeout)
        headers = dict(headers)
        first = _Url(url)
        for _ in range(MAX_REDIRECTS + 1):
            target = _Url(url)
            if target.origin != first.origin:
                headers = {
                    k: v
                    for k, v in headers.items()
                    if k.lower() not in ("authorization", "x-api-key")
                }
            response = await self._send(method, target, headers, body, timeouts)
            status = response.status_code
            location = response.headers.get("location")
            if status not in (301, 302, 303, 307, 308) or not location:
                return response
            await response.aread()  # the connection goes back to the pool
            await response.aclose()
            if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
                method, body = "GET", b""
                headers = {
                    k: v
                    for k, v in headers.items()
                    if k.lower() not in ("content-type", "content-length", "transfer-encoding")
                }
            url = target.join(location)
        raise TooManyRedirects(f"Exceeded maximum allowed redirects ({MAX_REDIRECTS}).")

    async def _send(
        self, method: str, url: _Url, headers: dict[str, str], body: bytes, t: Timeouts
    ) -> Response:
        proxy = self._proxy_for(url)
        forward = proxy is not None and url.scheme == "http"
        target = str(url) if forward else url.target
        lines = [("Host", url.authority)]
        names = {k.lower() for k in headers}
        if "user-agent" not in names and self._user_agent:
            lines.append(("User-Agent", self._user_agent))
        if "accept" not in names:
            lines.append(("Accept", "*/*"))
        if "accept-encoding" not in names:
            lines.append(("Accept-Encoding", "gzip, deflate"))
        if "connection" not in names:
            lines.append(("Connection", "keep-alive"))
        lines.extend(headers.items())
        if forward and proxy is not None:
            lines.extend(proxy.proxy_authorization())
        if method not in ("GET", "HEAD") or body:
            lines.append(("Content-Length", str(len(body))))
        request = http11.encode_request(method, target, lines, body)
        keep_alive = http11.keep_alive(lines)
        key = (url.origin, proxy)
        reused = key in self._idle
        conn = await self._connection(url, proxy, key, t)
        try:
            try:
                parser = http11.ResponseParser(method, request_keep_alive=keep_alive)
                await conn.send(request, parser, t.write)
                ev = await conn.event(t.read)
            except (ReadError, WriteError, RemoteProtocolError):
                if not reused:
                    raise
                # A kept-alive connection the server had closed: once more on a new one.
                self._release(conn, False)
                conn = await self._connection(url, proxy, key, t, fresh=True)
                parser = http11.ResponseParser(method, request_keep_alive=keep_alive)
                await conn.send(request, parser, t.write)
                ev = await conn.event(t.read)
            while ev.status < 200:  # interim (1xx) heads: the final one follows
                ev = await conn.event(t.read)
        except BaseException:
            self._release(conn, False)
            raise
        return Response(self, conn, ev, str(url), t.read)

    def _proxy_for(self, url: _Url) -> _Url | None:
        proxies = self._proxies
        value = proxies.get(url.scheme) or proxies.get("all")
        if value is None or _bypasses(proxies["no"], url):
            return None
        return _Url(value)

    def _release(self, conn: _Conn, complete: bool) -> None:
        """Back to the pool after a complete response the server lets us reuse, else
        closed. The pool keeps one idle connection per origin."""
        if complete and conn.parser is not None and conn.parser.reusable:
            conn.parser = None
            if (
                not self.is_closed
                and conn.key not in self._idle
                and len(self._idle) < self._max_keepalive
            ):
                self._idle[conn.key] = conn
                return
        conn.close()
        self._slots.release()

    async def _connection(
        self, url: _Url, proxy: _Url | None, key: Any, t: Timeouts, *, fresh: bool = False
    ) -> _Conn:
        if not fresh:
            conn = self._idle.pop(key, None)
            if conn is not None:
                if conn.reusable():
                    return conn
                conn.close()
                self._slots.release()
        try:
            await asyncio.wait_for(self._slots.acquire(), t.pool)
        except TimeoutError as exc:
            raise PoolTimeout("timed out waiting for a free connection") from exc
        try:
            return await self._open(url, proxy, key, t)
        except BaseException:
            self._slots.release()
            raise

    async def _open(self, url: _Url, proxy: _Url | None, key: Any, t: Timeouts) -> _Conn:
        hop = proxy or url
        tls = self._context() if hop.scheme == "https" else None
        reader, writer = await self._dial(hop, tls, t)
        conn = _Conn(reader, writer, key)
        if proxy is not None and url.scheme == "https":
            authority = f"{url.host}:{url.port}"
            try:
                request = http11.encode_request(
                    "CONNECT", authority, [("Host", authority), *proxy.proxy_authorization()]
                )
                await conn.send(request, http11.ResponseParser("CONNECT"), t.write)
                ev = await conn.event(t.connect)
                while ev.status < 200:
                    ev = await conn.event(t.connect)
                conn.parser = None
                if not 200 <= ev.status < 300:
                    raise ProxyError(f"proxy answered {ev.status} to CONNECT {authority}")
                context = self._context()
                await self._trust(context)
                try:
                    await asyncio.wait_for(
                        writer.start_tls(context, server_hostname=url.host), t.connect
                    )
                except TimeoutError as exc:
                    raise ConnectTimeout("timed out in the TLS handshake") from exc
                except OSError as exc:  # ssl.SSLError is an OSError
                    raise ConnectError(str(exc)) from exc
            except BaseException:
                writer.close()
                raise
        return conn

    def _context(self) -> Any:
        if self._ssl_context is None:
            from sema_rpc.providers.tls import client_ssl_context

            self._ssl_context = client_ssl_context()
        return self._ssl_context

    @staticmethod
    async def _trust(context: Any) -> None:
        """Load a lazy trust store off the event loop (OpenSSL works without the GIL);
        a store that cannot load raises its own error (FileNotFoundError...)."""
        if getattr(context, "trust_loaded", True) is False:
            await asyncio.to_thread(context.load_trust)

    async def _dial(
        self, hop: _Url, tls: Any, t: Timeouts
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if tls is not None:
            await self._trust(tls)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    hop.host,
                    hop.port,
                    ssl=tls,
                    server_hostname=hop.host if tls is not None else None,
                    limit=_READ_SIZE * 4,
                ),
                t.connect,
            )
        except TimeoutError as exc:
            raise ConnectTimeout(f"timed out connecting to {hop.host}:{hop.port}") from exc
        except OSError as exc:  # refused, unreachable, name not resolved, TLS failed
            raise ConnectError(str(exc) or type(exc).__name__) from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            for level, option, value in self._socket_options:
                try:
                    sock.setsockopt(level, option, value)
                except OSError:  # pragma: no cover - an option the platform lacks
                    pass
        return reader, writer
