"""The conversation read back for display (`session/messages`).

Built from the curated history (what the model sees, the same list `session/fork` and
rewinds cut): one entry per user or assistant message, merged user messages split back
into the messages they were made of (`Message.parts`), tool results folded into the
assistant message's tool calls (with a status), `<system-reminder>` blocks the engine
added to a prompt left out.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Literal

from sema_rpc.core.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
)
from sema_rpc.engine.loop.control import CANCEL_MESSAGE
from sema_rpc.engine.store.curated import ORPHANED_TOOL_RESULT, infer_kind, split_parts

if TYPE_CHECKING:
    from sema_rpc.protocol import TranscriptMessage

RESULT_CHARS = 10_000
"""A tool result longer than this is cut in the middle for display."""

_REMINDER = "<system-reminder>"
_INTERRUPTED = (CANCEL_MESSAGE, ORPHANED_TOOL_RESULT)


def prompt_text(blocks: list[Any]) -> str:
    """What the user sent, as the model got it: the text blocks without reminders."""
    return "\n\n".join(
        b.text
        for b in blocks
        if isinstance(b, TextBlock) and not b.text.lstrip().startswith(_REMINDER)
    )


def transcript(history: list[Message]) -> list[TranscriptMessage]:
    from sema_rpc.protocol import TranscriptContent, TranscriptMessage

    results: dict[str, ToolResultBlock] = {
        b.tool_use_id: b
        for m in history
        if m.role == "user"
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }
    out: list[TranscriptMessage] = []
    for message in history:
        if message.role == "assistant":
            out.append(_assistant(message, results))
            continue
        for mid, kind, blocks in split_parts(message):
            texts = [
                TranscriptContent(text=b.text)
                if isinstance(b, TextBlock)
                else TranscriptContent(type="image", media_type=b.source.media_type, path=b.path)
                for b in blocks
                if (isinstance(b, TextBlock) and not b.text.lstrip().startswith(_REMINDER))
                or isinstance(b, ImageBlock)
            ]
            if not texts or mid is None:  # tool results only: folded into their calls
                continue
            out.append(
                TranscriptMessage(
                    id=mid,
                    role="user",
                    content=texts,
                    kind=kind or infer_kind(blocks),
                )
            )
    return out


def _assistant(message: Message, results: dict[str, ToolResultBlock]) -> TranscriptMessage:
    from sema_rpc.protocol import TranscriptContent, TranscriptMessage, TranscriptToolCall

    calls = []
    for use in message.tool_uses():
        result = results.get(use.id)
        status: Literal["completed", "error", "interrupted", "running"]
        if result is None:
            status, text = "running", None
        elif result.content in _INTERRUPTED:
            status, text = "interrupted", result.content
        else:
            status, text = ("error" if result.is_error else "completed"), _cut(result.content)
        calls.append(
            TranscriptToolCall(
                id=use.id,
                name=use.name,
                title=_title(use.name, use.input),
                input=use.input,
                status=status,
                result=text,
            )
        )
    thinking = "".join(b.thinking for b in message.content if isinstance(b, ThinkingBlock))
    return TranscriptMessage(
        id=message.id or "",
        role="assistant",
        content=[
            TranscriptContent(text=b.text) for b in message.content if isinstance(b, TextBlock)
        ],
        thinking=thinking or None,
        tool_calls=calls or None,
    )


def _cut(text: str) -> str:
    if len(text) <= RESULT_CHARS:
        return text
    half = RESULT_CHARS // 2
    return f"{text[:half]}\n[… {len(text) - RESULT_CHARS} characters cut …]\n{text[-half:]}"


def _title(name: str, tool_input: dict[str, Any]) -> str:
    """The title a built-in tool gives the call (as tool:execution:start had it); the
    name for any other tool (MCP, Task, skills) or an input the tool does not accept."""
    tool = _builtin_tools().get(name)
    if tool is None:
        return name
    try:
        return tool.title(tool.Input.model_validate(tool_input))
    except Exception:
        return name


@functools.cache
def _builtin_tools() -> dict[str, Any]:
    from sema_rpc.tools.registry import builtin_tools

    return {t.name: t for t in builtin_tools()}
