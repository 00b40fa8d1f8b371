"""A scripted LLM server: real HTTP/1.1 + SSE on 127.0.0.1, for tests and benchmarks.

The real SDKs (anthropic, openai) talk to it exactly as they talk to the real APIs, so a
test exercises the whole provider stack: HTTP, SSE framing, SDK parsing, retries.

    with ScriptedLLM() as llm:
        llm.script(
            Reply.tools([("Read", {"file_path": "a.py"})], text="Looking…"),
            Reply.text("Done.", chunks=5),
        )
        # AsyncAnthropic(base_url=llm.url) / AsyncOpenAI(base_url=llm.openai_url)
        ...
        assert llm.requests[0].path == "/v1/messages"

Endpoints: `POST /v1/messages` (Anthropic: `event:` + `data:` lines), `POST
/v1/chat/completions` (OpenAI chat: data-only chunks, usage chunk, `data: [DONE]`), `POST
/v1/responses` (OpenAI Responses: named events with `sequence_number`, `response.created`
first; reasoning summary, message, function_call items; `response.completed`, or
`response.incomplete` for max_tokens/refusal; a mid-stream error is `error` then
`response.failed`).
Each request consumes the next scripted `Reply`, rendered in the format of the endpoint
called. An empty script answers a 500 (with `x-should-retry: false`) saying so: a test
fails loudly instead of hanging.

The server runs on its own event loop in a daemon thread, so it serves sync and async
tests alike. Connections are keep-alive; responses use chunked transfer encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple

__all__ = ["RecordedRequest", "Reply", "ScriptedLLM"]

_ids = itertools.count(1)

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "model_not_found",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


class RecordedRequest(NamedTuple):
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body (None if empty, the raw text if not JSON)."""
    at: float
    """`time.monotonic()` when the request was fully read."""


def _split(text: str, n: int) -> list[str]:
    """Split `text` into `n` non-empty pieces of roughly equal length (fewer if too short)."""
    if not text:
        return []
    n = max(1, min(n, len(text)))
    size, extra = divmod(len(text), n)
    out, pos = [], 0
    for i in range(n):
        end = pos + size + (1 if i < extra else 0)
        out.append(text[pos:end])
        pos = end
    return out


