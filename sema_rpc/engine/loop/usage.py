"""Token usage and cost: running totals for a session and for its current turn.

Every model response a session pays for — the main agent's, a subagent's, a compaction
summary's — goes through `metered`, which adds the provider's reported usage to the
session's `UsageMeter`, priced with the price of the profile that answered. Totals are
running sums (constant work per response, whatever the history's length); the session's
totals are stored in its history after each response (`on_change`) and restored on
resume.

Token kinds follow the providers' normalised `Usage`: `input` is input read neither from
nor into the prompt cache, `cache_read` / `cache_write` the cached ones, `output`
everything the model wrote (reasoning included). A cost is known only while every
response that used tokens had a price: one unpriced response makes the total's cost
unknown (None) from then on, never a partial sum passed off as the whole. A response
that failed reports no usage, so it is not counted. A response interrupted after it
began streaming was read and partly written, and is billed so by the provider: it is
counted with an estimate (the request's characters and what it streamed, at
`CHARS_PER_TOKEN`), as no provider reports usage for a stream cut short.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

from sema_rpc.core.catalog import Price
from sema_rpc.core.messages import Usage
from sema_rpc.core.stream import (
    ModelRequest,
    Provider,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from sema_rpc.plain_record import Record

__all__ = ["Totals", "UsageMeter", "metered"]


class Totals(Record):
    # A plain class (every session loads this module; a dataclass costs its creation).
    __slots__ = (
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "input_tokens",
        "output_tokens",
    )
    _fields = (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
    )

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    """None once a response with tokens had no price."""

    def __init__(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        cost_usd: float | None = 0.0,
    ) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cache_read_tokens = cache_read_tokens
        self.cache_write_tokens = cache_write_tokens
        self.cost_usd = cost_usd

    def add(self, usage: Usage, price: Price | None) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_input_tokens
        self.cache_write_tokens += usage.cache_creation_input_tokens
        if self.cost_usd is None:
            return
        if price is None:
            if usage.prompt_tokens or usage.output_tokens:
                self.cost_usd = None
            return
        self.cost_usd += cost_of(usage, price)

    def as_dict(self) -> dict[str, Any]:
        """The wire's and the history's shape (camelCase; cost rounded to 1e-9 USD so
        float noise never shows)."""
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "costUsd": None if self.cost_usd is None else round(self.cost_usd, 9),
        }

    @classmethod
    def from_dict(cls, raw: Any) -> Totals:
        """The inverse of `as_dict`; anything unreadable counts as zero (an old or
        damaged history entry must not stop a resume)."""
        if not isinstance(raw, dict):
            return cls()

        def count(key: str) -> int:
            v = raw.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

        cost = raw.get("costUsd")
        return cls(
            input_tokens=count("inputTokens"),
            output_tokens=count("outputTokens"),
            cache_read_tokens=count("cacheReadTokens"),
            cache_write_tokens=count("cacheWriteTokens"),
            cost_usd=float(cost)
            if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0
            else None,
        )


def cost_of(usage: Usage, price: Price) -> float:
    """USD for one response: each kind of token at its price per million."""
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + usage.cache_creation_input_tokens * price.cache_write
    ) / 1_000_000


class UsageMeter:
    """A session's running totals, and its current turn's."""

    def __init__(self, on_change: Callable[[Totals], None] | None = None) -> None:
        self.session = Totals()
        self.turn = Totals()
        self.on_change = on_change
        """Called with the session totals after each response (persistence). Contract:
        does not raise."""

    def start_turn(self) -> None:
        self.turn = Totals()

    def add(self, usage: Usage, price: Price | None) -> None:
        self.session.add(usage, price)
        self.turn.add(usage, price)
        if self.on_change is not None:
            self.on_change(self.session)

    def restore(self, totals: Totals) -> None:
        self.session = totals


_DELTAS = (TextDelta, ThinkingDelta)


class _Metered:
    """A provider whose complete responses are counted on a meter."""

    def __init__(self, inner: Provider, meter: UsageMeter, price: Price | None) -> None:
        self.inner = inner
        self.meter = meter
        self.price = price
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        streamed: int | None = None
        """Characters streamed so far; None until the first chunk, or once answered."""
        try:
            async with aclosing(self.inner.stream(request)) as events:
                async for event in events:
                    if isinstance(event, _DELTAS):  # first: nearly every event is one
                        streamed = (streamed or 0) + len(event.text)
                    elif isinstance(event, ResponseDone):
                        streamed = None
                        self.meter.add(event.usage, self.price)
                    else:
                        streamed = None  # failed: the provider bills nothing it reports
                    yield event
        finally:
            if streamed is not None:  # cut short (an interrupt) after it began answering
                self.meter.add(interrupted_usage(request, streamed), self.price)

    async def aclose(self) -> None:
        await self.inner.aclose()


def interrupted_usage(request: ModelRequest, streamed_chars: int) -> Usage:
    """An estimate of an interrupted response's usage: the request it read (system,
    tools, messages) and what it streamed before the cut."""
    from sema_rpc.engine.loop.tokens import estimate_tokens

    chars = len(request.system) + sum(
        len(t.name) + len(t.description) + len(str(t.input_schema)) for t in request.tools
    )
    for message in request.messages:
        if isinstance(message.content, str):
            chars += len(message.content)
            continue
        for block in message.content:
            # An image costs about as much as 1,500 tokens of text, whatever its bytes.
            if block.type == "image":
                chars += 6000
            else:  # the block's JSON, as compact as pydantic's `model_dump_json` writes it
                dumped = block.model_dump(mode="json")
                chars += len(json.dumps(dumped, ensure_ascii=False, separators=(",", ":")))
    return Usage(input_tokens=estimate_tokens(chars), output_tokens=estimate_tokens(streamed_chars))


def metered(provider: Provider, meter: UsageMeter, price: Price | None) -> Provider:
    return _Metered(provider, meter, price)
