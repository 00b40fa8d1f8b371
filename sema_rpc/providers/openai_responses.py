"""OpenAI Responses API provider (`POST /v1/responses`).

Sends the request over `http.open_stream()` (the SDK's retry policy) and reads its SSE
events as the SDK's raw `responses.create(stream=True)` events would be read
(`transport: "sdk"`: the SDK sends and parses them); accumulates deltas in lists, per
output item:

- `response.output_text.delta` (and `refusal.delta`) → TextDelta;
- `response.reasoning_summary_text.delta` / `reasoning_text.delta` → ThinkingDelta; the
  reasoning item's id and `encrypted_content` are kept on the ThinkingBlock (the latest
  one: `output_item.added`, `.done` and `response.completed` each carry a different
  string; the final response's is what the SDK helper returns);
- `response.output_item.added` of a `function_call` opens a call (call_id, name); the
  arguments stream as `function_call_arguments.delta`, `.done` carries the whole string;
- `response.completed` / `response.incomplete` end the response (usage, status,
  incomplete_details); `response.failed` and `error` events → ResponseFailed.

The `openai` SDK is imported only on the `sdk` transport, never at module import.

Decisions:
- A reasoning item's summary parts are joined with a blank line; the ThinkingDelta that
  starts a new part carries that separator, so the deltas add up to the block's text.
- Requests are stateless (`store=False`): history is sent back whole. A reasoning item is
  sent back only with its `encrypted_content` (and without ids, like Codex: with
  `store=False` an id refers to nothing and an echoed item id can be rejected); it is
  dropped when nothing follows it in the same assistant turn (the API rejects a reasoning
  item "without its required following item"). Reasoning-capable models (o-series, gpt-5)
  get `include=["reasoning.encrypted_content"]`, `reasoning.summary="auto"` when thinking
  is on, and no temperature.
- Function tools are sent with `strict: false`: the Responses API makes them strict by
  default, which rejects ordinary JSON schemas (optional properties, no
  `additionalProperties: false`).
- Stop: `completed` → tool_use when function calls were made, refusal when only a refusal
  came, else end_turn; `incomplete` + `max_output_tokens` → max_tokens, + `content_filter`
  → refusal. A stream without `response.completed`/`response.incomplete` → stream_cut.
- `response.failed` / `error` codes: rate_limit_exceeded → rate_limit,
  context_length_exceeded (or an overflow message) → context_length_exceeded,
  server_is_overloaded → overloaded, anything else → stream_error (code kept).
- Usage: `input_tokens` includes cached tokens: input = total − cached, cache_read = cached.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from sema_rpc.core.messages import (
    ImageBlock,
    Message,
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
    looks_like_context_overflow,
    parse_tool_input,
)
from sema_rpc.providers._openai import (
    data_url,
    openai_request_parts,
    uses_max_completion_tokens,
)
from sema_rpc.providers.http import (
    OPENAI_MAX_RETRY_AFTER,
    StreamError,
    transport_failure,
)
from sema_rpc.providers.sse import SseReader, loads_obj

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

log = logging.getLogger("sema_rpc.providers.openai_responses")

SUMMARY_SEPARATOR = "\n\n"

_FAILED_CODES: dict[str, ErrorKind] = {
    "rate_limit_exceeded": "rate_limit",
    "context_length_exceeded": "context_length_exceeded",
    "server_is_overloaded": "overloaded",
    "overloaded": "overloaded",
}


def is_reasoning_model(model: str) -> bool:
    """o-series and gpt-5 models: reasoning items, no temperature."""
    return uses_max_completion_tokens(model) or "codex" in model.lower()


# ---- request ---------------------------------------------------------------------------


def _user_message(parts: list[str | ImageBlock]) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": p}
            if isinstance(p, str)
            else {"type": "input_image", "image_url": data_url(p), "detail": "auto"}
            for p in parts
        ],
    }


def _assistant_items(m: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush_text() -> None:
        if texts:
            text = "".join(texts)
            texts.clear()
            if text.strip():
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }
                )

    for b in m.content:
        if isinstance(b, TextBlock):
            texts.append(b.text)
            continue
        flush_text()
        if isinstance(b, ThinkingBlock):
            if b.encrypted_content:  # anything else cannot be sent back with store=False
                items.append(
                    {
                        "type": "reasoning",
                        "summary": (
                            [{"type": "summary_text", "text": b.thinking}] if b.thinking else []
                        ),
                        "encrypted_content": b.encrypted_content,
                    }
                )
        elif isinstance(b, ToolUseBlock):
            items.append(
                {
                    "type": "function_call",
                    "call_id": b.id,
                    "name": b.name,
                    "arguments": json.dumps(b.input),
                }
            )
        # redacted thinking (Anthropic) is not sent to OpenAI
    flush_text()
    # A reasoning item must be followed by the item it led to.
    while items and items[-1]["type"] == "reasoning":
        items.pop()
    return items


def to_input_items(messages: list[Message]) -> list[dict[str, Any]]:
    """Internal messages → Responses `input` items."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            out.extend(_assistant_items(m))
            continue
        parts: list[str | ImageBlock] = []
        for b in m.content:
            if isinstance(b, ToolResultBlock):
                content = b.content
                if b.is_error and not content.lower().startswith("error"):
                    content = f"Error: {content}"
                out.append(
                    {"type": "function_call_output", "call_id": b.tool_use_id, "output": content}
                )
            elif isinstance(b, TextBlock | ImageBlock):
                parts.append(b.text if isinstance(b, TextBlock) else b)
        if parts:
            out.append(_user_message(parts))
    return out


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The `responses.create` keyword arguments (without `stream`)."""
    params: dict[str, Any] = {
        "model": request.model,
        "input": to_input_items(request.messages),
        "max_output_tokens": request.max_tokens,
        "store": False,
    }
    if request.system:
        params["instructions"] = request.system
    if is_reasoning_model(request.model):
        params["include"] = ["reasoning.encrypted_content"]
        if request.thinking_budget:
            params["reasoning"] = {"summary": "auto"}
    elif request.temperature is not None:
        params["temperature"] = request.temperature
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                "strict": False,
            }
            for t in request.tools
        ]
    return params


# ---- response --------------------------------------------------------------------------


class _Item:
    """One output item as it streams."""

    __slots__ = (
        "args",
        "args_done",
        "call_id",
        "encrypted",
        "id",
        "name",
        "refusal",
        "segments",
        "started",
        "text",
        "type",
    )

    def __init__(self, type_: str, id_: str = "") -> None:
        self.type = type_
        self.id = id_
        self.text: list[str] = []
        self.refusal: list[str] = []
        # reasoning: (kind, index) → text parts, in arrival order
        self.segments: dict[tuple[str, int], list[str]] = {}
        self.encrypted: str | None = None
        self.call_id = ""
        self.name = ""
        self.args: list[str] = []
        self.args_done: str | None = None
        self.started = False

    def thinking(self) -> str:
        return SUMMARY_SEPARATOR.join(s for s in ("".join(p) for p in self.segments.values()) if s)

    def add_reasoning(self, key: tuple[str, int], text: str) -> str:
        """Append reasoning text; returns the delta to emit (with a separator when this
        text opens a new part after earlier ones)."""
        parts = self.segments.get(key)
        if parts is None:
            parts = self.segments[key] = []
        if not parts and any(p for k, p in self.segments.items() if k != key):
            parts.append(text)
            return SUMMARY_SEPARATOR + text
        parts.append(text)
        return text

    def arguments(self) -> str:
        return self.args_done if self.args_done is not None else "".join(self.args)


class _Accumulator:
    def __init__(self) -> None:
        self.items: dict[int, _Item] = {}
        self.by_id: dict[str, _Item] = {}
        self.terminal = False
        self.status: str | None = None
        self.incomplete_reason: str | None = None
        self.usage: Any = None

    def item(self, ev: Any, type_: str) -> _Item:
        """The item an event refers to (by output_index, else item_id), created if new."""
        index = getattr(ev, "output_index", None)
        item_id = getattr(ev, "item_id", None) or ""
        it = self.items.get(index) if index is not None else None
        if it is None and item_id:
            it = self.by_id.get(item_id)
        if it is None:
            it = _Item(type_, item_id)
            self.items[index if index is not None else len(self.items)] = it
            if item_id:
                self.by_id[item_id] = it
        return it

    def final_reasoning(self, output: Any) -> None:
        """The final response's reasoning items carry the encrypted content to keep (it
        differs from the one in output_item.added, and even from output_item.done)."""
        for item in output or []:
            if getattr(item, "type", None) != "reasoning":
                continue
            it = self.by_id.get(getattr(item, "id", None) or "")
            enc = getattr(item, "encrypted_content", None)
            if it is not None and enc:
                it.encrypted = enc

    def calls(self) -> list[_Item]:
        return [it for _, it in sorted(self.items.items()) if it.type == "function_call"]

    def build(self) -> tuple[Message, dict[str, str]]:
        content: list[Any] = []
        raw_inputs: dict[str, str] = {}
        n_calls = 0
        for _, it in sorted(self.items.items()):
            if it.type == "reasoning":
                thinking = it.thinking()
                if thinking or it.encrypted:
                    content.append(
                        ThinkingBlock(
                            thinking=thinking,
                            item_id=it.id or None,
                            encrypted_content=it.encrypted,
                        )
                    )
            elif it.type == "message":
                text = "".join(it.text) + "".join(it.refusal)
                if text:
                    content.append(TextBlock(text=text))
            elif it.type == "function_call":
                raw = it.arguments()
                args, complete = parse_tool_input(raw)
                cid = it.call_id or it.id or f"call_{n_calls}"
                n_calls += 1
                if not complete:
                    raw_inputs[cid] = raw
                content.append(ToolUseBlock(id=cid, name=it.name, input=args))
        return Message(role="assistant", content=content), raw_inputs

    def build_usage(self) -> Usage:
        u = self.usage
        if u is None:
            return Usage()
        total = getattr(u, "input_tokens", 0) or 0
        details = getattr(u, "input_tokens_details", None)
        cached = (getattr(details, "cached_tokens", 0) if details is not None else 0) or 0
        cached = min(cached, total)
        return Usage(
            input_tokens=total - cached,
            output_tokens=getattr(u, "output_tokens", 0) or 0,
            cache_read_input_tokens=cached,
        )

    def stop_reason(self) -> StopReason:
        has_calls = any(it.type == "function_call" for it in self.items.values())
        if self.status == "incomplete":
            if self.incomplete_reason == "content_filter":
                return "refusal"
            return "max_tokens"
        if has_calls:
            return "tool_use"
        only_refusal = any(it.refusal for it in self.items.values()) and not any(
            it.text for it in self.items.values()
        )
        return "refusal" if only_refusal else "end_turn"

    def partial(self) -> Message | None:
        if not self.items:
            return None
        try:
            message = self.build()[0]
        except Exception:  # pragma: no cover - display only
            return None
        return message if message.content else None


def _failure(code: object, message: object, status: int | None = None) -> ProviderError:
    code_s = str(code) if code else None
    msg = message if isinstance(message, str) and message else "the response failed"
    kind = _FAILED_CODES.get(code_s or "")
    if kind is None:
        kind = "context_length_exceeded" if looks_like_context_overflow(msg) else "stream_error"
    return ProviderError(kind, msg, status=status, code=code_s)


def classify_error(exc: BaseException, *, started: bool) -> ProviderError:
    from sema_rpc.providers._openai import classify_error as classify_chat

    err = classify_chat(exc, started=started)
    if err.kind == "stream_error" and started:
        # `event: error` with a nested `error` object: the SDK raises APIError.
        mapped = _failure(err.code, err.message, err.status)
        if mapped.kind != "stream_error":
            return mapped
    return err


class _HttpEvents:
    """The light path's stream: the SSE of a 2xx response as events read like the
    SDK's (attribute access). As the SDK does: `data: [DONE]` ends it, an object with a
    truthy `error` raises (StreamError), a payload that is not JSON raises ValueError."""

    __slots__ = ("_response",)

    def __init__(self, response: Any) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[Any]:
        reader = SseReader()
        async for data in _body(self._response):
            for _event, payload in reader.feed(data):
                if payload.startswith(b"[DONE]"):
                    return
                obj = loads_obj(payload)
                if isinstance(obj, dict) and obj.get("error"):
                    err = obj["error"]
                    msg = err.get("message") if isinstance(err, dict) else None
                    if not msg or not isinstance(msg, str):
                        msg = "An error occurred during streaming"
                    raise StreamError(err, msg)
                yield obj

    async def close(self) -> None:
        await self._response.aclose()


async def _body(response: Any) -> AsyncIterator[bytes]:
    """The body's bytes; a network error while reading raised as the SDK raises it."""
    from sema_rpc.providers._openai import network_errors

    try:
        async for data in response.aiter_bytes():
            yield data
    except network_errors() as exc:
        raise transport_failure(exc) from exc