@dataclass
class Reply:
    """One scripted model response. Build it with the classmethods, not the constructor.

    Common options on every builder: `usage=(input_tokens, output_tokens)`, `cache=(read,
    write)` (prompt-cache tokens on top of the input tokens: Anthropic reports both,
    OpenAI only reads, counted inside its prompt/input tokens), `delay_s`
    (pause between streamed pieces), `gate` (a `threading.Event`: the stream pauses
    before its final events until the test sets it; `at_gate` is set when it pauses),
    `headers` (extra response headers).
    """

    kind: Literal["stream", "error", "raw"] = "stream"
    answer: str = ""
    """The text content (the builder methods are named `text`/`thinking`)."""
    chunks: int = 3
    reasoning: str | None = None
    """The thinking content, streamed before the text."""
    thinking_chunks: int = 3
    signature: str = "sig-scripted"
    tool_calls: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)
    stop_reason: str | None = None
    """Anthropic stop reason; None → tool_use when there are tool calls, else end_turn."""
    end: Literal["ok", "cut", "mid_stream_error"] = "ok"
    abrupt: bool = False
    """For `cut`: drop the TCP connection mid-body instead of ending the HTTP body cleanly."""
    usage: tuple[int, int] = (10, 5)
    cache: tuple[int, int] = (0, 0)
    delay_s: float = 0.0
    gate: threading.Event | None = None
    at_gate: threading.Event = field(default_factory=threading.Event)
    headers: dict[str, str] = field(default_factory=dict)
    sent: list[tuple[float, bytes]] = field(default_factory=list)
    """With `delay_s`: `(time.monotonic(), piece)` as each streamed piece was written."""
    # errors
    status: int = 200
    retry_after_ms: int | None = None
    error_type: str | None = None
    error_message: str | None = None
    # raw
    raw_body: bytes = b""
    content_type: str = "text/event-stream"
    piece_size: int = 61
    _rendered: dict[str, list[bytes]] = field(default_factory=dict, repr=False)

    # ---- builders -------------------------------------------------------------------
    @classmethod
    def text(
        cls,
        text: str | None = None,
        *,
        chunks: int | None = None,
        deltas: int | None = None,
        **opts: Any,
    ) -> Reply:
        """A text answer in `chunks` deltas. `deltas=N` without text generates N words."""
        if text is None:
            n = deltas or 3
            text = "".join(f"w{i} " for i in range(n))
            return cls(answer=text, chunks=n, **opts)
        return cls(answer=text, chunks=chunks or deltas or 3, **opts)

    @classmethod
    def tools(
        cls,
        calls: list[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]],
        *,
        text: str = "",
        chunks: int = 2,
        **opts: Any,
    ) -> Reply:
        """Tool calls `(name, input)` or `(name, input, id)`, after an optional text."""
        norm = [(c[0], c[1], c[2] if len(c) > 2 else None) for c in calls]  # type: ignore[misc]
        return cls(answer=text, chunks=chunks, tool_calls=norm, **opts)

    @classmethod
    def thinking(
        cls,
        thinking: str,
        *,
        then: Reply | None = None,
        chunks: int = 3,
        signature: str = "sig-scripted",
    ) -> Reply:
        """Thinking (Anthropic thinking block / OpenAI-compatible `reasoning_content`) first."""
        base = then if then is not None else cls()
        return replace(
            base, reasoning=thinking, thinking_chunks=chunks, signature=signature, _rendered={}
        )

    @classmethod
    def turn(
        cls,
        *,
        text: str = "",
        thinking: str | None = None,
        tools: list[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]] | None = None,
        chunks: int = 3,
        **opts: Any,
    ) -> Reply:
        """The combined builder: thinking, then text, then tool calls."""
        r = cls.tools(tools or [], text=text, chunks=chunks, **opts)
        r.reasoning = thinking
        return r

    @classmethod
    def error(
        cls,
        status: int = 500,
        *,
        retry_after_ms: int | None = 1,
        message: str | None = None,
        error_type: str | None = None,
        **opts: Any,
    ) -> Reply:
        """An HTTP error with the provider's JSON error body.

        `retry_after_ms` (default 1 ms, so SDK retries are instant) is sent as the
        `retry-after-ms` header; None omits it (the SDK then backs off ~0.5-1 s).
        """
        return cls(
            kind="error",
            status=status,
            retry_after_ms=retry_after_ms,
            error_message=message,
            error_type=error_type,
            **opts,
        )

    @classmethod
    def mid_stream_error(
        cls,
        text: str = "Partial answer",
        *,
        message: str = "Overloaded",
        error_type: str = "overloaded_error",
        **opts: Any,
    ) -> Reply:
        """Stream some text, then an error event (Anthropic `event: error`, OpenAI an
        error chunk) and end the body without the stop events."""
        return cls(
            answer=text,
            end="mid_stream_error",
            error_message=message,
            error_type=error_type,
            **opts,
        )

    @classmethod
    def cut(cls, text: str = "Partial answer", *, abrupt: bool = False, **opts: Any) -> Reply:
        """Stream some deltas, then end without the stop events. `abrupt=True` drops the
        connection mid-body (an incomplete chunked body) instead of ending it cleanly."""
        return cls(answer=text, end="cut", abrupt=abrupt, **opts)

    @classmethod
    def raw(
        cls,
        body: bytes | str | Path,
        *,
        content_type: str = "text/event-stream",
        status: int = 200,
        piece_size: int = 61,
        **opts: Any,
    ) -> Reply:
        """Serve a recorded body verbatim (bytes, or a path to read), in `piece_size` pieces."""
        data = body if isinstance(body, bytes) else Path(body).read_bytes()
        return cls(
            kind="raw",
            raw_body=data,
            content_type=content_type,
            status=status,
            piece_size=piece_size,
            **opts,
        )

    # ---- rendering ------------------------------------------------------------------
    def _resolved_stop(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"

    def _tool_ids(self, prefix: str) -> list[str]:
        return [tid or f"{prefix}{next(_ids):04d}" for _, _, tid in self.tool_calls]

    def render(self, fmt: str, model: str = "scripted-model") -> tuple[list[bytes], list[bytes]]:
        """(body pieces before the gate, pieces after). Cached: rendered once per format."""
        key = fmt
        if key not in self._rendered:
            if self.kind == "raw":
                b = self.raw_body
                step = max(1, self.piece_size)
                pieces = [b[i : i + step] for i in range(0, len(b), step)]
                self._rendered[key] = [*pieces, b"__GATE__"] if pieces else [b"__GATE__"]
            elif fmt == "anthropic":
                self._rendered[key] = self._render_anthropic(model)
            elif fmt == "responses":
                self._rendered[key] = self._render_responses(model)
            else:
                self._rendered[key] = self._render_openai(model)
        parts = self._rendered[key]
        i = parts.index(b"__GATE__")
        return parts[:i], parts[i + 1 :]

    def _render_anthropic(self, model: str) -> list[bytes]:
        out: list[bytes] = []

        def ev(name: str, data: dict[str, Any]) -> None:
            out.append(
                f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
            )

        inp, outp = self.usage
        ev(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_scripted{next(_ids):06d}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": inp,
                        "cache_creation_input_tokens": self.cache[1],
                        "cache_read_input_tokens": self.cache[0],
                        "output_tokens": 1,
                    },
                },
            },
        )
        ev("ping", {"type": "ping"})
        idx = 0
        if self.reasoning is not None:
            ev(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": idx,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
            for piece in _split(self.reasoning, self.thinking_chunks):
                ev(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    },
                )
            ev(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": idx,
                    "delta": {"type": "signature_delta", "signature": self.signature},
                },
            )
            ev("content_block_stop", {"type": "content_block_stop", "index": idx})
            idx += 1
        if self.answer:
            ev(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": idx,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _split(self.answer, self.chunks):
                ev(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
            if self.end == "ok":
                ev("content_block_stop", {"type": "content_block_stop", "index": idx})
            idx += 1
        if self.end == "ok":
            for (name, args, _), tid in zip(
                self.tool_calls, self._tool_ids("toolu_scripted"), strict=True
            ):
                ev(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": idx,
                        "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}},
                    },
                )
                raw = json.dumps(args)
                for piece in ["", *_split(raw, 2)]:
                    ev(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": idx,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                ev("content_block_stop", {"type": "content_block_stop", "index": idx})
                idx += 1
        out.append(b"__GATE__")
        if self.end == "ok":
            ev(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self._resolved_stop(), "stop_sequence": None},
                    "usage": {"output_tokens": outp},
                },
            )
            ev("message_stop", {"type": "message_stop"})
        elif self.end == "mid_stream_error":
            ev(
                "error",
                {
                    "type": "error",
                    "error": {
                        "details": None,
                        "type": self.error_type or "overloaded_error",
                        "message": self.error_message or "Overloaded",
                    },
                },
            )
        return out

    def _render_openai(self, model: str) -> list[bytes]:
        out: list[bytes] = []
        cid = f"chatcmpl-scripted{next(_ids):06d}"
        created = int(time.time())

        def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> None:
            obj: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            obj.update(extra)
            out.append(f"data: {json.dumps(obj, separators=(',', ':'))}\n\n".encode())

        chunk({"role": "assistant", "content": ""})
        if self.reasoning is not None:
            for piece in _split(self.reasoning, self.thinking_chunks):
                chunk({"content": None, "reasoning_content": piece})
        for piece in _split(self.answer, self.chunks):
            chunk({"content": piece})
        if self.end == "ok":
            for i, ((name, args, _), tid) in enumerate(
                zip(self.tool_calls, self._tool_ids("call_scripted"), strict=True)
            ):
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": tid,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
                for piece in _split(json.dumps(args), 2):
                    chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        out.append(b"__GATE__")
        if self.end == "ok":
            stop = self._resolved_stop()
            finish = {
                "end_turn": "stop",
                "tool_use": "tool_calls",
                "max_tokens": "length",
                "refusal": "content_filter",
            }.get(stop, "stop")
            chunk({}, finish)
            inp, outp = self.usage
            chunk(
                None,
                usage={
                    "prompt_tokens": inp + self.cache[0],
                    "completion_tokens": outp,
                    "total_tokens": inp + self.cache[0] + outp,
                    "prompt_tokens_details": {"cached_tokens": self.cache[0]},
                },
            )
            out.append(b"data: [DONE]\n\n")
        elif self.end == "mid_stream_error":
            err = {
                "error": {
                    "message": self.error_message or "Overloaded",
                    "type": self.error_type or "server_error",
                    "code": None,
                }
            }
            out.append(f"data: {json.dumps(err)}\n\n".encode())
        return out

    def _render_responses(self, model: str) -> list[bytes]:
        """OpenAI Responses API events (the error body of `error_body` is OpenAI's)."""
        out: list[bytes] = []
        seq = itertools.count()
        rid = f"resp_scripted{next(_ids):06d}"
        created = int(time.time())

        def ev(name: str, data: dict[str, Any]) -> None:
            obj = {"type": name, **data, "sequence_number": next(seq)}
            out.append(
                f"event: {name}\ndata: {json.dumps(obj, separators=(',', ':'))}\n\n".encode()
            )

        def response(status: str, output: list[Any], **extra: Any) -> dict[str, Any]:
            return {
                "id": rid,
                "object": "response",
                "created_at": created,
                "status": status,
                "error": None,
                "incomplete_details": None,
                "instructions": None,
                "max_output_tokens": None,
                "metadata": {},
                "model": model,
                "output": output,
                "parallel_tool_calls": True,
                "store": False,
                "temperature": 1.0,
                "tool_choice": "auto",
                "tools": [],
                "top_p": 1.0,
                "usage": None,
                **extra,
            }

        ev("response.created", {"response": response("in_progress", [])})
        ev("response.in_progress", {"response": response("in_progress", [])})
        output: list[dict[str, Any]] = []
        idx = 0
        if self.reasoning is not None:
            item = {
                "id": f"rs_scripted{next(_ids):06d}",
                "type": "reasoning",
                "summary": [],
                "encrypted_content": self.signature,
            }
            loc = {"item_id": item["id"], "output_index": idx}
            ev("response.output_item.added", {"output_index": idx, "item": item})
            part = {"type": "summary_text", "text": ""}
            ev("response.reasoning_summary_part.added", {**loc, "summary_index": 0, "part": part})
            for piece in _split(self.reasoning, self.thinking_chunks):
                ev(
                    "response.reasoning_summary_text.delta",
                    {**loc, "summary_index": 0, "delta": piece},
                )
            done_part = {"type": "summary_text", "text": self.reasoning}
            ev(
                "response.reasoning_summary_text.done",
                {**loc, "summary_index": 0, "text": self.reasoning},
            )
            ev(
                "response.reasoning_summary_part.done",
                {**loc, "summary_index": 0, "part": done_part},
            )
            item = {**item, "summary": [done_part]}
            ev("response.output_item.done", {"output_index": idx, "item": item})
            output.append(item)
            idx += 1
        if self.answer:
            item = {
                "id": f"msg_scripted{next(_ids):06d}",
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            loc = {"item_id": item["id"], "output_index": idx}
            ev("response.output_item.added", {"output_index": idx, "item": item})
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            ev("response.content_part.added", {**loc, "content_index": 0, "part": part})
            for piece in _split(self.answer, self.chunks):
                ev(
                    "response.output_text.delta",
                    {**loc, "content_index": 0, "delta": piece, "logprobs": []},
                )
            if self.end == "ok":
                part = {**part, "text": self.answer}
                ev(
                    "response.output_text.done",
                    {**loc, "content_index": 0, "text": self.answer, "logprobs": []},
                )
                ev("response.content_part.done", {**loc, "content_index": 0, "part": part})
                item = {**item, "status": "completed", "content": [part]}
                ev("response.output_item.done", {"output_index": idx, "item": item})
                output.append(item)
            idx += 1
        if self.end == "ok":
            for (name, args, _), tid in zip(
                self.tool_calls, self._tool_ids("call_scripted"), strict=True
            ):
                item = {
                    "id": f"fc_scripted{next(_ids):06d}",
                    "type": "function_call",
                    "status": "in_progress",
                    "arguments": "",
                    "call_id": tid,
                    "name": name,
                }
                loc = {"item_id": item["id"], "output_index": idx}
                ev("response.output_item.added", {"output_index": idx, "item": item})
                raw = json.dumps(args)
                for piece in _split(raw, 2):
                    ev("response.function_call_arguments.delta", {**loc, "delta": piece})
                ev("response.function_call_arguments.done", {**loc, "arguments": raw})
                item = {**item, "status": "completed", "arguments": raw}
                ev("response.output_item.done", {"output_index": idx, "item": item})
                output.append(item)
                idx += 1
        out.append(b"__GATE__")
        inp, outp = self.usage
        usage = {
            "input_tokens": inp + self.cache[0],
            "input_tokens_details": {"cached_tokens": self.cache[0]},
            "output_tokens": outp,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": inp + self.cache[0] + outp,
        }
        if self.end == "ok":
            reason = {"max_tokens": "max_output_tokens", "refusal": "content_filter"}.get(
                self._resolved_stop()
            )
            if reason is None:
                final = response("completed", output, usage=usage)
                ev("response.completed", {"response": final})
            else:
                final = response(
                    "incomplete", output, usage=usage, incomplete_details={"reason": reason}
                )
                ev("response.incomplete", {"response": final})
        elif self.end == "mid_stream_error":
            code = self.error_type or "server_error"
            msg = self.error_message or "The server had an error while processing your request."
            ev("error", {"code": code, "message": msg, "param": None})
            failed = response("failed", output, error={"code": code, "message": msg})
            ev("response.failed", {"response": failed})
        return out

    def error_body(self, fmt: str) -> bytes:
        msg = self.error_message or f"scripted error {self.status}"
        if fmt == "anthropic":
            etype = self.error_type or _ANTHROPIC_ERROR_TYPES.get(
                self.status, "api_error" if self.status >= 500 else "invalid_request_error"
            )
            body: dict[str, Any] = {
                "type": "error",
                "error": {"type": etype, "message": msg},
                "request_id": f"req_scripted{next(_ids):06d}",
            }
        else:
            etype = self.error_type or _OPENAI_ERROR_TYPES.get(
                self.status, "server_error" if self.status >= 500 else "invalid_request_error"
            )
            body = {"error": {"message": msg, "type": etype, "param": None, "code": etype}}
        return json.dumps(body).encode()


def _fmt_for(path: str) -> str | None:
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith("/messages"):
        return "anthropic"
    if p.endswith("/chat/completions"):
        return "openai"
    if p.endswith("/responses"):
        return "responses"
    return None


class ScriptedLLM:
    """The scripted model server. Use as a context manager, or `start()` / `stop()`."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()
        self._request_seen = threading.Condition(self._lock)
        self._start_error: BaseException | None = None
        self.fallback: Callable[[RecordedRequest], Reply] | None = None
        """Makes the reply for a request that finds the script empty (None: a 500
        `script_exhausted`): a test that cannot know how many requests come."""

    # ---- public API -----------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL for the Anthropic SDK (it appends `/v1/messages`)."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_url(self) -> str:
        """Base URL for the OpenAI SDK (it appends `/chat/completions`)."""
        return f"http://{self.host}:{self.port}/v1"

    def script(self, *replies: Reply) -> ScriptedLLM:
        """Enqueue replies; each request consumes one, in order."""
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        """Replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Drop the remaining script and the recorded requests."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `n` requests were received (AssertionError on timeout)."""
        with self._request_seen:
            ok = self._request_seen.wait_for(lambda: len(self.requests) >= n, timeout)
            if not ok:
                raise AssertionError(f"expected {n} requests, got {len(self.requests)}")
            return list(self.requests)

    def start(self) -> ScriptedLLM:
        self._thread = threading.Thread(target=self._run, name="scripted-llm", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._start_error is not None:
            raise self._start_error
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._thread is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(5)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        self._thread.join(5)
        self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- server ---------------------------------------------------------------------
    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._on_connection, self.host, 0, limit=2**24)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as e:  # pragma: no cover - reported to start()
            self._start_error = e
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                keep = await self._handle_one(reader, writer)
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass  # server shutdown; swallowed so asyncio does not log the cancelled handler
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, path, _version = [*lines[0].split(" ", 2), "", ""][:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        body = b""
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            body = b"".join(parts)
        parsed: Any = None
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = body.decode("utf-8", "replace")
        with self._request_seen:
            self.requests.append(RecordedRequest(path, headers, parsed, time.monotonic()))
            reply = self._queue.popleft() if self._queue else None
            if reply is None and self.fallback is not None:
                reply = self.fallback(self.requests[-1])
            self._request_seen.notify_all()
        keep_alive = headers.get("connection", "").lower() != "close"

        fmt = _fmt_for(path)
        if method != "POST" or fmt is None:
            await self._send_json(
                writer, 404, {"error": {"message": f"no such endpoint: {method} {path}"}}
            )
            return keep_alive
        if reply is None:
            msg = (
                f"ScriptedLLM: script exhausted ({len(self.requests)} requests received, "
                f"request #{len(self.requests)} has no scripted reply)"
            )
            err = Reply(kind="error", status=500, error_message=msg, error_type="script_exhausted")
            await self._send(
                writer, 500, err.error_body(fmt), "application/json", {"x-should-retry": "false"}
            )
            return keep_alive
        if reply.kind == "error":
            extra = dict(reply.headers)
            if reply.retry_after_ms is not None:
                extra["retry-after-ms"] = str(reply.retry_after_ms)
                extra["retry-after"] = str(max(1, round(reply.retry_after_ms / 1000)))
            await self._send(writer, reply.status, reply.error_body(fmt), "application/json", extra)
            return keep_alive
        model = (
            parsed.get("model", "scripted-model") if isinstance(parsed, dict) else "scripted-model"
        )
        before, after = reply.render(fmt, model)
        if reply.kind == "raw" and reply.status != 200:
            await self._send(
                writer, reply.status, b"".join(before + after), reply.content_type, reply.headers
            )
            return keep_alive
        return await self._stream(reader, writer, reply, before, after, keep_alive)

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        content_type: str,
        extra: dict[str, str] | None = None,
    ) -> None:
        hdrs = {"content-type": content_type, "content-length": str(len(body)), **(extra or {})}
        head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in hdrs.items()
        )
        writer.write(head.encode("latin-1") + b"\r\n" + body)
        await writer.drain()

    async def _send_json(self, writer: asyncio.StreamWriter, status: int, obj: Any) -> None:
        await self._send(writer, status, json.dumps(obj).encode(), "application/json")

    async def _stream(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        reply: Reply,
        before: list[bytes],
        after: list[bytes],
        keep_alive: bool,
    ) -> bool:
        hdrs = {
            "content-type": reply.content_type
            if reply.kind == "raw"
            else "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
            **reply.headers,
        }
        head = "HTTP/1.1 200 OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
        writer.write(head.encode("latin-1") + b"\r\n")

        def frame(data: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(data), data)

        async def send_pieces(pieces: list[bytes]) -> None:
            if not pieces:
                return
            if reply.delay_s > 0 or reply.kind == "raw":
                for p in pieces:
                    writer.write(frame(p))
                    await writer.drain()
                    if reply.delay_s > 0:
                        reply.sent.append((time.monotonic(), p))
                        await asyncio.sleep(reply.delay_s)
            else:
                # Pre-rendered: send in large frames, so 20k deltas cost almost nothing.
                batch: list[bytes] = []
                size = 0
                for p in pieces:
                    batch.append(p)
                    size += len(p)
                    if size >= 65536:
                        writer.write(frame(b"".join(batch)))
                        await writer.drain()
                        batch, size = [], 0
                if batch:
                    writer.write(frame(b"".join(batch)))
                    await writer.drain()

        await send_pieces(before)
        if reply.gate is not None:
            reply.at_gate.set()
            while not reply.gate.is_set():
                await asyncio.sleep(0.005)
                if writer.is_closing() or reader.at_eof():
                    return False
        if reply.end == "cut" and reply.abrupt:
            await asyncio.sleep(0.01)
            transport = writer.transport
            sock = writer.get_extra_info("socket")
            if sock is not None:  # RST instead of FIN: a real connection drop
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
            return False
        await send_pieces(after)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return keep_alive
