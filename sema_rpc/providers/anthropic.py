"""Anthropic Messages API provider.

Production path (`transport="http"`): builds the `POST /v1/messages` request as the SDK
does, sends it over `http.open_stream()` (the SDK's retry policy) and reads the SSE as
the SDK's raw stream events would be read (`ping` and data-only events skipped, `event:
error` a status error, events as attribute-access dicts). `transport="sdk"`: the RAW
events of the SDK's `messages.create(stream=True)` (the `.stream()` helper rebuilds a
snapshot on every chunk). One event loop reads both, accumulating deltas in lists joined
once at the end; errors of both are classified by `classify_error` (status + body, or
the transport failure). The `anthropic` SDK is imported only on the `sdk` transport.

Decisions:
- A stream that delivered `message_delta.stop_reason` is complete even if the final
  `message_stop` never arrives (the SDK's own max_tokens fixture ends that way); a stream
  that ends without a stop reason is `stream_cut`.
- Tool arguments that are not valid JSON (cut by max_tokens) get a best-effort partial
  parse (unfinished strings dropped, like the SDK helper) and their raw text goes to
  `ResponseDone.raw_tool_inputs`.
- Thinking blocks go back to the API only with their signature (unsigned thinking from
  another provider is dropped); whitespace-only text blocks are not sent back.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from sema_rpc.core.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from sema_rpc.core.stream import (
    ErrorKind,
    ModelRequest,
    ProviderError,
    ResponseDone,
    ResponseFailed,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from sema_rpc.providers._common import (
    SdkProvider,
    kind_for_status,
    parse_tool_input,
)
from sema_rpc.providers.http import (
    ANTHROPIC_API_VERSION,
    ANTHROPIC_BASE_URL,
    StatusError,
    classify_other,
)
from sema_rpc.providers.sse import SseReader, loads

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Iterator

log = logging.getLogger("sema_rpc.providers.anthropic")

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
    "model_context_window_exceeded": "max_tokens",
}
MIN_THINKING_BUDGET = 1024


class _Block:
    __slots__ = ("data", "id", "name", "parts", "signature", "type")

    def __init__(self, type_: str) -> None:
        self.type = type_
        self.parts: list[str] = []
        self.signature: str | None = None
        self.id = ""
        self.name = ""
        self.data = ""


class _Accumulator:
    """The response as it streams: blocks by index, usage, stop reason."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.stop_reason: str | None = None
        self.usage = {"input": 0, "output": 0, "cache_write": 0, "cache_read": 0}

    def block(self, index: int, type_: str) -> _Block:
        b = self.blocks.get(index)
        if b is None:
            b = self.blocks[index] = _Block(type_)
        return b

    def set_usage(self, u: Any) -> None:
        if not u:
            return
        for key, name in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_write", "cache_creation_input_tokens"),
            ("cache_read", "cache_read_input_tokens"),
        ):
            v = u.get(name)
            if v is not None:
                self.usage[key] = v

    def build(self) -> tuple[Message, dict[str, str]]:
        content: list[Any] = []
        raw_inputs: dict[str, str] = {}
        for _, b in sorted(self.blocks.items()):
            if b.type == "text":
                text = "".join(b.parts)
                if text:
                    content.append(TextBlock(text=text))
            elif b.type == "thinking":
                content.append(ThinkingBlock(thinking="".join(b.parts), signature=b.signature))
            elif b.type == "redacted_thinking":
                content.append(RedactedThinkingBlock(data=b.data))
            elif b.type == "tool_use":
                raw = "".join(b.parts)
                args, complete = parse_tool_input(raw)
                if not complete:
                    raw_inputs[b.id] = raw
                content.append(ToolUseBlock(id=b.id, name=b.name, input=args))
        return Message(role="assistant", content=content), raw_inputs

    def build_usage(self) -> Usage:
        u = self.usage
        return Usage(
            input_tokens=u["input"],
            output_tokens=u["output"],
            cache_creation_input_tokens=u["cache_write"],
            cache_read_input_tokens=u["cache_read"],
        )

    def partial(self) -> Message | None:
        if not self.blocks:
            return None
        try:
            return self.build()[0]
        except Exception:  # pragma: no cover - display only
            return None


