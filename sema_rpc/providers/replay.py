"""Replay provider: plays a recorded cassette through the real provider parsing code.

Cassette format (JSONL, UTF-8; one model exchange per line, in call order)::

    {"provider": "anthropic" | "openai-chat" | "openai-responses",
     "request": {...},          # the request body as sent (informational; not matched)
     "status": 200,             # HTTP status of the response
     "headers": {...},          # response headers (content-type defaults to text/event-stream)
     "body": "<raw response text>"}   # the SSE stream verbatim (or the JSON error body)

Blank lines and lines starting with `#` are ignored. `recording.py` writes this format
(plus informational keys such as `path`, `incomplete`, `error`, ignored here).

A bare `.sse` file is a cassette too: ONE exchange whose body is the file's bytes
(the layout of recorded real provider streams kept as test data: `<name>.sse`,
plus `<name>.request.json` next to it, kept as the exchange's `request`). Its provider
is told from the stream: `event: message_start` → anthropic, `response.created` →
openai-responses, `chat.completion.chunk` data lines → openai-chat. So a JSONL line's
`body` written to a file is a `.sse` cassette, and a `.sse` file is the `body` of a line.

On the n-th `stream()` call the n-th exchange's body is served to the matching provider
class (AnthropicProvider / OpenAIChatProvider / OpenAIResponsesProvider) through an in-process httpx2 transport, so
the bytes go through the production request path (`http.open_stream()`, the providers'
SSE and error handling) exactly as over the network (in small pieces, like a real
socket); the tests compare that path with the official SDKs' on every shared cassette,
which covers what replay plays. Retries are off: a recorded 429 is served
once and becomes ResponseFailed(rate_limit). When the exchanges run out, the stream ends
in ResponseFailed(invalid_request, "cassette exhausted: …").
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

from sema_rpc.core.stream import (
    ModelRequest,
    ProviderError,
    ResponseFailed,
    StreamEvent,
)

__all__ = ["Exchange", "ReplayProvider", "load_cassette", "load_sse", "sse_provider"]

PIECE_SIZE = 61
_PROVIDERS = {
    "anthropic": "anthropic",
    "openai-chat": "openai-chat",
    "openai": "openai-chat",
    "openai-responses": "openai-responses",
}


class Exchange:
    __slots__ = ("body", "headers", "provider", "request", "status")

    def __init__(
        self,
        provider: str,
        body: str,
        status: int = 200,
        headers: dict[str, str] | None = None,
        request: dict[str, Any] | None = None,
    ) -> None:
        self.provider = provider
        self.body = body
        self.status = status
        self.headers = headers or {}
        self.request = request or {}


class CassetteError(ValueError):
    pass


_ANTHROPIC_START = re.compile(r"^event:[ \t]*message_start[ \t]*\r?$", re.MULTILINE)


def sse_provider(body: str) -> str | None:
    """Which provider streamed this SSE body: anthropic, openai-responses, openai-chat, or
    None when it is none of them."""
    if _ANTHROPIC_START.search(body):
        return "anthropic"
    if "response.created" in body:
        return "openai-responses"
    if "chat.completion.chunk" in body:
        return "openai-chat"
    return None


def load_sse(path: str | Path) -> Exchange:
    """A `.sse` response body (and its `.request.json`, when there is one) as one exchange."""
    path = Path(path)
    try:
        body = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise CassetteError(f"cannot read cassette {path}: {e}") from None
    except UnicodeDecodeError as e:
        raise CassetteError(f"{path}: not UTF-8: {e}") from None
    provider = sse_provider(body)
    if provider is None:
        raise CassetteError(
            f"{path}: cannot tell which provider streamed it (no `event: message_start`,"
            " `response.created` or `chat.completion.chunk`)"
        )
    request: dict[str, Any] | None = None
    request_file = path.with_name(path.name[: -len(".sse")] + ".request.json")
    if request_file.is_file():
        try:
            loaded = json.loads(request_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # informational only
            loaded = None
        request = loaded if isinstance(loaded, dict) else None
    return Exchange(
        provider=provider,
        body=body,
        headers={"content-type": "text/event-stream"},
        request=request,
    )


def load_cassette(path: str | Path) -> list[Exchange]:
    """The exchanges of a JSONL cassette, or the one exchange of a `.sse` file."""
    path = Path(path)
    if path.suffix == ".sse":
        return [load_sse(path)]
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as e:
        raise CassetteError(f"cannot read cassette {path}: {e}") from None
    out: list[Exchange] = []
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise CassetteError(f"{path}:{n}: invalid JSON: {e}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("body"), str):
            raise CassetteError(f'{path}:{n}: an exchange needs a string "body"')
        provider = _PROVIDERS.get(str(obj.get("provider", "")))
        if provider is None:
            raise CassetteError(
                f"{path}:{n}: unknown provider {obj.get('provider')!r}"
                " (expected anthropic, openai-chat or openai-responses)"
            )
        out.append(
            Exchange(
                provider=provider,
                body=obj["body"],
                status=int(obj.get("status", 200)),
                headers={str(k): str(v) for k, v in (obj.get("headers") or {}).items()},
                request=obj.get("request") if isinstance(obj.get("request"), dict) else None,
            )
        )
    return out


def cassette_providers(path: str | Path) -> set[str]:
    """Which provider formats a cassette uses (for warming the right provider modules)."""
    try:
        return {e.provider for e in load_cassette(path)}
    except CassetteError:
        return set()


def _transport(exchange: Exchange, sent: list[Any]) -> Any:
    import httpx2

    class _Body(httpx2.AsyncByteStream):
        def __init__(self, data: bytes) -> None:
            self._data = data

        async def __aiter__(self) -> AsyncIterator[bytes]:
            data = self._data
            for i in range(0, len(data), PIECE_SIZE):
                yield data[i : i + PIECE_SIZE]

    class _ReplayTransport(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            body = await request.aread()
            try:
                sent.append(json.loads(body) if body else None)
            except ValueError:
                sent.append(body.decode("utf-8", "replace"))
            headers = {k.lower(): v for k, v in exchange.headers.items()}
            for drop in ("content-length", "content-encoding", "transfer-encoding"):
                headers.pop(drop, None)
            if "content-type" not in headers:
                headers["content-type"] = (
                    "text/event-stream" if exchange.status == 200 else "application/json"
                )
            return httpx2.Response(
                exchange.status,
                headers=headers,
                stream=_Body(exchange.body.encode("utf-8")),
                request=request,
            )

    return _ReplayTransport()


class ReplayProvider:
    """Serves a cassette's exchanges in order, one per `stream()` call."""

    name = "replay"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._exchanges: list[Exchange] | None = None
        self.position = 0
        self.requests: list[Any] = []
        """The request bodies the providers built, one per played exchange (for tests)."""

    def __repr__(self) -> str:
        return f"ReplayProvider({str(self.path)!r}, position={self.position})"

    @property
    def exchanges(self) -> list[Exchange]:
        if self._exchanges is None:
            self._exchanges = load_cassette(self.path)
        return self._exchanges

    def reset(self) -> None:
        """Rewind to the first exchange."""
        self.position = 0
        self.requests.clear()

    async def aclose(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        try:
            exchanges = self.exchanges
        except CassetteError as e:
            yield ResponseFailed(ProviderError("invalid_request", str(e)))
            return
        if self.position >= len(exchanges):
            yield ResponseFailed(
                ProviderError(
                    "invalid_request",
                    f"cassette exhausted: all {len(exchanges)} exchanges of {self.path} were"
                    " played",
                )
            )
            return
        exchange = exchanges[self.position]
        self.position += 1

        import httpx2

        http_client = httpx2.AsyncClient(transport=_transport(exchange, self.requests))
        inner: Any
        if exchange.provider == "anthropic":
            from sema_rpc.providers.anthropic import AnthropicProvider

            inner = AnthropicProvider(
                "replay", "http://replay.invalid", max_retries=0, http_client=http_client
            )
        elif exchange.provider == "openai-responses":
            from sema_rpc.providers.openai_responses import OpenAIResponsesProvider

            inner = OpenAIResponsesProvider(
                "replay", "http://replay.invalid/v1", max_retries=0, http_client=http_client
            )
        else:
            from sema_rpc.providers.openai_chat import OpenAIChatProvider

            inner = OpenAIChatProvider(
                "replay", "http://replay.invalid/v1", max_retries=0, http_client=http_client
            )
        try:
            async for event in inner.stream(request):
                yield event
        finally:
            await inner.aclose()
            await http_client.aclose()
