"""The light request path the providers use in production: one client of our own HTTP/1.1
transport (`transport.py`) per event loop, `open_stream()` (send + the official SDKs'
retry policy) and an SSE reader.

Importing this module imports nothing heavy, and the production path never imports httpx2:
`open_stream()` and the error classification take our transport's client and errors, and
an httpx2 client (recording, replay, tests' oracles: `new_client()`) and its errors alike;
httpx2 is imported by the functions that need it, without `importlib.metadata`
(`_httpx2_version`). No SDK is ever imported here.

What the SDKs do and this module does the same way (`SDK_PARITY` below; a test compares
it with the installed SDKs' constants, so an SDK upgrade that changes them fails loudly):

- the client: 600 s timeout, 5 s connect, 1000 connections / 100 kept alive, redirects
  followed, TCP keep-alive socket options, proxies and `SSL_CERT_FILE`/`SSL_CERT_DIR`
  from the environment, TLS verified as `httpcore2.default_ssl_context()` verifies it
  (its CA store loaded by the first TLS handshake, or ahead for an https base URL:
  `tls.py`);
- retries, at most `max_retries` (SEMA_MAX_RETRIES, default 2) after the first attempt:
  on a connection error or timeout before the response, and on an error status when the
  `x-should-retry` header says `true`, or, without that header, on 408, 409, 429 and
  every status ≥ 500 (`x-should-retry: false` stops any retry). The wait is what
  `retry-after-ms` (milliseconds) or `retry-after` (seconds, a float, or an HTTP date)
  asks for when that is > 0 — the OpenAI SDK only up to 120 s, and it does not retry at
  all when asked to wait longer — else 0.5·2ⁿ s (n = retries so far) capped at 8 s,
  minus a random 0–25 %. `x-stainless-retry-count` tells the server which attempt it is.
- a status error's body: JSON when it parses, else its text; its message the body's
  `error.message`, else `Error code: N - <body>`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from sema_rpc.providers import _httpx2_version, transport
from sema_rpc.providers.sse import SseReader

if TYPE_CHECKING:
    from sema_rpc.core.stream import ProviderError

__all__ = [
    "SDK_PARITY",
    "LoopBoundClient",
    "SseReader",
    "StatusError",
    "StreamError",
    "TransportFailure",
    "classify_other",
    "classify_transport",
    "client_timeout",
    "light_timeout",
    "new_client",
    "new_transport",
    "open_stream",
    "prewarm",
    "retry_delay",
    "should_retry",
    "transport_failure",
]

log = logging.getLogger("sema_rpc.providers.http")

_httpx2_version.install()  # a later `import httpx2` skips importlib.metadata

# ------------------------------------------------------------------------ SDK parity
ANTHROPIC_API_VERSION = "2026-10-21"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 600.0
CONNECT_TIMEOUT = 5.0
MAX_CONNECTIONS = 1000
MAX_KEEPALIVE_CONNECTIONS = 100
DEFAULT_MAX_RETRIES = 2
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
OPENAI_MAX_RETRY_AFTER = 120.0
"""The OpenAI SDK honours a server-asked wait only up to this, and does not retry when
asked to wait longer; the Anthropic SDK has no such limit."""
_MAX_SLEEP = 4_294_967.0

SDK_PARITY: dict[str, Any] = {
    "anthropic.ANTHROPIC_API_VERSION": ANTHROPIC_API_VERSION,
    "anthropic.base_url": ANTHROPIC_BASE_URL,
    "openai.base_url": OPENAI_BASE_URL,
    "timeout": DEFAULT_TIMEOUT,
    "connect_timeout": CONNECT_TIMEOUT,
    "max_connections": MAX_CONNECTIONS,
    "max_keepalive_connections": MAX_KEEPALIVE_CONNECTIONS,
    "max_retries": DEFAULT_MAX_RETRIES,
    "initial_retry_delay": INITIAL_RETRY_DELAY,
    "max_retry_delay": MAX_RETRY_DELAY,
    "openai.max_retry_after": OPENAI_MAX_RETRY_AFTER,
}


# ------------------------------------------------------------------------ the client


def client_timeout(timeout: float | None, idle_timeout: float | None) -> Any:
    """The client's httpx2.Timeout: `timeout` overall (600 s), 5 s to connect, and the
    stream idle timeout as the read timeout (the longest the server may send nothing)."""
    import httpx2

    base = timeout if timeout is not None else DEFAULT_TIMEOUT
    if idle_timeout is None:
        return httpx2.Timeout(base, connect=min(CONNECT_TIMEOUT, base))
    return httpx2.Timeout(base, read=idle_timeout, connect=min(CONNECT_TIMEOUT, base, idle_timeout))


def light_timeout(timeout: float | None, idle_timeout: float | None) -> transport.Timeouts:
    """`client_timeout()` for our transport (the same figures, no httpx2 import)."""
    base = timeout if timeout is not None else DEFAULT_TIMEOUT
    if idle_timeout is None:
        return transport.Timeouts(base, connect=min(CONNECT_TIMEOUT, base))
    return transport.Timeouts(
        base, read=idle_timeout, connect=min(CONNECT_TIMEOUT, base, idle_timeout)
    )


def _httpx2_timeout(value: Any) -> Any:
    """An httpx2 client's per-request timeout from either kind."""
    if isinstance(value, transport.Timeouts):
        import httpx2

        return httpx2.Timeout(value.read, connect=value.connect, write=value.write, pool=value.pool)
    return value


