"""Record model exchanges as a replayable cassette (`sema-rpc --record DIR`).

Per session, ask the registry for a recording provider and close it with the session::

    path = cassette_path(record_dir, session.id)          # DIR/cassette-<session-id>.jsonl
    provider = registry.provider_for(profile, record_to=path)
    ...                                                    # provider.stream(request) as usual
    await provider.aclose()                                # releases its HTTP client and file

Each `stream()` call appends ONE line to the cassette, in the format `replay.py` reads::

    {"provider": "anthropic" | "openai-chat" | "openai-responses",
     "request": {...}, "status": 200, "headers": {...}, "body": "<raw SSE text>"}

so `replay/<path>` plays the session back through the same parsing code.

How it works: `RecordingTransport` wraps the provider's httpx2 transport(s) (also those
for proxies from the environment). It tees the response body while it streams: every
chunk is passed on to the provider as it arrives and kept; when the body ends (or is closed
early) the exchange — request body, status, selected headers, the body bytes decoded
from any content-encoding — goes to a sink. `RecordingProvider` collects the exchanges
of one `stream()` call and writes the last one: attempts that were retried (429/5xx) become
`# …` comment lines, because replay plays one exchange per call with retries off.

Secrets: request headers are never written; response headers are an allow-list minus
any name containing `key`, `token`, `secret`, `auth` or `cookie`. Scrubbed from
everything written (request body, response body, kept headers, error text): the values
of the request's credential headers (authorization, x-api-key, api-key, *key*, *token*)
and every secret the process knows — `sema_rpc.core.secrets.redact`, the redaction the wire
transcript and the log use (the API keys in the environment, `sk-…` keys). A secret
split across two stream events of a response is not caught. The file is created 0600
(its directory 0700).

One provider may write the same exchanges to several cassettes (`path` a list: the
session's `recordDir` and the server's `--record` run folder).

Not recordable: a request that got no HTTP response at all (connection refused or timed
out) leaves no line, so that call is missing from the cassette.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import threading
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2

from sema_rpc.core.secrets import redact
from sema_rpc.core.stream import ModelRequest, ProviderError, ResponseFailed, StreamEvent

if TYPE_CHECKING:
    from sema_rpc.core.stream import Provider

__all__ = [
    "CassetteWriter",
    "RecordingProvider",
    "RecordingTransport",
    "cassette_path",
    "recording_http_client",
]

log = logging.getLogger("sema_rpc.providers.recording")

Exchange = dict[str, Any]
Sink = Callable[[Exchange], None]

# Response headers worth keeping (replay needs only content-type; the rest helps debugging).
KEPT_HEADERS = frozenset(
    {
        "content-type",
        "request-id",
        "x-request-id",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "openai-processing-ms",
        "openai-version",
        "openai-model",
    }
)
_SENSITIVE_NAME = re.compile(r"key|token|secret|auth|cookie", re.IGNORECASE)
_CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})
_MIN_SECRET_LEN = 8
REDACTED = "[REDACTED]"

# The exchanges of the `RecordingProvider.stream()` call running in this task.
_ATTEMPTS: contextvars.ContextVar[list[Exchange] | None] = contextvars.ContextVar(
    "sema_recording_attempts", default=None
)


def cassette_path(record_dir: str | Path, session_id: str) -> Path:
    """`DIR/cassette-<session-id>.jsonl`, the session id made safe as a file name (the
    prefix keeps it apart from the wire transcript `wire.jsonl` in the same folder)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id).lstrip(".") or "session"
    return Path(record_dir).expanduser() / f"cassette-{safe}.jsonl"


def is_sensitive_header(name: str) -> bool:
    n = name.lower()
    return n in _CREDENTIAL_HEADERS or bool(_SENSITIVE_NAME.search(n))


def _secrets_of(headers: Any) -> list[str]:
    """Credential values carried by request headers (to scrub from what is written)."""
    out: list[str] = []
    for name, value in headers.items():
        if not is_sensitive_header(name):
            continue
        v = value.strip()
        for prefix in ("Bearer ", "bearer ", "Basic ", "basic "):
            if v.startswith(prefix):
                v = v[len(prefix) :].strip()
        if len(v) >= _MIN_SECRET_LEN:
            out.append(v)
    return out


def _scrub(text: str, secrets: list[str]) -> str:
    """`text` without the request's credentials nor any secret the process knows."""
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    return redact(text)


