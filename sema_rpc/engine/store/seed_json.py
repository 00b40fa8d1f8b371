"""The older history format, `$SEMA_ROOT/history/<sessionId>.json`: one JSON object
`{messages, todos}`, messages in Anthropic's shape. Read only: the first load imports it
into the session's JSONL file (`HistoryStore.import_messages`), which then wins.
"""

from __future__ import annotations

import json
from typing import Any

from sema_rpc.core.messages import Message
from sema_rpc.engine.store.curated import append_curated, stable_id
from sema_rpc.engine.store.history_format import HistoryError, LoadedHistory, seed_json_path


def load_seed_json(session_id: str) -> LoadedHistory | None:
    """The session's seed, or None when it has none. Raises HistoryError when it exists
    but cannot be read or is not an object with a `messages` list."""
    path = seed_json_path(session_id)
    try:
        raw = json.loads(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise HistoryError(f"cannot read {path}: {exc}") from exc
    messages = raw.get("messages") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(messages or [], list):
        raise HistoryError(f"{path}: expected an object with `messages` (a list) and `todos`")
    out = LoadedHistory(source="json")
    curated: list[Message] = []
    for item in messages or []:
        message = import_message(item)
        if message is None:
            out.skipped += 1
            continue
        out.message_count += 1
        message.id = stable_id(session_id, f"j{out.message_count}")
        append_curated(curated, message)
    out.messages = curated
    todos = raw.get("todos")
    if isinstance(todos, list):
        out.todos = [t for t in todos if isinstance(t, dict)]
    return out


_KNOWN_BLOCKS = {"text", "image", "thinking", "redacted_thinking", "tool_use", "tool_result"}


def import_message(item: Any) -> Message | None:
    """A message in Anthropic's shape (`{role, content}`, content a string or blocks),
    possibly wrapped as `{type, message: {role, content}}`; unknown blocks are dropped."""
    if isinstance(item, dict) and isinstance(item.get("message"), dict):
        item = item["message"]
    if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
        return None
    content = item.get("content")
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        blocks = []
        for block in content:
            if not isinstance(block, dict) or block.get("type") not in _KNOWN_BLOCKS:
                continue
            if block["type"] == "image" and not _base64_image(block):
                continue  # an image by URL or file id cannot be sent again as it is
            if block["type"] == "tool_result" and not isinstance(block.get("content"), str):
                parts = block.get("content")
                parts = parts if isinstance(parts, list) else []
                text = "".join(
                    p["text"]
                    for p in parts
                    if isinstance(p, dict)
                    and p.get("type") == "text"
                    and isinstance(p.get("text"), str)
                )
                block = {**block, "content": text}
            blocks.append(block)
    else:
        return None
    if not blocks:
        return None
    try:
        return Message.model_validate({"role": item["role"], "content": blocks})
    except ValueError:  # pydantic's ValidationError: a message of an unknown shape
        return None


def _base64_image(block: dict[str, Any]) -> bool:
    source = block.get("source")
    return (
        isinstance(source, dict)
        and source.get("type") == "base64"
        and isinstance(source.get("media_type"), str)
        and isinstance(source.get("data"), str)
    )