_user_agent: list[str] = []


def user_agent() -> str:
    """The User-Agent httpx2's client sends (`python-httpx2/<version>`), found without
    importing it."""
    if not _user_agent:
        import importlib.util

        version = None
        spec = importlib.util.find_spec("httpx2")
        for location in (spec.submodule_search_locations or []) if spec else []:
            version = _httpx2_version.dist_version(location, "httpx2")
            if version:
                break
        _user_agent.append(f"python-httpx2/{version}" if version else "python-httpx2")
    return _user_agent[0]


def new_transport(
    timeout: float | None = None, idle_timeout: float | None = None, *, ssl_context: Any = None
) -> transport.AsyncClient:
    """The production client: our transport, configured as `new_client()` configures
    httpx2's (limits, TCP keep-alive, proxies from the environment, redirects, TLS
    context: `ssl_context`, else `tls.client_ssl_context()` made at the first https
    connection)."""
    return transport.AsyncClient(
        ssl_context=ssl_context,
        timeout=light_timeout(timeout, idle_timeout),
        max_connections=MAX_CONNECTIONS,
        max_keepalive=MAX_KEEPALIVE_CONNECTIONS,
        socket_options=_socket_options(),
        user_agent=user_agent(),
    )


def _socket_options() -> list[tuple[int, int, int | bool]]:
    """TCP keep-alive as the SDKs set it (a dead peer is noticed on a long stream)."""
    opts: list[tuple[int, int, int | bool]] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, True)]
    intvl = getattr(socket, "TCP_KEEPINTVL", None)
    if intvl is not None:
        opts.append((socket.IPPROTO_TCP, intvl, 60))
    elif sys.platform == "darwin":
        opts.append((socket.IPPROTO_TCP, getattr(socket, "TCP_KEEPALIVE", 0x10), 60))
    cnt = getattr(socket, "TCP_KEEPCNT", None)
    if cnt is not None:
        opts.append((socket.IPPROTO_TCP, cnt, 5))
    idle = getattr(socket, "TCP_KEEPIDLE", None)
    if idle is not None:
        opts.append((socket.IPPROTO_TCP, idle, 60))
    return opts


def new_client(
    timeout: float | None = None, idle_timeout: float | None = None, *, ssl_context: Any = None
) -> Any:
    """An httpx2.AsyncClient configured as the SDKs configure theirs. Its TLS context
    (`ssl_context`, else `tls.client_ssl_context()`: the SDKs' verification) loads the
    CA store before the first TLS handshake."""
    import httpx2
    from httpx2._utils import get_environment_proxies

    from sema_rpc.providers.tls import client_ssl_context

    limits = httpx2.Limits(
        max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS
    )
    options = _socket_options()
    verify = client_ssl_context() if ssl_context is None else ssl_context
    mounts = {
        key: None
        if url is None
        else httpx2.AsyncHTTPTransport(
            verify=verify, proxy=httpx2.Proxy(url=url), limits=limits, socket_options=options
        )
        for key, url in get_environment_proxies().items()
    }
    return httpx2.AsyncClient(
        timeout=client_timeout(timeout, idle_timeout),
        limits=limits,
        follow_redirects=True,
        transport=httpx2.AsyncHTTPTransport(verify=verify, limits=limits, socket_options=options),
        mounts=mounts,
    )