def _undo(encoding: str, data: bytes) -> bytes:
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompress(data, zlib.MAX_WBITS | 16)
    if encoding == "deflate":
        try:
            return zlib.decompress(data)
        except zlib.error:  # raw deflate, as some servers send
            return zlib.decompress(data, -zlib.MAX_WBITS)
    from httpx2._decoders import SUPPORTED_DECODERS  # br / zstd when installed

    decoder = SUPPORTED_DECODERS[encoding]()
    parts = [decoder.decode(data), decoder.flush()]
    return b"".join(p if isinstance(p, bytes) else b"".join(p) for p in parts)


def _decode_body(raw: bytes, content_encoding: str) -> tuple[str, str | None]:
    """The body as text, undoing any content-encoding; (text, problem)."""
    encodings = [e.strip().lower() for e in content_encoding.split(",") if e.strip()]
    data = raw
    try:
        for enc in reversed(encodings):
            if enc != "identity":
                data = _undo(enc, data)
    except Exception as e:
        return raw.decode("latin-1"), f"could not decode {content_encoding!r}: {e}"
    return data.decode("utf-8", errors="replace"), None


def _request_body(request: Any, secrets: list[str]) -> Any:
    try:
        content = request.content
    except Exception:  # a streamed upload: not kept
        return None
    if not content:
        return None
    text = _scrub(content.decode("utf-8", errors="replace"), secrets)
    try:
        return json.loads(text)
    except ValueError:
        return text


class CassetteWriter:
    """Append-only cassette file: one JSON line per exchange, written and flushed at once.

    Created with mode 0600 (existing files are chmod-ed to 0600 too); the parent directory
    is created 0700 if missing. After `close()` the next write reopens the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._open()  # fail early (unwritable directory) rather than mid-session

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(self.path, flags, 0o600)
            try:
                os.fchmod(fd, 0o600)
            except OSError:  # pragma: no cover - not the owner; the create mode still held
                pass
            self._fd = fd
        return self._fd

    def _write_line(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        with self._lock:
            fd = self._open()
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]

    def write(self, exchange: Exchange) -> None:
        self._write_line(json.dumps(exchange, ensure_ascii=False, separators=(",", ":")))

    def comment(self, text: str) -> None:
        self._write_line("# " + " ".join(text.split()))

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class _TeeStream(httpx2.AsyncByteStream):
    """Wraps a response byte stream: chunks go on to the reader as they arrive and are
    kept; when the stream ends or is closed, `finish` runs once."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, finish: Callable[[bytes, bool, str | None], None]
    ) -> None:
        self._inner = inner
        self._parts: list[bytes] = []
        self._finish = finish
        self._finished = False

    def _done(self, complete: bool, error: str | None = None) -> None:
        if self._finished:
            return
        self._finished = True
        try:
            self._finish(b"".join(self._parts), complete, error)
        except Exception:  # recording must never break the model call
            log.warning("could not record a model exchange", exc_info=True)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._parts.append(chunk)
                yield chunk
        except GeneratorExit:
            self._done(False)
            raise
        except BaseException as e:
            self._done(False, f"{type(e).__name__}: {e}")
            raise
        self._done(True)

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._done(False)


class RecordingTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that records every exchange through `inner` to `sink` (e.g.
    `CassetteWriter(path).write`). `provider` names the cassette format: anthropic,
    openai-chat or openai-responses."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, sink: Sink, provider: str) -> None:
        self.inner = inner
        self.sink = sink
        self.provider = provider

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        secrets = _secrets_of(request.headers)
        try:
            await request.aread()
        except Exception:  # pragma: no cover - a streamed upload
            pass
        body = _request_body(request, secrets)
        path = request.url.path
        response = await self.inner.handle_async_request(request)
        status = response.status_code
        headers = {
            k.lower(): _scrub(v, secrets)
            for k, v in response.headers.items()
            if k.lower() in KEPT_HEADERS and not is_sensitive_header(k)
        }
        encoding = response.headers.get("content-encoding", "")
        provider, sink = self.provider, self.sink

        def finish(raw: bytes, complete: bool, error: str | None) -> None:
            text, problem = _decode_body(raw, encoding)
            exchange: Exchange = {
                "provider": provider,
                "request": body,
                "status": status,
                "headers": headers,
                "body": _scrub(text, secrets),
                "path": path,
            }
            if not complete:
                exchange["incomplete"] = True
            if error or problem:
                exchange["error"] = _scrub(error or problem or "", secrets)
            sink(exchange)

        inner_stream = response.stream
        assert isinstance(inner_stream, httpx2.AsyncByteStream)
        response.stream = _TeeStream(inner_stream, finish)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def recording_http_client(sink: Sink, provider: str, **kwargs: Any) -> Any:
    """An httpx2.AsyncClient with the SDKs' defaults (600 s timeout, their connection
    limits, redirects followed) whose transports all record to `sink`."""
    kwargs.setdefault("timeout", httpx2.Timeout(600.0, connect=5.0))
    kwargs.setdefault("limits", httpx2.Limits(max_connections=1000, max_keepalive_connections=100))
    kwargs.setdefault("follow_redirects", True)
    client = httpx2.AsyncClient(**kwargs)
    # Wrap the default transport and the proxy mounts the client built from the
    # environment; passing `transport=` instead would disable environment proxies.
    client._transport = RecordingTransport(client._transport, sink, provider)
    client._mounts = {
        pattern: (RecordingTransport(t, sink, provider) if t is not None else None)
        for pattern, t in client._mounts.items()
    }
    return client