class OpenAIResponsesProvider(SdkProvider):
    """A configured connection to an OpenAI Responses endpoint."""

    name = "openai-responses"
    sdk = "openai"

    def _sdk_client(self, **kwargs: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**kwargs)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        acc = _Accumulator()
        failure: ProviderError | None = None
        started = False
        sdk_stream: Any = None
        try:
            if self.transport == "sdk":
                client = await self._sdk_ready_client()
                sdk_stream = await client.responses.create(**build_params(request), stream=True)
            else:
                url, headers, body = openai_request_parts(self, "/responses", build_params(request))
                response = await self._send(url, headers, body, OPENAI_MAX_RETRY_AFTER)
                sdk_stream = _HttpEvents(response)
            started = True
            async for ev in sdk_stream:
                t = getattr(ev, "type", None)
                if acc.terminal and t != "error":
                    continue  # nothing meaningful follows the final event
                if t == "response.output_text.delta":
                    if ev.delta:
                        acc.item(ev, "message").text.append(ev.delta)
                        yield TextDelta(ev.delta)
                elif t == "response.reasoning_summary_text.delta":
                    if ev.delta:
                        it = acc.item(ev, "reasoning")
                        yield ThinkingDelta(it.add_reasoning(("s", ev.summary_index), ev.delta))
                elif t == "response.function_call_arguments.delta":
                    if ev.delta:
                        acc.item(ev, "function_call").args.append(ev.delta)
                elif t in ("response.output_item.added", "response.output_item.done"):
                    for out in self._on_item(acc, ev, done=t.endswith("done")):
                        yield out
                elif t == "response.function_call_arguments.done":
                    acc.item(ev, "function_call").args_done = ev.arguments
                elif t == "response.reasoning_text.delta":
                    if ev.delta:
                        it = acc.item(ev, "reasoning")
                        yield ThinkingDelta(it.add_reasoning(("r", ev.content_index), ev.delta))
                elif t == "response.reasoning_summary_text.done":
                    # Servers that send no deltas: take the whole part.
                    it = acc.item(ev, "reasoning")
                    key = ("s", ev.summary_index)
                    if ev.text and not it.segments.get(key):
                        yield ThinkingDelta(it.add_reasoning(key, ev.text))
                elif t == "response.output_text.done":
                    it = acc.item(ev, "message")
                    if ev.text and not it.text:
                        it.text.append(ev.text)
                        yield TextDelta(ev.text)
                elif t == "response.refusal.delta":
                    if ev.delta:
                        acc.item(ev, "message").refusal.append(ev.delta)
                        yield TextDelta(ev.delta)
                elif t in ("response.completed", "response.incomplete"):
                    resp = ev.response
                    acc.terminal = True
                    acc.status = resp.status or (
                        "completed" if t == "response.completed" else "incomplete"
                    )
                    acc.incomplete_reason = getattr(resp.incomplete_details, "reason", None)
                    acc.usage = resp.usage
                    acc.final_reasoning(resp.output)
                    if acc.status in ("failed", "cancelled"):
                        err = resp.error
                        failure = _failure(
                            getattr(err, "code", None),
                            getattr(err, "message", None) or f"the response was {acc.status}",
                        )
                        break
                elif t == "response.failed":
                    err = ev.response.error
                    failure = _failure(getattr(err, "code", None), getattr(err, "message", None))
                    break
                elif t == "error":
                    if not acc.terminal:
                        failure = _failure(ev.code, ev.message)
                    break
                # created / in_progress / content_part / summary_part / .done events: no action
        except Exception as e:
            if acc.terminal and failure is None:
                # The response was complete; only the tail of the connection failed.
                log.debug("error after the final event ignored", exc_info=True)
            else:
                failure = classify_error(e, started=started)
                streamed = acc.partial() is not None
                failure = self._explain(failure, started=started, streamed=streamed)
        finally:
            if sdk_stream is not None:
                try:
                    await sdk_stream.close()
                except Exception:  # pragma: no cover - best effort
                    log.debug("error closing stream", exc_info=True)

        if failure is None and not acc.terminal:
            failure = ProviderError(
                "stream_cut",
                "the response stream ended before the model finished (no response.completed)",
            )
        if failure is not None:
            yield ResponseFailed(failure)
            return
        message, raw_inputs = acc.build()
        yield ResponseDone(
            message=message,
            stop_reason=acc.stop_reason(),
            usage=acc.build_usage(),
            raw_tool_inputs=raw_inputs,
        )

    @staticmethod
    def _on_item(acc: _Accumulator, ev: Any, *, done: bool) -> list[StreamEvent]:
        """output_item.added / .done: ids, the function call's name, the final encrypted
        reasoning; content a server put only in `.done` (no deltas) is emitted here."""
        out: list[StreamEvent] = []
        item = ev.item
        type_ = getattr(item, "type", None) or "other"
        it = acc.item(ev, type_)
        if it.type != type_ and not (it.text or it.segments or it.args):
            it.type = type_
        item_id = getattr(item, "id", None)
        if item_id:
            it.id = item_id
            acc.by_id[item_id] = it
        if type_ == "reasoning":
            enc = getattr(item, "encrypted_content", None)
            if enc:
                it.encrypted = enc  # the latest wins (response.completed has the last word)
            if done and not it.segments:
                for n, s in enumerate(getattr(item, "summary", None) or []):
                    if getattr(s, "text", None):
                        out.append(ThinkingDelta(it.add_reasoning(("s", n), s.text)))
        elif type_ == "function_call":
            it.call_id = it.call_id or getattr(item, "call_id", None) or ""
            it.name = it.name or getattr(item, "name", None) or ""
            if done and it.args_done is None and not it.args:
                it.args_done = getattr(item, "arguments", None) or ""
            if not it.started and it.name:
                it.started = True
                if not it.call_id:
                    it.call_id = it.id or f"call_{len(acc.calls()) - 1}"
        elif type_ == "message" and done and not it.text and not it.refusal:
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text" and part.text:
                    it.text.append(part.text)
                    out.append(TextDelta(part.text))
        return out