_prebuilt: list[Any] = []
"""Default clients (our transport's) built ahead by `prewarm()` (in the warm-up thread) for the first use."""
_prewarming = threading.Condition()
_prewarms_due = 0
"""Warm-ups announced (`prewarm_due`) whose `prewarm()` has not returned yet."""
PREWARM_WAIT_S = 10.0
"""The longest the first request waits for a warm-up under way before building its own."""


def prewarm_due() -> None:
    """A warm-up thread that will call `prewarm()` is starting: the first request waits
    for its client rather than building a second one (the same imports twice, competing
    for the same interpreter lock: slower, not faster)."""
    global _prewarms_due
    with _prewarming:
        _prewarms_due += 1


def prewarm(base_url: str | None = None) -> None:
    """Build one default client off the event loop, for the first request, and end an
    announced warm-up (`prewarm_due`) whether or not it could be built. When that request
    goes to https (`base_url`; None is the SDKs' default, https), its TLS context then
    loads the CA store here (OpenSSL does that without the interpreter lock, beside the
    loop's own work), after the client is handed over: the first request does not wait
    for it, its first TLS handshake does if it is still loading. For a plain http
    `base_url` the store is never loaded unless a connection to https (a redirect)
    needs it."""
    global _prewarms_due
    from sema_rpc.providers.tls import LazyTrustContext, client_ssl_context

    context = None
    try:
        if not _prebuilt:
            context = client_ssl_context()
            client = new_transport(ssl_context=context)
            with _prewarming:
                _prebuilt.append(client)
                _prewarming.notify_all()
    finally:
        with _prewarming:
            _prewarms_due = max(0, _prewarms_due - 1)
            _prewarming.notify_all()
    secure = base_url is None or not base_url.lower().startswith("http://")
    if secure and isinstance(context, LazyTrustContext):
        context.load_trust()


def _make() -> Any:
    with _prewarming:
        _prewarming.wait_for(lambda: _prebuilt or not _prewarms_due, PREWARM_WAIT_S)
        if _prebuilt:
            return _prebuilt.pop()
    return new_transport()


class LoopBoundClient:
    """Holds a client (an httpx2 client, or an SDK client around one) per event loop: an
    httpx connection pool must not be shared across loops (each pytest test has its own
    loop; production has one)."""

    __slots__ = ("_client", "_loop")

    def __init__(self) -> None:
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self, factory: Any) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            if self._client is not None:
                _abandon(self._client)
            self._client = factory()
            self._loop = loop
        return self._client

    def http(self) -> Any:
        """The running loop's transport client (the SDKs' defaults; the provider's own
        timeouts go with each request)."""
        return self.get(_make)

    def __del__(self) -> None:
        try:
            if self._client is not None and self._loop is not None and self._loop.is_closed():
                _abandon(self._client)
        except Exception:  # interpreter teardown: module globals may be gone
            pass

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            try:
                close = getattr(client, "aclose", None) or client.close
                await close()
            except Exception:  # closing is best effort
                log.debug("error closing client", exc_info=True)


def _abandon(client: Any) -> None:
    """Forget a client whose event loop is gone. Its connections belong to that loop and
    cannot be closed from another one; marking the httpx client closed stops its (or the
    SDK's) `__del__` from scheduling an `aclose()` on the current loop, which would fail
    with "Event loop is closed"."""
    if isinstance(client, transport.AsyncClient):
        client.abandon()
        return
    http = getattr(client, "_client", client)
    if http is None or getattr(http, "is_closed", True):
        return
    try:
        from httpx2._client import ClientState

        http._state = ClientState.CLOSED
    except Exception:  # pragma: no cover - private API moved; only noise is lost
        pass


