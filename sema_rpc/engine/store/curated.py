"""The curated history (what the model sees) as a list of messages: how a message joins
it, how one merged into another is found again, where a rewind cuts it.

The loop and the loader (`history_reader`) share these, so both build the same list.
"""

from __future__ import annotations

import hashlib

from sema_rpc.core.messages import (
    ContentBlock,
    Message,
    MessagePart,
    TextBlock,
    ToolResultBlock,
    new_message_id,
)
from sema_rpc.engine.store.titles import TITLE_CHARS

ORPHANED_TOOL_RESULT = (
    "[The session ended before this tool call finished; it may or may not have run.]"
)


def append_curated(history: list[Message], message: Message) -> None:
    """Append to a curated history, merging consecutive user messages (providers require
    alternating roles). The loop and the loader share this, so both build the same list.

    The merged message keeps the first one's id and kind; the later one (and the parts it
    had) are listed in `parts` with the index of their first block, so each stays
    addressable (`cut_before`, the transcript)."""
    if message.role == "user" and history and history[-1].role == "user":
        last = history[-1]
        offset = len(last.content)
        parts = list(last.parts or ())
        if message.id is not None:
            parts.append(MessagePart(id=message.id, at=offset, kind=message.kind))
        parts += [MessagePart(id=p.id, at=p.at + offset, kind=p.kind) for p in message.parts or ()]
        history[-1] = Message(
            role="user",
            content=[*last.content, *message.content],
            id=last.id,
            kind=last.kind,
            parts=parts or None,
        )
    else:
        history.append(message)


def split_parts(message: Message) -> list[tuple[str | None, str | None, list[ContentBlock]]]:
    """A (possibly merged) message as the messages it was made of: (id, kind, blocks)."""
    if not message.parts:
        return [(message.id, message.kind, list(message.content))]
    out: list[tuple[str | None, str | None, list[ContentBlock]]] = []
    starts = [(message.id, message.kind, 0)] + [(p.id, p.kind, p.at) for p in message.parts]
    for i, (mid, kind, at) in enumerate(starts):
        end = starts[i + 1][2] if i + 1 < len(starts) else len(message.content)
        out.append((mid, kind, list(message.content[at:end])))
    return out


def find_message(history: list[Message], message_id: str) -> tuple[int, int] | None:
    """(index in `history`, index of its first block) of the message with that id, also
    one merged into another; None when the history holds none."""
    for i in range(len(history) - 1, -1, -1):  # recent ones are asked for most
        message = history[i]
        if message.id == message_id:
            return i, 0
        for part in message.parts or ():
            if part.id == message_id:
                return i, part.at
    return None


class Located:
    """One message of a curated history, also one merged into another."""

    # A plain class (every session loads this module; a dataclass costs its creation).
    __slots__ = ("blocks", "index", "kind", "role")

    def __init__(self, index: int, role: str, kind: str | None, blocks: list[ContentBlock]) -> None:
        self.index = index
        """Its place in the history (the merged message's, for a part)."""
        self.role = role
        self.kind = kind
        """`prompt`, `summary`, `notice` (inferred for messages written before kinds
        were stored); None for tool results and assistant messages."""
        self.blocks = blocks
        """Its own blocks."""


def locate(history: list[Message], message_id: str) -> Located | None:
    found = find_message(history, message_id)
    if found is None:
        return None
    message = history[found[0]]
    for mid, kind, blocks in split_parts(message):
        if mid == message_id:
            if message.role != "user":
                return Located(found[0], message.role, None, blocks)
            return Located(found[0], message.role, kind or infer_kind(blocks), blocks)
    return None  # pragma: no cover - find_message found it


def message_kind(history: list[Message], message_id: str) -> str | None:
    """The kind of the message with that id (see `Located.kind`). Raises KeyError when
    there is none."""
    found = locate(history, message_id)
    if found is None:
        raise KeyError(message_id)
    return found.kind


def infer_kind(blocks: list[ContentBlock]) -> str | None:
    """The kind of a user message written before kinds were stored."""
    from sema_rpc.engine.loop.compaction import SUMMARY_HEADER, TRUNCATION_NOTICE
    from sema_rpc.engine.loop.control import INTERRUPT_MESSAGE

    texts = [b.text for b in blocks if isinstance(b, TextBlock)]
    if not texts:
        return None
    if texts[0].startswith(SUMMARY_HEADER) or texts[0] == TRUNCATION_NOTICE:
        return "summary"
    if all(t == INTERRUPT_MESSAGE for t in texts):
        return "notice"
    return "prompt"


def cut_before(history: list[Message], message_id: str) -> list[Message]:
    """The curated history just before the message with that id was added: a new list
    (the messages in it are shared, not copied). Raises KeyError when there is none."""
    found = find_message(history, message_id)
    if found is None:
        raise KeyError(message_id)
    i, at = found
    out = history[:i]
    if at > 0:  # merged into history[i]: keep what came before it
        merged = history[i]
        parts = [p for p in merged.parts or () if p.at < at]
        out.append(
            Message(
                role=merged.role,
                content=list(merged.content[:at]),
                id=merged.id,
                kind=merged.kind,
                parts=parts or None,
            )
        )
    return out


def stable_id(session_id: str, where: str) -> str:
    """The id of a message written before ids were stored: derived from the session and
    the message's place in the file, so it is the same at every load."""
    digest = hashlib.sha256(f"{session_id}/{where}".encode()).hexdigest()
    return "m_" + digest[:12]


def dangling_tool_results(history: list[Message]) -> Message | None:
    """A tool-result message for tool calls the history leaves unanswered at its end
    (the process died while they ran), or None."""
    if not history or history[-1].role != "assistant":
        return None
    uses = history[-1].tool_uses()
    if not uses:
        return None
    return Message(
        role="user",
        content=[
            ToolResultBlock(tool_use_id=u.id, content=ORPHANED_TOOL_RESULT, is_error=True)
            for u in uses
        ],
        id=new_message_id(),
    )


def message_title(message: Message) -> str | None:
    for block in message.content:
        if isinstance(block, TextBlock) and block.text.strip():
            line = " ".join(block.text.split())
            return line[:TITLE_CHARS]
    return None