def cassette_provider_name(provider: str) -> str:
    """Profile provider → the cassette's `provider` field."""
    return {"openai": "openai-chat"}.get(provider, provider)


class RecordingProvider:
    """A provider that records each `stream()` call as one cassette line.

    `make_inner(http_client)` builds the real provider around the recording HTTP client;
    it is built lazily on the running event loop (an httpx2 pool belongs to one loop).
    """

    def __init__(
        self,
        provider: str,
        make_inner: Callable[[Any], Provider],
        path: str | Path | Sequence[str | Path],
    ) -> None:
        self.provider = cassette_provider_name(provider)
        self.name = provider
        self._make_inner = make_inner
        paths = [path] if isinstance(path, str | Path) else list(path)
        if not paths:
            raise ValueError("RecordingProvider needs at least one cassette path")
        self.writers = [CassetteWriter(p) for p in paths]
        """One per cassette: every exchange is written to each."""
        self.writer = self.writers[0]
        self.path = self.writer.path
        self._inner: Provider | None = None
        self._http: Any = None
        self._loop: Any = None
        self.recorded = 0
        """Exchanges written so far."""

    def __repr__(self) -> str:
        return f"RecordingProvider({self.name!r}, path={str(self.path)!r})"

    def _get_inner(self) -> Provider:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._inner is None or self._loop is not loop:
            self._http = recording_http_client(self._sink, self.provider)
            self._inner = self._make_inner(self._http)
            self._loop = loop
        return self._inner

    def _sink(self, exchange: Exchange) -> None:
        attempts = _ATTEMPTS.get()
        if attempts is not None:
            attempts.append(exchange)
        else:  # an exchange outside a stream() call (or finished from another task)
            self._write(exchange)

    def _write(self, exchange: Exchange) -> None:
        for writer in self.writers:
            writer.write(exchange)
        self.recorded += 1

    def _commit(self, attempts: list[Exchange]) -> None:
        try:
            for n, ex in enumerate(attempts[:-1], 1):
                for writer in self.writers:
                    writer.comment(
                        f"attempt {n}: HTTP {ex.get('status')} {ex.get('path', '')}"
                        " (retried by the SDK; not replayed)"
                    )
            if attempts:
                self._write(attempts[-1])
        except Exception:
            log.warning("could not write to the cassette %s", self.path, exc_info=True)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        attempts: list[Exchange] = []
        token = _ATTEMPTS.set(attempts)
        agen: Any = None
        try:
            try:
                inner = self._get_inner()
            except Exception as e:  # pragma: no cover - SDK missing / bad setup
                yield ResponseFailed(ProviderError("invalid_request", f"{type(e).__name__}: {e}"))
                return
            agen = inner.stream(request)
            async for event in agen:
                yield event
        finally:
            if agen is not None:
                await agen.aclose()  # an abandoned stream: close it so its body is reported
            try:
                _ATTEMPTS.reset(token)
            except ValueError:  # closed from another context
                _ATTEMPTS.set(None)
            self._commit(attempts)

    async def aclose(self) -> None:
        inner, http = self._inner, self._http
        self._inner = self._http = self._loop = None
        try:
            if inner is not None:
                await inner.aclose()
            if http is not None:
                await http.aclose()
        finally:
            for writer in self.writers:
                writer.close()
