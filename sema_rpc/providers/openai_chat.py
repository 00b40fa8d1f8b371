"""OpenAI Chat Completions provider (and the many OpenAI-compatible servers).

Reads the raw SSE of `chat.completions.create(stream=True, stream_options={"include_usage":
True})` as JSON dicts: `delta.content`, `delta.tool_calls` fragments keyed by index
(id/name on the first fragment only), `reasoning_content` (DeepSeek) or `reasoning`
(OpenRouter, Groq) as thinking, usage from a `choices: []` chunk or from the finish
chunk. The `openai` SDK is imported on first use.

The request is built here and sent by `http.open_stream()` (the SDK's retry policy and
error bodies; `transport: "sdk"` sends it through the SDK's `with_streaming_response`
instead); either way the body is read here. Building an SDK model per chunk costs ~100 µs
of CPU, which caps a stream at a few thousand chunks/s.
The SSE reading follows the SDK's: CR, LF or CRLF line ends, `:` comment lines ignored
(OpenRouter's keep-alives), multi-line `data:` joined with "\n", `data: [DONE]` ends the
stream (the rest of an HTTP/1.1 body is drained so the connection can be reused), an
event without data is not dispatched, and a last event without its blank line is
dropped; network errors while reading map as the SDK's APIConnectionError would.

Decisions:
- Chunks that are not `chat.completion.chunk` (Azure's prompt_filter_results) carry no
  choices and are simply skipped; later chunks are read to the end, since OpenRouter
  sends usage after the finish chunk.
- A chunk with a top-level `error` (where the SDK raises APIError) or any `event: error`
  → ResponseFailed(stream_error), even after a finish_reason; no finish_reason by the
  end of the body → stream_cut. A data payload that is not JSON (or not an object) →
  stream_error ("malformed stream").
- `finish_reason: stop` with tool calls present (some servers) → tool_use.
- A fragment carrying a new id at an index already used starts a new call (servers that
  put every call at index 0).
- Thinking blocks are never sent back; tool results become `role: tool` messages placed
  before any user text of the same message.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any

from sema_rpc.core.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from sema_rpc.core.stream import (
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
    parse_tool_input,
)
from sema_rpc.providers._openai import (
    classify_error,
    data_url,
    error_fields,
    network_errors,
    openai_request_parts,
    uses_max_completion_tokens,
)
from sema_rpc.providers.http import (
    OPENAI_MAX_RETRY_AFTER,
    SseReader,
    classify_transport,
    transport_failure,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

log = logging.getLogger("sema_rpc.providers.openai_chat")

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def to_api_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Internal messages → Chat Completions `messages`."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for m in messages:
        if m.role == "assistant":
            texts: list[str] = []
            calls: list[dict[str, Any]] = []
            for b in m.content:
                if b.type == "text":
                    texts.append(b.text)
                elif b.type == "tool_use":
                    calls.append(
                        {
                            "id": b.id,
                            "type": "function",
                            "function": {"name": b.name, "arguments": json.dumps(b.input)},
                        }
                    )
                # thinking / redacted thinking are not sent back
            text = "".join(texts)
            if not text and not calls:
                continue
            msg: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        else:
            texts = []
            parts: list[dict[str, Any]] = []  # only when the message has images
            for b in m.content:
                if b.type == "tool_result":
                    content = b.content
                    if b.is_error and not content.lower().startswith("error"):
                        content = f"Error: {content}"
                    out.append({"role": "tool", "tool_call_id": b.tool_use_id, "content": content})
                elif b.type == "text":
                    texts.append(b.text)
                elif b.type == "image":
                    if texts:
                        parts.append({"type": "text", "text": "".join(texts)})
                        texts = []
                    parts.append({"type": "image_url", "image_url": {"url": data_url(b)}})
            if parts:
                if texts:
                    parts.append({"type": "text", "text": "".join(texts)})
                out.append({"role": "user", "content": parts})
            elif texts:
                out.append({"role": "user", "content": "".join(texts)})
    return out


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The `chat.completions.create` keyword arguments (without `stream`)."""
    params: dict[str, Any] = {
        "model": request.model,
        "messages": to_api_messages(request.system, request.messages),
        "stream_options": {"include_usage": True},
    }
    reasoning_model = uses_max_completion_tokens(request.model)
    if reasoning_model:
        params["max_completion_tokens"] = request.max_tokens
    else:
        params["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
    return params


class _Call:
    __slots__ = ("args", "id", "name", "started")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.args: list[str] = []
        self.started = False


class _Accumulator:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.signature: str | None = None
        self.calls: list[_Call] = []
        self.by_index: dict[int, _Call] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None

    def build(self) -> tuple[Message, dict[str, str]]:
        content: list[Any] = []
        raw_inputs: dict[str, str] = {}
        if self.thinking:
            content.append(ThinkingBlock(thinking="".join(self.thinking), signature=self.signature))
        text = "".join(self.text)
        if text:
            content.append(TextBlock(text=text))
        for n, c in enumerate(self.calls):
            raw = "".join(c.args)
            args, complete = parse_tool_input(raw)
            cid = c.id or f"call_{n}"
            if not complete:
                raw_inputs[cid] = raw
            content.append(ToolUseBlock(id=cid, name=c.name, input=args))
        return Message(role="assistant", content=content), raw_inputs

    def build_usage(self) -> Usage:
        u = self.usage
        if u is None:
            return Usage()
        prompt = _int(u.get("prompt_tokens"))
        details = u.get("prompt_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
        if not cached:
            cached = _int(u.get("prompt_cache_hit_tokens"))  # DeepSeek
        cached = min(cached, prompt)
        return Usage(
            input_tokens=prompt - cached,
            output_tokens=_int(u.get("completion_tokens")),
            cache_read_input_tokens=cached,
        )

    def partial(self) -> Message | None:
        if not (self.text or self.thinking or self.calls):
            return None
        try:
            return self.build()[0]
        except Exception:  # pragma: no cover - display only
            return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class OpenAIChatProvider(SdkProvider):
    """A configured connection to an OpenAI Chat Completions endpoint."""

    name = "openai"
    sdk = "openai"

    def _sdk_client(self, **kwargs: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**kwargs)

    path = "/chat/completions"

    def request_parts(self, request: ModelRequest) -> tuple[str, dict[str, str], bytes]:
        return openai_request_parts(self, self.path, build_params(request))

    @contextlib.asynccontextmanager
    async def _open(self, request: ModelRequest) -> AsyncIterator[Any]:
        """The streaming 2xx httpx2 response, sent by the light path or by the SDK."""
        if self.transport == "sdk":
            client = await self._sdk_ready_client()
            async with client.chat.completions.with_streaming_response.create(
                **build_params(request), stream=True
            ) as response:
                yield response.http_response
            return
        url, headers, body = self.request_parts(request)
        response = await self._send(url, headers, body, OPENAI_MAX_RETRY_AFTER)
        try:
            yield response
        finally:
            await response.aclose()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        acc = _Accumulator()
        failure: ProviderError | None = None
        started = False
        try:
            async with self._open(request) as http:
                started = True
                reader = SseReader()
                chunks = http.aiter_bytes()
                done = False
                try:
                    async for data in chunks:
                        for event, payload in reader.feed(data):
                            if payload.startswith(b"[DONE]"):
                                done = True
                                break
                            chunk, failure = _parse_chunk(event, payload)
                            if failure is not None:
                                break
                            for ev in _apply_chunk(acc, chunk):
                                yield ev
                        if done or failure is not None:
                            break
                    if done and http.http_version == "HTTP/1.1":
                        await _drain(chunks)
                except network_errors() as exc:
                    # As the SDK raises it: APIConnectionError / APITimeoutError.
                    failure = classify_transport(transport_failure(exc), started=True)
                finally:
                    await chunks.aclose()
        except Exception as e:
            failure = classify_error(e, started=started)
        if failure is not None:
            streamed = acc.partial() is not None
            failure = self._explain(failure, started=started, streamed=streamed)

        if failure is None and acc.finish is None:
            failure = ProviderError(
                "stream_cut",
                "the response stream ended before the model finished (no finish_reason)",
            )
        if failure is not None:
            yield ResponseFailed(failure)
            return
        message, raw_inputs = acc.build()
        stop = _FINISH.get(acc.finish or "", "end_turn")
        if stop == "end_turn" and acc.calls:
            stop = "tool_use"
        yield ResponseDone(
            message=message, stop_reason=stop, usage=acc.build_usage(), raw_tool_inputs=raw_inputs
        )


# ---------------------------------------------------------------------------- raw SSE


def _parse_chunk(event: bytes | None, payload: bytes) -> tuple[Any, ProviderError | None]:
    """One event's JSON, or the failure it reports (an `error` object, `event: error`)."""
    try:
        obj = json.loads(payload)
    except ValueError as exc:
        if event == b"error":
            text = payload.decode("utf-8", "replace")
            return None, ProviderError("stream_error", text or "an error event in the stream")
        return None, classify_error(exc, started=True)
    if isinstance(obj, dict):
        err = obj.get("error")
        if err or event == b"error":
            # What the SDK raises as APIError(body=obj["error"]), classified the same way.
            code, emsg = error_fields(err if err else obj)
            return None, ProviderError(
                "stream_error", emsg or "An error occurred during streaming", code=code
            )
        return obj, None
    if event == b"error":
        return None, ProviderError("stream_error", str(obj))
    return None, ProviderError(
        "stream_error", f"malformed stream: a chunk that is not an object: {payload[:200]!r}"
    )


def _apply_chunk(acc: _Accumulator, chunk: dict[str, Any]) -> list[StreamEvent]:
    """Fold one chunk into the accumulator; the deltas to emit, in order."""
    usage = chunk.get("usage")
    if usage is not None and isinstance(usage, dict):
        acc.usage = usage
    choices = chunk.get("choices")
    if not choices or not isinstance(choices, list):
        return _NO_EVENTS
    choice = choices[0]
    if not isinstance(choice, dict):
        return _NO_EVENTS
    delta = choice.get("delta")
    if not delta or not isinstance(delta, dict):
        out = _NO_EVENTS
    else:
        out = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            acc.thinking.append(reasoning)
            out.append(ThinkingDelta(reasoning))
        details = delta.get("reasoning_details")
        if details and isinstance(details, list):
            for d in details:
                if isinstance(d, dict) and d.get("signature"):
                    acc.signature = d["signature"]
        content = delta.get("content")
        if content and isinstance(content, str):
            acc.text.append(content)
            out.append(TextDelta(content))
        tool_calls = delta.get("tool_calls")
        if tool_calls and isinstance(tool_calls, list):
            for frag in tool_calls:
                if isinstance(frag, dict):
                    _on_fragment(acc, frag)
    finish = choice.get("finish_reason")
    if finish:
        acc.finish = finish
    return out


_NO_EVENTS: list[StreamEvent] = []


def _on_fragment(acc: _Accumulator, frag: dict[str, Any]) -> None:
    index = frag.get("index")
    if index is None:
        index = len(acc.calls) - 1
    call = acc.by_index.get(index)
    frag_id = frag.get("id")
    if call is None or (frag_id and call.id and frag_id != call.id):
        call = _Call()
        acc.calls.append(call)
        acc.by_index[index] = call
    if frag_id and not call.id:
        call.id = frag_id
    fn = frag.get("function")
    if isinstance(fn, dict):
        name = fn.get("name")
        if name and not call.name:
            call.name = name
        arguments = fn.get("arguments")
        if arguments:
            call.args.append(arguments)
    if not call.started and call.name:
        call.started = True
        if not call.id:
            call.id = f"call_{len(acc.calls) - 1}"


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows `[DONE]` (briefly) so an HTTP/1.1 connection can be reused."""
    from sema_rpc.core.scopes import move_on_after

    with move_on_after(_DRAIN_TIMEOUT_S):
        try:
            async for _ in chunks:
                pass
        except Exception:  # cleanup must not turn a complete answer into an error
            log.debug("error draining the response after [DONE]", exc_info=True)


_DRAIN_TIMEOUT_S = 0.1
