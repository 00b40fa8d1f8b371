"""`session/load`: the whole conversation on disk as `session/update` notifications.

Every message of the full history (compaction and `/clear` do not hide earlier ones):
what the user typed as `user_message_chunk` (each chunk with its message's `messageId`) (the engine's own context blocks, the
`<system-reminder>`s, are not the user's words and are left out), the answers as
`agent_message_chunk` / `agent_thought_chunk`, and each tool call as one `tool_call`
carrying its final status (`completed` / `failed`) and result.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sema_rpc.acp import translate
from sema_rpc.core.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

log = logging.getLogger(__name__)


def _messages(session_id: str) -> list[Message]:
    """Every message on disk, in order, as the conversation stands: a rewind of the
    conversation drops the messages from the one it went back to (a redo puts them
    back); compaction and `/clear` drop nothing (the client shows the whole talk)."""
    from sema_rpc.engine.store.history_reader import conversation

    return conversation(session_id)


def _index_of(messages: list[Message], message_id: str) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].id == message_id:
            return i
    return None


def next_prompt_after(session_id: str, message_id: str) -> tuple[bool, str | None]:
    """JetBrains' inclusive fork point: whether `message_id` is in the conversation, and
    the id of the first user prompt after it (None: the fork keeps everything). Blocking."""
    from sema_rpc.engine.store.curated import infer_kind

    messages = _messages(session_id)
    at = _index_of(messages, message_id)
    if at is None:
        return False, None
    for message in messages[at + 1 :]:
        kind: str | None = message.kind
        if kind is None and message.role == "user":
            content = message.content
            kind = "prompt" if isinstance(content, str) else infer_kind(content)
        if kind == "prompt":
            return True, message.id
    return True, None


def _title(name: str, args: dict[str, Any]) -> str:
    from sema_rpc.tools.registry import builtin_tools

    for tool in builtin_tools():
        if tool.name == name:
            try:
                return tool.title(tool.Input.model_validate(args))
            except Exception:
                return name
    return name


def _result_text(block: ToolResultBlock) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)


def replay_updates(session_id: str, cwd: Path) -> list[dict[str, Any]]:
    """The updates, in conversation order. Blocking (reads the file): use a thread."""
    messages = _messages(session_id)
    results: dict[str, ToolResultBlock] = {}
    for message in messages:
        if message.role == "user" and not isinstance(message.content, str):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    results[block.tool_use_id] = block
    updates: list[dict[str, Any]] = []
    for message in messages:
        blocks = (
            [TextBlock(text=message.content)]
            if isinstance(message.content, str)
            else message.content
        )
        for block in blocks:
            if isinstance(block, TextBlock):
                if message.role == "user":
                    if block.text.lstrip().startswith("<system-reminder>"):
                        continue
                    updates.append(_chunk("user_message_chunk", block.text, message.id))
                else:
                    updates.append(_chunk("agent_message_chunk", block.text, message.id))
            elif isinstance(block, ThinkingBlock) and message.role == "assistant":
                updates.append(_chunk("agent_thought_chunk", block.thinking, message.id))
            elif isinstance(block, ToolUseBlock):
                result = results.get(block.id)
                status = "failed" if result is None or result.is_error else "completed"
                update = translate.tool_call(
                    block.id,
                    block.name,
                    _title(block.name, block.input),
                    block.input,
                    cwd,
                    status,
                    before=False,
                )
                if result is not None:
                    text = translate.clipped(_result_text(result))
                    update["rawOutput"] = {"content": text}
                    if block.name not in ("Write", "Edit") or result.is_error:
                        update["content"] = [translate.text_content(text)]
                updates.append(update)
    return updates


def _chunk(kind: str, text: str, message_id: str | None) -> dict[str, Any]:
    chunk: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:  # what `session/fork` and `_session/rewind` take
        chunk["messageId"] = message_id
    return chunk
