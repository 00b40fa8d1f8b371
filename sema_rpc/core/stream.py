"""The one streaming interface every model provider implements.

A provider turns a `ModelRequest` into an async stream of `StreamEvent`s. The stream
always ends with exactly one terminal event: `ResponseDone` (a complete assistant
message) or `ResponseFailed` (a normalised error). Providers never raise for API,
network or protocol failures; an exception escaping `stream()` is a bug.

Deltas are emitted as they arrive and never accumulated into the events: the final
text is assembled once, in `ResponseDone.message`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Literal, Protocol

from sema_rpc.core.messages import Message, Usage
from sema_rpc.core.secrets import redact
from sema_rpc.plain_record import Record, fields_eq, fields_repr

StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"]

ErrorKind = Literal[
    "rate_limit",  # 429 after the SDK's retries
    "overloaded",  # 529 / overloaded_error
    "server_error",  # 5xx after retries
    "connection",  # could not connect / timed out
    "authentication",  # 401 / 403
    "invalid_request",  # 400 and friends: the request itself is wrong
    "context_length_exceeded",  # the prompt does not fit the model's window
    "stream_error",  # an error event inside a 200 stream
    "stream_cut",  # the stream ended without a stop reason
    "idle_timeout",  # the server sent nothing for the stream idle timeout
    "not_found",  # unknown model / endpoint
]


# Plain classes rather than dataclasses: every server loads this module, and a dataclass
# costs its creation. A copy with changes: `request.replace(messages=...)`.


class ToolSpec(Record):
    __slots__ = ("description", "input_schema", "name")
    _fields = ("name", "description", "input_schema")

    name: str
    description: str
    input_schema: dict[str, Any]

    def __init__(self, name: str, description: str, input_schema: dict[str, Any]) -> None:
        self.name = name
        self.description = description
        self.input_schema = input_schema


class ModelRequest(Record):
    __slots__ = (
        "max_tokens",
        "messages",
        "model",
        "system",
        "temperature",
        "thinking_budget",
        "tools",
    )
    _fields = (
        "model",
        "system",
        "messages",
        "tools",
        "max_tokens",
        "thinking_budget",
        "temperature",
    )

    model: str
    """The provider's own model id, without the `provider/` prefix."""
    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    max_tokens: int
    thinking_budget: int | None
    """Anthropic extended thinking budget; None disables thinking."""
    temperature: float | None

    def __init__(
        self,
        model: str,
        system: str,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        max_tokens: int = 8192,
        thinking_budget: int | None = None,
        temperature: float | None = None,
    ) -> None:
        self.model = model
        self.system = system
        self.messages = messages
        self.tools = [] if tools is None else tools
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.temperature = temperature


# The deltas are built once per streamed chunk: `__init__` sets the field and nothing else,
# and no Python base class adds to their deallocation (plain_record.py).


class TextDelta:
    __slots__ = ("text",)
    _fields = ("text",)
    __eq__ = fields_eq
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value
    __repr__ = fields_repr

    text: str

    def __init__(self, text: str) -> None:
        self.text = text


class ThinkingDelta:
    __slots__ = ("text",)
    _fields = ("text",)
    __eq__ = fields_eq
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value
    __repr__ = fields_repr

    text: str

    def __init__(self, text: str) -> None:
        self.text = text


class ResponseDone(Record):
    __slots__ = ("message", "raw_tool_inputs", "stop_reason", "usage")
    _fields = ("message", "stop_reason", "usage", "raw_tool_inputs")

    message: Message
    stop_reason: StopReason
    usage: Usage
    raw_tool_inputs: dict[str, str]
    """tool_use id → the raw argument text, only for calls whose arguments were not valid
    JSON (typically cut by max_tokens). Their `input` holds a best-effort partial parse
    (possibly `{}`): the engine should not run them as if complete."""

    def __init__(
        self,
        message: Message,
        stop_reason: StopReason,
        usage: Usage,
        raw_tool_inputs: dict[str, str] | None = None,
    ) -> None:
        self.message = message
        self.stop_reason = stop_reason
        self.usage = usage
        self.raw_tool_inputs = {} if raw_tool_inputs is None else raw_tool_inputs


class ProviderError(Record):
    __slots__ = ("code", "kind", "message", "status")
    _fields = ("kind", "message", "status", "code")

    kind: ErrorKind
    message: str
    status: int | None
    code: str | None
    """The provider's own error type/code when it gave one (e.g. `overloaded_error`)."""

    def __init__(
        self, kind: ErrorKind, message: str, status: int | None = None, code: str | None = None
    ) -> None:
        self.kind = kind
        # A provider may echo the key it was sent (`invalid x-api-key: sk-…`): the message
        # goes to the client, to a subagent's result and so to the history.
        self.message = redact(message)
        self.status = status
        self.code = code


class ResponseFailed:
    """The response failed. What had streamed before it reached the consumer as deltas;
    nothing of it joins the history."""

    __slots__ = ("error",)
    _fields = ("error",)
    __eq__ = fields_eq
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value
    __repr__ = fields_repr

    error: ProviderError

    def __init__(self, error: ProviderError) -> None:
        self.error = error


StreamEvent = TextDelta | ThinkingDelta | ResponseDone | ResponseFailed
"""Tool calls are not streamed as events: a call is only usable once its arguments are
whole, and they arrive whole in `ResponseDone.message`."""


class Provider(Protocol):
    """A configured connection to one provider (one API key / base URL)."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]: ...

    async def aclose(self) -> None: ...
