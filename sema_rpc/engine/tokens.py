"""Token estimates for what the provider did not count (seed 002: API usage first)."""

from __future__ import annotations

from sema_rpc.engine.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

CHARS_PER_TOKEN = 2.5


def message_chars(message: Message) -> int:
    total = 0
    for block in message.content:
        if isinstance(block, TextBlock):
            total += len(block.text)
        elif isinstance(block, ThinkingBlock):
            total += len(block.thinking)
        elif isinstance(block, ToolResultBlock):
            total += len(block.content)
        elif isinstance(block, ToolUseBlock):
            total += len(block.name) + len(str(block.input))
        elif isinstance(block, RedactedThinkingBlock):
            total += len(block.data) // 4
    return total


def estimate_message_tokens(message: Message) -> int:
    return int(message_chars(message) / CHARS_PER_TOKEN) + 4
