"""Helpers for the provider tests."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_rpc.core.messages import Message
from sema_rpc.core.stream import (
    ModelRequest,
    Provider,
    ResponseDone,
    ResponseFailed,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)


def shared_dir() -> Path:
    env = os.environ.get("SEMA_SHARED_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared"


CASSETTES = shared_dir() / "cassettes"

# The recorded streams are a requirement, not an option: a missing folder must fail loudly.
assert CASSETTES.is_dir(), f"recorded cassettes not found at {CASSETTES} (set SEMA_SHARED_DIR)"

ANTHROPIC = sorted(p.stem for p in CASSETTES.glob("anthropic_*.sse"))
"""The recorded Anthropic Messages streams."""
CHAT = sorted(
    p.stem
    for pattern in (
        "openai_chat_*.sse",
        "azure_*.sse",
        "deepseek_*.sse",
        "openrouter_*.sse",
        "groq_*.sse",
    )
    for p in CASSETTES.glob(pattern)
)
"""The recorded Chat Completions streams (OpenAI and compatible servers)."""
CHAT_ERRORS = {"groq_chat_error_1", "openrouter_chat_error_1"}


def expected(name: str) -> dict[str, Any]:
    """What the official SDK assembled from cassette `name`."""
    return json.loads((CASSETTES / "expected" / f"{name}.json").read_text())


def request(text: str = "hi", **kw: object) -> ModelRequest:
    return ModelRequest(
        model=str(kw.pop("model", "test-model")),
        system="You are a test.",
        messages=[Message.user_text(text)],
        **kw,  # type: ignore[arg-type]
    )


@dataclass
class Collected:
    events: list[StreamEvent] = field(default_factory=list)

    @property
    def terminal(self) -> ResponseDone | ResponseFailed:
        last = self.events[-1]
        assert isinstance(last, ResponseDone | ResponseFailed), last
        return last

    @property
    def done(self) -> ResponseDone:
        t = self.terminal
        assert isinstance(t, ResponseDone), t
        return t

    @property
    def failed(self) -> ResponseFailed:
        t = self.terminal
        assert isinstance(t, ResponseFailed), t
        return t

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))

    @property
    def thinking(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ThinkingDelta))


async def collect(provider: Provider, req: ModelRequest | None = None) -> Collected:
    c = Collected()
    async for ev in provider.stream(req or request()):
        c.events.append(ev)
    terminals = [e for e in c.events if isinstance(e, ResponseDone | ResponseFailed)]
    assert len(terminals) == 1 and terminals[0] is c.events[-1], "exactly one terminal event, last"
    return c