def to_api_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Internal messages → Anthropic `messages` params."""
    out: list[dict[str, Any]] = []
    for m in messages:
        blocks: list[dict[str, Any]] = []
        for b in m.content:
            if isinstance(b, TextBlock):
                if b.text.strip():
                    blocks.append({"type": "text", "text": b.text})
            elif isinstance(b, ImageBlock):
                source = {"type": "base64", "media_type": b.source.media_type}
                blocks.append({"type": "image", "source": {**source, "data": b.source.data}})
            elif isinstance(b, ToolResultBlock):
                res: dict[str, Any] = {"type": "tool_result", "tool_use_id": b.tool_use_id}
                if b.content:
                    res["content"] = b.content
                if b.is_error:
                    res["is_error"] = True
                blocks.append(res)
            elif isinstance(b, ToolUseBlock):
                blocks.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
            elif isinstance(b, ThinkingBlock):
                if b.signature:
                    blocks.append(
                        {"type": "thinking", "thinking": b.thinking, "signature": b.signature}
                    )
            elif isinstance(b, RedactedThinkingBlock):
                blocks.append({"type": "redacted_thinking", "data": b.data})
        if blocks:
            out.append({"role": m.role, "content": blocks})
    return out


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The `messages.create` keyword arguments (without `stream`)."""
    max_tokens = request.max_tokens
    params: dict[str, Any] = {
        "model": request.model,
        "messages": to_api_messages(request.messages),
    }
    if request.system:
        params["system"] = request.system
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
    if request.thinking_budget:
        budget = max(MIN_THINKING_BUDGET, request.thinking_budget)
        # budget_tokens must be below max_tokens; keep room for the answer.
        max_tokens = max(max_tokens, budget + MIN_THINKING_BUDGET)
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif request.temperature is not None:
        params["temperature"] = request.temperature
    params["max_tokens"] = max_tokens
    return params


