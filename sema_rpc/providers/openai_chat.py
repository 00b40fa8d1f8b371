"""OpenAI Chat Completions provider (and the many OpenAI-compatible servers).

Reads raw chunks of `chat.completions.create(stream=True, stream_options={"include_usage":
True})`: `delta.content`, `delta.tool_calls` fragments keyed by index (id/name on the
first fragment only), `reasoning_content` (DeepSeek) or `reasoning` (OpenRouter, Groq) as
thinking, usage from a `choices: []` chunk or from the finish chunk. The `openai` SDK is
imported on first use.

Decisions:
- Chunks that are not `chat.completion.chunk` (Azure's prompt_filter_results) carry no
  choices and are simply skipped; later chunks are read to the end, since OpenRouter
  sends usage after the finish chunk.
- A chunk with a top-level `error` or an `event: error` (the SDK raises APIError) →
  ResponseFailed(stream_error), even after a finish_reason; no finish_reason by the end
  of the body → stream_cut.
- `finish_reason: stop` with tool calls present (some servers) → tool_use.
- A fragment carrying a new id at an index already used starts a new call (servers that
  put every call at index 0).
- Thinking blocks are never sent back; tool results become `role: tool` messages placed
  before any user text of the same message.
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

from sema_rpc.engine.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from sema_rpc.providers._common import (
    SdkProvider,
    looks_like_context_overflow,
    parse_tool_input,
)
from sema_rpc.providers.base import (
    ModelRequest,
    ProviderError,
    ResponseDone,
    ResponseFailed,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallStarted,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

log = logging.getLogger("sema_rpc.providers.openai_chat")

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
# Models that take `max_completion_tokens` (and reject `max_tokens` / temperature).
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")


def uses_max_completion_tokens(model: str) -> bool:
    return bool(_REASONING_MODEL.match(model.rsplit("/", 1)[-1].lower()))


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
            for b in m.content:
                if b.type == "tool_result":
                    content = b.content
                    if b.is_error and not content.lower().startswith("error"):
                        content = f"Error: {content}"
                    out.append({"role": "tool", "tool_call_id": b.tool_use_id, "content": content})
                elif b.type == "text":
                    texts.append(b.text)
            if texts:
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
        self.usage: Any = None

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
        prompt = getattr(u, "prompt_tokens", 0) or 0
        details = getattr(u, "prompt_tokens_details", None)
        cached = (getattr(details, "cached_tokens", 0) if details is not None else 0) or 0
        if not cached:
            cached = getattr(u, "prompt_cache_hit_tokens", 0) or 0  # DeepSeek
        cached = min(cached, prompt)
        return Usage(
            input_tokens=prompt - cached,
            output_tokens=getattr(u, "completion_tokens", 0) or 0,
            cache_read_input_tokens=cached,
        )

    def partial(self) -> Message | None:
        if not (self.text or self.thinking or self.calls):
            return None
        try:
            return self.build()[0]
        except Exception:  # pragma: no cover - display only
            return None


def _error_fields(body: object) -> tuple[str | None, str | None]:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            code = err.get("code") or err.get("type")
            msg = err.get("message")
            return (str(code) if code is not None else None), (
                msg if isinstance(msg, str) else None
            )
    if isinstance(body, str) and body:
        return None, body
    return None, None


def classify_error(exc: BaseException, *, started: bool) -> ProviderError:
    import openai

    from sema_rpc.providers.anthropic import classify_other

    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code, emsg = _error_fields(exc.body)
        msg = emsg or str(exc)
        if started:
            return ProviderError("stream_error", msg, status=status, code=code)
        if status == 429:
            kind = "rate_limit"
        elif status == 529 or code == "overloaded_error":
            kind = "overloaded"
        elif status in (401, 403):
            kind = "authentication"
        elif status == 404:
            kind = "not_found"
        elif status >= 500:
            kind = "server_error"
        elif code == "context_length_exceeded" or looks_like_context_overflow(msg):
            kind = "context_length_exceeded"
        else:
            kind = "invalid_request"
        return ProviderError(kind, msg, status=status, code=code)  # type: ignore[arg-type]
    if isinstance(exc, openai.APIConnectionError):
        if started:
            return ProviderError("stream_cut", f"connection lost mid-stream: {exc}")
        return ProviderError("connection", str(exc) or "connection error")
    if isinstance(exc, openai.APIError):  # an error chunk / `event: error` inside the stream
        code, emsg = _error_fields(exc.body)
        return ProviderError("stream_error", emsg or exc.message or str(exc), code=code)
    if isinstance(exc, openai.OpenAIError) and "credentials" in str(exc).lower():
        return ProviderError("authentication", str(exc))
    return classify_other(exc, started=started)


class OpenAIChatProvider(SdkProvider):
    """A configured connection to an OpenAI Chat Completions endpoint."""

    name = "openai"

    def _sdk_client(self, **kwargs: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**kwargs)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        acc = _Accumulator()
        failure: ProviderError | None = None
        started = False
        sdk_stream: Any = None
        try:
            client = self._client.get(self._make_client)
            sdk_stream = await client.chat.completions.create(**build_params(request), stream=True)
            started = True
            async for chunk in sdk_stream:
                usage = chunk.usage
                if usage is not None:
                    acc.usage = usage
                choices = chunk.choices
                if not choices:
                    continue
                choice = choices[0]
                delta = choice.delta
                if delta is not None:
                    extra = delta.model_extra or {}
                    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
                    if reasoning and isinstance(reasoning, str):
                        acc.thinking.append(reasoning)
                        yield ThinkingDelta(reasoning)
                    details = extra.get("reasoning_details")
                    if details:
                        for d in details:
                            if isinstance(d, dict) and d.get("signature"):
                                acc.signature = d["signature"]
                    content = delta.content
                    if content:
                        acc.text.append(content)
                        yield TextDelta(content)
                    if delta.tool_calls:
                        for frag in delta.tool_calls:
                            started_call = self._on_fragment(acc, frag)
                            if started_call is not None:
                                yield started_call
                if choice.finish_reason:
                    acc.finish = choice.finish_reason
        except Exception as e:
            failure = classify_error(e, started=started)
        finally:
            if sdk_stream is not None:
                try:
                    await sdk_stream.close()
                except Exception:  # pragma: no cover - best effort
                    log.debug("error closing stream", exc_info=True)

        if failure is None and acc.finish is None:
            failure = ProviderError(
                "stream_cut",
                "the response stream ended before the model finished (no finish_reason)",
            )
        if failure is not None:
            yield ResponseFailed(failure, partial=acc.partial())
            return
        message, raw_inputs = acc.build()
        stop = _FINISH.get(acc.finish or "", "end_turn")
        if stop == "end_turn" and acc.calls:
            stop = "tool_use"
        yield ResponseDone(
            message=message, stop_reason=stop, usage=acc.build_usage(), raw_tool_inputs=raw_inputs
        )

    @staticmethod
    def _on_fragment(acc: _Accumulator, frag: Any) -> ToolCallStarted | None:
        index = frag.index if frag.index is not None else len(acc.calls) - 1
        call = acc.by_index.get(index)
        if call is None or (frag.id and call.id and frag.id != call.id):
            call = _Call()
            acc.calls.append(call)
            acc.by_index[index] = call
        if frag.id and not call.id:
            call.id = frag.id
        fn = frag.function
        if fn is not None:
            if fn.name and not call.name:
                call.name = fn.name
            if fn.arguments:
                call.args.append(fn.arguments)
        if not call.started and call.name:
            call.started = True
            if not call.id:
                call.id = f"call_{len(acc.calls) - 1}"
            return ToolCallStarted(id=call.id, name=call.name)
        return None
