"""Helpers shared by the providers (no SDK imports at module level)."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from typing import TYPE_CHECKING, Any

from sema_rpc.providers.http import LoopBoundClient, is_idle_timeout

__all__ = ["LoopBoundClient", "SdkProvider", "is_idle_timeout"]

if TYPE_CHECKING:
    from sema_rpc.core.stream import ErrorKind
    from sema_rpc.core.stream import ProviderError as ProviderErrorT

log = logging.getLogger("sema_rpc.providers")

# Phrases providers use when the prompt does not fit the context window.
_CONTEXT_PHRASES = (
    "prompt is too long",
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "input is too long",
    "exceeds the context",
    "reduce the length",
)


IDLE_TIMEOUT_HINT = "SEMA_STREAM_IDLE_TIMEOUT or the profile's streamIdleTimeout sets the limit"


def looks_like_context_overflow(message: str) -> bool:
    m = message.lower()
    return any(p in m for p in _CONTEXT_PHRASES)


def kind_for_status(status: int, code: str | None, message: str) -> ErrorKind:
    """What an error status means, the same for every provider: `code` is the error
    body's type or code, `message` its text."""
    if status == 429:
        return "rate_limit"
    if status == 529 or code == "overloaded_error":
        return "overloaded"
    if status in (401, 403):
        return "authentication"
    if status == 404:
        return "not_found"
    if status >= 500:
        return "server_error"
    if code == "context_length_exceeded" or looks_like_context_overflow(message):
        return "context_length_exceeded"
    return "invalid_request"


def parse_tool_input(raw: str) -> tuple[dict[str, Any], bool]:
    """Parse streamed tool arguments: (input, complete).

    Empty text is `{}` (a no-argument call). Invalid JSON (cut by max_tokens) gets a
    best-effort partial parse with unfinished strings dropped, as the SDK helpers do,
    or `{}`; `complete` is then False and the caller keeps the raw text.
    """
    if not raw.strip():
        return {}, True
    try:
        value = json.loads(raw)
    except ValueError:
        pass
    else:
        if isinstance(value, dict):
            return value, True
        return {}, False
    try:
        from jiter import from_json  # a dependency of both SDKs

        value = from_json(raw.encode(), partial_mode=True)
    except Exception:
        return {}, False
    return (value if isinstance(value, dict) else {}), False


_sdks_imported: set[str] = set()


class SdkProvider:
    """What every HTTP provider shares: its connection settings, one client per event
    loop, and the choice of transport.

    `transport="http"` (the default, production): the provider builds its request and
    reads the SSE itself over `http.open_stream()` (the SDKs' retry policy, no SDK import).
    `transport="sdk"`: the official SDK sends and parses (kept for what the light path does
    not do, and as the oracle the tests compare the light path with). Subclasses set `name`
    and `sdk`, and implement `_sdk_client(**kwargs)` (importing the SDK there, lazily) and
    `stream()`, which gets its SDK client with `await self._sdk_ready_client()` or its
    httpx2 client with `self._http()`."""

    name = "sdk"
    sdk = ""
    """The SDK's module, imported off the event loop before the first client is made."""

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        max_retries: int = 2,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        http_client: Any = None,
        transport: str = "http",
    ) -> None:
        if transport not in ("http", "sdk"):
            raise ValueError(f"unknown transport {transport!r} (expected 'http' or 'sdk')")
        self.transport = transport
        self._api_key = api_key
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        """Seconds the server may send nothing — before the response starts or between
        two pieces of its stream — before the read fails (the HTTP read timeout)."""
        self._http_client = http_client
        self._client = LoopBoundClient()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def _http(self) -> Any:
        """The client of the light path: the httpx2 client given (recording, replay),
        else this loop's own (our transport), built with the SDKs' defaults."""
        if self._http_client is not None:
            return self._http_client
        return self._client.http()

    async def _send(
        self, url: str, headers: dict[str, str], body: bytes, max_retry_after: float | None = None
    ) -> Any:
        """The light path's request: the streaming 2xx response, after the SDKs' retries.
        The timeouts (the stream idle timeout as the read timeout) go with the request, so
        they hold on a client given from outside (recording, replay) too."""
        from sema_rpc.providers.http import light_timeout, open_stream

        return await open_stream(
            self._http(),
            url,
            headers,
            body,
            max_retries=self.max_retries,
            max_retry_after=max_retry_after,
            timeout=light_timeout(self.timeout, self.idle_timeout),
        )

    def _sdk_client(self, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def _sdk_ready_client(self) -> Any:
        """The SDK client for the running loop. The first time, the SDK is imported in a
        worker thread: an import on the loop thread would block the loop for ~1 s, or,
        while the warm-up thread (registry.warm_up) is importing it, wait on its import
        lock until that finishes."""
        if self.sdk and self.sdk not in _sdks_imported:
            await asyncio.to_thread(importlib.import_module, self.sdk)
            _sdks_imported.add(self.sdk)
        return self._client.get(self._make_client)

    def _make_client(self) -> Any:
        api_key = self._api_key
        if api_key is None and self.base_url:
            api_key = "sema-no-key"  # local and proxy servers often need none
        kwargs: dict[str, Any] = {
            "api_key": api_key,
            "base_url": self.base_url,
            "max_retries": self.max_retries,
        }
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        if self.idle_timeout is not None:
            from sema_rpc.providers.http import client_timeout

            kwargs["timeout"] = client_timeout(self.timeout, self.idle_timeout)
        if self._http_client is not None:
            kwargs["http_client"] = self._http_client
        return self._sdk_client(**kwargs)

    def _explain(self, failure: ProviderErrorT, *, started: bool, streamed: bool) -> ProviderErrorT:
        """An `idle_timeout` failure with the message a user needs: what stalled, for how
        long, whether it was retried, and what sets the limit."""
        if failure.kind != "idle_timeout":
            return failure
        from sema_rpc.core.stream import ProviderError

        if self.idle_timeout is not None:
            secs = f"{self.idle_timeout:g} s"
        else:  # the limit is off: the SDK's own read timeout fired
            secs = f"{self.timeout or 600:g} s (the SDK's read timeout)"
        if not started:
            tries = self.max_retries + 1
            what = f"the model did not start answering: nothing arrived for {secs}"
            what += f" (tried {tries} times)" if tries > 1 else ""
        elif streamed:
            what = (
                f"the model stream stalled: nothing arrived for {secs} after part of the answer "
                "had streamed; that part was not kept and nothing was retried (it would "
                "repeat); prompt again to retry"
            )
        else:
            what = f"the model stream stalled: nothing arrived for {secs}"
        return ProviderError(
            "idle_timeout",
            f"Idle timeout: {what}. {IDLE_TIMEOUT_HINT}.",
            status=failure.status,
            code="idle_timeout",
        )

    async def aclose(self) -> None:
        await self._client.aclose()
