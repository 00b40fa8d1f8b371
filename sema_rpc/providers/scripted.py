"""A deterministic in-process provider: replies given in advance, no HTTP, no SDK.

Shipped (not test-only) so that people who embed the engine (engine/api.py) can test
their own workflows without a model or a server, as the project's fast loop tests do:

    provider = ScriptedProvider([
        ScriptedReply.tool_calls(ToolUseBlock(id="c1", name="Read", input={"file_path": "a"})),
        ScriptedReply.text_reply("Done."),
    ])

Each model request takes the next reply in order and streams it as a real provider
would: thinking and text as deltas (one per word, yielding to the event loop between
them, so an interrupt can land mid-stream), then exactly one terminal event. A reply
may be a function of the request (to answer from what the model was sent). When the
script has run out, the stream ends with a `ResponseFailed` (`invalid_request`) — a
value, never an exception, as the Provider contract requires. `requests` keeps every
request received, with a copy of its message list.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable
from dataclasses import dataclass, field

from sema_rpc.core.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ThinkingBlock,
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

_WORDS = re.compile(r"\S+\s*|\s+")


@dataclass
class ScriptedReply:
    """One model response, or one failure (`error` set)."""

    text: str = ""
    thinking: str = ""
    calls: list[ToolUseBlock] = field(default_factory=list)
    stop_reason: StopReason | None = None
    """Default: `tool_use` when there are calls, else `end_turn`."""
    usage: Usage = field(default_factory=Usage)
    """What the provider reports; all zero means "no usage" (the engine counts locally)."""
    error: ProviderError | None = None
    partial_text: str = ""
    """For a failure: text streamed before it."""
    hold: asyncio.Event | None = None
    """When set, the stream waits for this event after its deltas and before the
    terminal event (to interrupt or steer a turn while the model is "still talking")."""

    @classmethod
    def text_reply(cls, text: str, *, usage: Usage | None = None) -> ScriptedReply:
        return cls(text=text, usage=usage or Usage())

    @classmethod
    def tool_calls(
        cls, *calls: ToolUseBlock, text: str = "", usage: Usage | None = None
    ) -> ScriptedReply:
        return cls(text=text, calls=list(calls), usage=usage or Usage())

    @classmethod
    def failure(cls, kind: ErrorKind, message: str, *, partial_text: str = "") -> ScriptedReply:
        return cls(error=ProviderError(kind, message), partial_text=partial_text)

    def message(self) -> Message:
        content: list[ContentBlock] = []
        if self.thinking:
            content.append(ThinkingBlock(thinking=self.thinking))
        if self.text:
            content.append(TextBlock(text=self.text))
        content.extend(c.model_copy(deep=True) for c in self.calls)
        return Message(role="assistant", content=content)


Script = ScriptedReply | Callable[[ModelRequest], ScriptedReply]


class ScriptedProvider:
    """A `Provider` that answers each request with the next scripted reply."""

    name = "scripted"

    def __init__(self, replies: Iterable[Script] = ()) -> None:
        self._replies: deque[Script] = deque(replies)
        self.requests: list[ModelRequest] = []
        self.closed = False

    def add(self, *replies: Script) -> None:
        """Append replies to the script."""
        self._replies.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._replies)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        self.requests.append(request.replace(messages=list(request.messages)))
        if not self._replies:
            yield ResponseFailed(
                ProviderError(
                    "invalid_request",
                    f"scripted provider: no reply left for request {len(self.requests)}",
                )
            )
            return
        script = self._replies.popleft()
        reply = script(request) if callable(script) else script
        if reply.error is not None:
            for word in _WORDS.findall(reply.partial_text):
                await asyncio.sleep(0)
                yield TextDelta(word)
            yield ResponseFailed(reply.error)
            return
        for word in _WORDS.findall(reply.thinking):
            await asyncio.sleep(0)
            yield ThinkingDelta(word)
        for word in _WORDS.findall(reply.text):
            await asyncio.sleep(0)
            yield TextDelta(word)
        if reply.hold is not None:
            await reply.hold.wait()
        await asyncio.sleep(0)
        stop: StopReason = reply.stop_reason or ("tool_use" if reply.calls else "end_turn")
        yield ResponseDone(message=reply.message(), stop_reason=stop, usage=reply.usage)

    async def aclose(self) -> None:
        self.closed = True