# ------------------------------------------------------------------------ send + retry


def _httpx2() -> Any:
    """httpx2 when something has imported it, else None: an error can only be one of its
    exceptions when it is loaded, so the production path never imports it to ask."""
    return sys.modules.get("httpx2")


def _timeout_errors() -> tuple[type[BaseException], ...]:
    httpx2 = _httpx2()
    if httpx2 is None:
        return (transport.TimeoutException,)
    return (transport.TimeoutException, httpx2.TimeoutException)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Either transport's errors for "no (complete) response"."""
    httpx2 = _httpx2()
    if httpx2 is None:
        return (transport.TransportError,)
    return (transport.TransportError, httpx2.TimeoutException, httpx2.TransportError)


def _read_timeouts() -> tuple[type[BaseException], ...]:
    httpx2 = _httpx2()
    if httpx2 is None:
        return (transport.ReadTimeout,)
    return (transport.ReadTimeout, httpx2.ReadTimeout)


class StatusError(Exception):
    """The server answered an error status (after any retries)."""

    def __init__(self, status: int, body: Any, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.message = message


class StreamError(Exception):
    """An object with an `error` inside a 2xx OpenAI stream (the SDK's `APIError`)."""

    def __init__(self, body: Any, message: str) -> None:
        super().__init__(message)
        self.body = body
        self.message = message


class TransportFailure(Exception):
    """No response: the connection failed or timed out (after any retries). The message
    is the SDKs' ("Connection error." / "Request timed out."); `__cause__` the error."""


def transport_failure(exc: BaseException) -> TransportFailure:
    """`exc` (a timeout or transport error, ours or httpx2's) as the OpenAI SDK raises it
    while reading a body: "Request timed out." / "Connection error.", caused by `exc`."""
    timed_out = isinstance(exc, _timeout_errors())
    failure = TransportFailure("Request timed out." if timed_out else "Connection error.")
    failure.__cause__ = exc
    return failure


def should_retry(status: int, headers: Any, max_retry_after: float | None = None) -> bool:
    if max_retry_after is not None:
        after = retry_after(headers)
        if after is not None and math.isfinite(after) and after > max_retry_after:
            return False
    flag = headers.get("x-should-retry")
    if flag == "true":
        return True
    if flag == "false":
        return False
    return status in (408, 409, 429) or status >= 500


def retry_after(headers: Any) -> float | None:
    """Seconds the server asks to wait: `retry-after-ms`, else `retry-after` as seconds
    or as an HTTP date."""
    if headers is None:
        return None
    try:
        return float(headers.get("retry-after-ms")) / 1000
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    try:
        return float(value)
    except (TypeError, ValueError):
        pass
    if not value:
        return None
    import email.utils  # an HTTP date: rare, and email costs ~20 ms to import

    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return float(email.utils.mktime_tz(parsed) - time.time())


def retry_delay(
    max_retries: int, retries_left: int, headers: Any, max_retry_after: float | None = None
) -> float:
    after = retry_after(headers)
    if after is not None and after > 0:
        if max_retry_after is None:
            return min(after, _MAX_SLEEP)
        if math.isfinite(after) and after <= max_retry_after:
            return after
    n = min(max_retries - retries_left, 1000)
    delay = min(INITIAL_RETRY_DELAY * pow(2.0, n), MAX_RETRY_DELAY)
    return max(0.0, delay * (1 - 0.25 * random.random()))


def parse_error_body(status: int, raw: bytes) -> tuple[Any, str]:
    """(body, message) of an error response, as the SDKs build their status errors."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text, text or f"Error code: {status}"
    return body, f"Error code: {status} - {body}"


async def open_stream(
    client: Any,
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    max_retries: int,
    max_retry_after: float | None = None,
    timeout: Any = None,
) -> Any:
    """POST `body` and return the streaming 2xx response (the caller closes it): a
    `transport.Response` from our client, an httpx2.Response from an httpx2 client.
    `timeout` (`light_timeout()` or an httpx2.Timeout) applies to this request whatever
    the client's own is.

    Raises StatusError or TransportFailure once the retries are spent or the answer is
    not retryable. An idle timeout waiting for the response is a timeout: retried.
    """
    ours = isinstance(client, transport.AsyncClient)
    if not ours and timeout is not None:
        timeout = _httpx2_timeout(timeout)
    errors = _transport_errors() if ours else ()
    retries_left = max_retries
    headers = {**headers, "x-stainless-retry-count": "0"}
    while True:
        if ours:
            send = client.stream("POST", url, headers, body, timeout=timeout)
        elif timeout is None:
            request = client.build_request("POST", url, headers=headers, content=body)
            send = client.send(request, stream=True)
        else:
            request = client.build_request(
                "POST", url, headers=headers, content=body, timeout=timeout
            )
            send = client.send(request, stream=True)
        if not ours:
            errors = _transport_errors()  # the httpx2 client has imported httpx2
        try:
            response = await send
        except errors as exc:
            if retries_left > 0:
                await asyncio.sleep(retry_delay(max_retries, retries_left, None))
                retries_left -= 1
                headers["x-stainless-retry-count"] = str(max_retries - retries_left)
                continue
            raise transport_failure(exc) from exc
        if response.status_code < 400:
            return response  # type: ignore[no-any-return]
        try:
            raw = await response.aread()
        except errors:
            raw = b""
        finally:
            await response.aclose()
        status = response.status_code
        if retries_left > 0 and should_retry(status, response.headers, max_retry_after):
            await asyncio.sleep(
                retry_delay(max_retries, retries_left, response.headers, max_retry_after)
            )
            retries_left -= 1
            headers["x-stainless-retry-count"] = str(max_retries - retries_left)
            continue
        parsed, message = parse_error_body(status, raw)
        raise StatusError(status, parsed, message)


# ------------------------------------------------------------------------ errors


def is_idle_timeout(exc: BaseException | None) -> bool:
    """A read that waited longer than the stream idle timeout (the HTTP read timeout),
    raw or wrapped (`TransportFailure` / the SDKs' `APITimeoutError ... from ReadTimeout`)."""
    read_timeouts = _read_timeouts()
    return isinstance(exc, read_timeouts) or isinstance(
        getattr(exc, "__cause__", None), read_timeouts
    )


def classify_transport(exc: BaseException, *, started: bool) -> ProviderError | None:
    """A transport failure (ours, the SDKs' connection errors, or a raw error of either
    transport) → ProviderError; None when `exc` is not one. `started`: the response had
    arrived."""
    from sema_rpc.core.stream import ProviderError

    cause = exc.__cause__ if isinstance(exc, TransportFailure) else exc
    sdk_wrapped = type(exc).__name__ in ("APIConnectionError", "APITimeoutError")
    if not (isinstance(exc, TransportFailure) or sdk_wrapped) and not isinstance(
        exc, _transport_errors()
    ):
        return None
    if is_idle_timeout(exc):
        return ProviderError("idle_timeout", f"timed out waiting for the server: {exc}")
    if isinstance(exc, TransportFailure) or sdk_wrapped:
        if started:
            return ProviderError("stream_cut", f"connection lost mid-stream: {exc}")
        return ProviderError("connection", str(exc) or "connection error")
    text = f"{type(cause).__name__}: {cause}"
    if isinstance(exc, _timeout_errors()):
        return ProviderError("connection", f"timed out: {text}")
    if started:
        return ProviderError("stream_cut", f"connection lost mid-stream: {text}")
    return ProviderError("connection", text)


def classify_other(exc: BaseException, *, started: bool) -> ProviderError:
    """Any other failure of a provider's stream → ProviderError: transport failures
    (either transport's), malformed events, bad setup. Shared by every HTTP provider."""
    from sema_rpc.core.stream import ProviderError

    failure = classify_transport(exc, started=started)
    if failure is not None:
        return failure
    text = f"{type(exc).__name__}: {exc}"
    low = str(exc).lower()
    if "authentication" in low or "credentials" in low or "api_key" in low:
        return ProviderError("authentication", str(exc))
    log.warning("unexpected provider error", exc_info=exc)
    if started:
        return ProviderError("stream_error", f"malformed stream: {text}")
    return ProviderError("invalid_request", text)