def _error_fields(body: object) -> tuple[str | None, str | None]:
    """(type, message) from an Anthropic error body `{"type":"error","error":{...}}`."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            etype, msg = err.get("type"), err.get("message")
            return (etype if isinstance(etype, str) else None), (
                msg if isinstance(msg, str) else None
            )
    if isinstance(body, str) and body:
        return None, body
    return None, None


def classify_status(status: int, body: Any, message: str, *, started: bool) -> ProviderError:
    """An error answer → ProviderError, the same for both transports: `body` the parsed
    error body, `message` the fallback text (`Error code: N - <body>`). `started`: the
    answer came inside a 200 stream (`event: error`)."""
    etype, emsg = _error_fields(body)
    msg = emsg or message
    if status == 200 or started:  # `event: error` inside a 200 stream
        kind: ErrorKind = "overloaded" if etype == "overloaded_error" else "stream_error"
        return ProviderError(kind, msg, status=status, code=etype)
    kind = kind_for_status(status, etype, msg)
    return ProviderError(kind, msg, status=status, code=etype)


def classify_error(exc: BaseException, *, started: bool) -> ProviderError:
    """An exception from either transport → a normalised ProviderError. The SDK is only
    consulted when the exception came from it (its module is then already imported).

    `started`: the HTTP response had arrived and its stream was being read.
    """
    if isinstance(exc, StatusError):
        return classify_status(exc.status, exc.body, exc.message, started=started)
    sdk = sys.modules.get("anthropic")
    if sdk is not None and isinstance(exc, sdk.APIStatusError):
        return classify_status(exc.status_code, exc.body, str(exc), started=started)
    if (
        sdk is not None
        and isinstance(exc, sdk.APIError)
        and not isinstance(exc, sdk.APIConnectionError)
    ):
        etype, emsg = _error_fields(exc.body)
        return ProviderError("stream_error", emsg or str(exc), code=etype)
    return classify_other(exc, started=started)


_TEXT_DELTA = re.compile(
    rb'\{"type": ?"content_block_delta", ?"index": ?(0|[1-9][0-9]{0,8}), ?'
    rb'"delta": ?\{"type": ?"text_delta", ?"text": ?"([^"\\\x00-\x1f]*)"\}\}'
)
"""A text delta's data as the API writes it (compact, or with json.dumps's spaces) whose
text has no escape: its object is built from the match, without the JSON decoder — the
same object (the text's bytes are the string's UTF-8), at a fraction of the cost. Any
other shape goes through the decoder."""


class _HttpEvents:
    """The light path's stream: a 2xx response's SSE events as the JSON objects (dicts)
    they carry. As the SDK does: `ping` and data-only events are skipped, an `event:
    error` raises a status error (status 200, its body parsed), a payload that is not
    JSON raises ValueError.

    `batches` yields the events of each network read together (lazily: each event is
    read as it is reached, so one that fails does so after the events before it were
    handled): a long answer's events pass the provider's loop without an async
    generator step each."""

    __slots__ = ("_response",)

    def __init__(self, response: Any) -> None:
        self._response = response

    async def batches(self) -> AsyncIterator[Iterator[dict[str, Any]]]:
        reader = SseReader()
        async for data in self._response.aiter_bytes():
            events = reader.feed(data)
            if events:
                yield self._read(events)

    @staticmethod
    def _read(events: list[tuple[bytes | None, bytes]]) -> Iterator[dict[str, Any]]:
        match = _TEXT_DELTA.fullmatch
        for event, payload in events:
            if event is None or event == b"ping":
                continue
            if event == b"error":
                try:
                    body: Any = json.loads(payload)
                    text = f"{body}"
                except ValueError:
                    body = text = payload.decode("utf-8", "replace")
                raise StatusError(200, body, text or "Error code: 200")
            if (m := match(payload)) is not None:
                yield {
                    "type": "content_block_delta",
                    "index": int(m[1]),
                    "delta": {"type": "text_delta", "text": m[2].decode("utf-8")},
                }
            else:
                yield loads(payload)

    async def close(self) -> None:
        await self._response.aclose()


class _SdkEvents:
    """The SDK transport's raw stream events as the JSON objects they were read from
    (the SDK's `to_dict()`: API names, only the fields the server sent), so one event
    loop reads both transports. Plain dicts, not attribute access: on the light path a
    text delta is read with a few dict lookups instead of a failed attribute lookup each.
    One event a batch (`_HttpEvents.batches`)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def batches(self) -> AsyncIterator[Iterator[dict[str, Any]]]:
        async for ev in self._stream:
            yield iter((ev.to_dict(warnings=False),))

    async def close(self) -> None:
        await self._stream.close()


class AnthropicProvider(SdkProvider):
    """A configured connection to the Anthropic Messages API (or a compatible server)."""

    name = "anthropic"
    sdk = "anthropic"

    def _sdk_client(self, **kwargs: Any) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(**kwargs)

    def request_parts(self, request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
        """(url, headers, body) of the light path's request, as the SDK builds it: the
        key (or, without one, ANTHROPIC_AUTH_TOKEN) as a bearer token, the SDK's API
        version, base URL from the profile, else ANTHROPIC_BASE_URL, else the API's."""
        base = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
        token = self._api_key or os.environ.get("ANTHROPIC_API_KEY")
        token = token or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if token is None and self.base_url:
            token = "sema-no-key"  # local and proxy servers often need none
        if token is None:
            raise ValueError(
                "Could not resolve authentication method. Expected either api_key or "
                "auth_token to be set (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN)."
            )
        headers = {
            "accept": "application/json",
            "content-type": "application/json",
            "anthropic-version": ANTHROPIC_API_VERSION,
            "authorization": f"Bearer {token}",
        }
        params = build_params(request)
        params["stream"] = True
        body = json.dumps(params, separators=(",", ":")).encode()
        return base.rstrip("/") + "/v1/messages", headers, body

    async def _open_http(self, request: ModelRequest) -> _HttpEvents:
        url, headers, body = self.request_parts(request)
        return _HttpEvents(await self._send(url, headers, body))

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        acc = _Accumulator()
        failure: ProviderError | None = None
        started = False
        sdk_stream: Any = None
        try:
            if self.transport == "sdk":
                client = await self._sdk_ready_client()
                sdk_stream = _SdkEvents(
                    await client.messages.create(**build_params(request), stream=True)
                )
            else:
                sdk_stream = await self._open_http(request)
            started = True
            blocks = acc.blocks
            # Events are dicts: a missing field reads None (`.get`), a missing object
            # (`delta`, `content_block`, `message`) fails the stream as malformed.
            async for batch in sdk_stream.batches():
                for ev in batch:
                    t = ev.get("type")
                    if t == "content_block_delta":
                        d = ev["delta"]
                        dt = d.get("type")
                        index = ev.get("index")
                        b = blocks.get(index)
                        if dt == "text_delta":
                            if b is None:
                                b = acc.block(index, "text")
                            text = d.get("text")
                            if text:
                                b.parts.append(text)
                                yield TextDelta(text)
                        elif dt == "input_json_delta":
                            if b is not None:
                                b.parts.append(d.get("partial_json"))
                        elif dt == "thinking_delta":
                            if b is None:
                                b = acc.block(index, "thinking")
                            text = d.get("thinking")
                            if text:
                                b.parts.append(text)
                                yield ThinkingDelta(text)
                        elif dt == "signature_delta":
                            if b is not None:
                                b.signature = d.get("signature")
                    elif t == "content_block_start":
                        cb = ev["content_block"]
                        ct = cb.get("type")
                        b = acc.block(ev.get("index"), ct)
                        if ct == "text":
                            if text := cb.get("text"):
                                b.parts.append(text)
                                yield TextDelta(text)
                        elif ct == "thinking":
                            if text := cb.get("thinking"):
                                b.parts.append(text)
                                yield ThinkingDelta(text)
                            b.signature = cb.get("signature") or None
                        elif ct == "redacted_thinking":
                            b.data = cb.get("data")
                        elif ct == "tool_use":
                            b.id, b.name = cb.get("id"), cb.get("name")
                            if cb.get("input"):  # arguments given whole, not streamed
                                b.parts.append(json.dumps(cb["input"]))
                    elif t == "message_start":
                        acc.set_usage(ev["message"].get("usage"))
                    elif t == "message_delta":
                        stop = ev["delta"].get("stop_reason")
                        if stop:
                            acc.stop_reason = stop
                        acc.set_usage(ev.get("usage"))
                    # content_block_stop / message_stop need no action
        except Exception as e:
            failure = classify_error(e, started=started)
            partial = acc.partial()
            streamed = partial is not None and bool(partial.content)
            failure = self._explain(failure, started=started, streamed=streamed)
        finally:
            if sdk_stream is not None:
                try:
                    await sdk_stream.close()
                except Exception:  # pragma: no cover - best effort
                    log.debug("error closing stream", exc_info=True)

        if failure is None and acc.stop_reason is None:
            failure = ProviderError(
                "stream_cut", "the response stream ended before the model finished (no stop_reason)"
            )
        if failure is not None:
            yield ResponseFailed(failure)
            return
        message, raw_inputs = acc.build()
        stop = _STOP_REASONS.get(acc.stop_reason or "", "end_turn")
        yield ResponseDone(
            message=message, stop_reason=stop, usage=acc.build_usage(), raw_tool_inputs=raw_inputs
        )
