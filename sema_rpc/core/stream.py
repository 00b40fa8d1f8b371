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
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sema_rpc.core.messages import Message, Usage
from sema_rpc.core.secrets import redact

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


@dataclass(slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(slots=True)
class ModelRequest:
    model: str
    """The provider's own model id, without the `provider/` prefix."""
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 8192
    thinking_budget: int | None = None
    """Anthropic extended thinking budget; None disables thinking."""
    temperature: float | None = None


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ThinkingDelta:
    text: str


@dataclass(slots=True)
class ResponseDone:
    message: Message
    stop_reason: StopReason
    usage: Usage
    raw_tool_inputs: dict[str, str] = field(default_factory=dict)
    """tool_use id → the raw argument text, only for calls whose arguments were not valid
    JSON (typically cut by max_tokens). Their `input` holds a best-effort partial parse
    (possibly `{}`): the engine should not run them as if complete."""


@dataclass(slots=True)
class ProviderError:
    kind: ErrorKind
    message: str
    status: int | None = None
    code: str | None = None
    """The provider's own error type/code when it gave one (e.g. `overloaded_error`)."""

    def __post_init__(self) -> None:
        # A provider may echo the key it was sent (`invalid x-api-key: sk-…`): the message
        # goes to the client, to a subagent's result and so to the history.
        self.message = redact(self.message)


@dataclass(slots=True)
class ResponseFailed:
    """The response failed. What had streamed before it reached the consumer as deltas;
    nothing of it joins the history."""

    error: ProviderError


StreamEvent = TextDelta | ThinkingDelta | ResponseDone | ResponseFailed
"""Tool calls are not streamed as events: a call is only usable once its arguments are
whole, and they arrive whole in `ResponseDone.message`."""


class Provider(Protocol):
    """A configured connection to one provider (one API key / base URL)."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]: ...

    async def aclose(self) -> None: ...
