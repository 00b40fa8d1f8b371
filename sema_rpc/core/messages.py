"""The conversation as the engine keeps it, independent of any provider's wire format.

Content blocks follow Anthropic's shapes because they are the richest (thinking with
signatures, redacted thinking, tool_use / tool_result pairs); the OpenAI providers
translate to and from them. These objects are what history files store, one message
per line.

They are plain models (`sema_rpc.plain_model`): each class holds a table of its fields,
written by hand from its pydantic declaration in `core/messages_schema.py`, which stays
the source of truth. Plainly valid input (what the providers and the history writer
produce) is built from the table without importing pydantic; anything else (a value to
coerce, a corrupt history line) is validated by the declaration, so an error is
pydantic's `ValidationError` (a `ValueError`) as before. tests/core/test_messages_plain.py
holds each table to its declaration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from sema_rpc.core.ids import random_hex
from sema_rpc.plain_checks import (
    check_bool,
    check_dict,
    check_int,
    check_list,
    check_literal,
    check_model,
    check_optional,
    check_str,
    check_tagged,
)
from sema_rpc.plain_model import Field, PlainModel

_SCHEMA = "sema_rpc.core.messages_schema"

_optional_str = check_optional(check_str)


def _tag(name: str) -> Field:
    """A block's `type`: its literal tag, also its default."""
    return Field("type", check_literal(name), default=name, scalar=True)


class TextBlock(PlainModel):
    __plain_source__ = f"{_SCHEMA}:TextBlock"
    __plain_fields__ = (_tag("text"), Field("text", check_str, scalar=True))

    type: Literal["text"]
    text: str

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(self, *, type: Literal["text"] = ..., text: str) -> None: ...


class ImageSource(PlainModel):
    __plain_source__ = f"{_SCHEMA}:ImageSource"
    __plain_fields__ = (
        _tag("base64"),
        Field("media_type", check_str, scalar=True),
        Field("data", check_str, scalar=True),
    )

    type: Literal["base64"]
    media_type: str
    """image/png | image/jpeg | image/gif | image/webp (checked against the bytes on input)."""
    data: str
    """The image's bytes, base64-encoded."""

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(
            self, *, type: Literal["base64"] = ..., media_type: str, data: str
        ) -> None: ...


class ImageBlock(PlainModel):
    """An image in a user message (prompt input). Stored in the history with its bytes,
    so a resumed session sends the same image again."""

    __plain_source__ = f"{_SCHEMA}:ImageBlock"
    __plain_fields__ = (
        _tag("image"),
        Field("source", check_model(lambda: ImageSource)),
        Field("path", _optional_str, default=None, scalar=True),
    )

    type: Literal["image"]
    source: ImageSource
    path: str | None
    """The workspace path it was read from (relative to the workspace), when the input
    named a file: for display only, never sent to a model."""

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(
            self, *, type: Literal["image"] = ..., source: ImageSource, path: str | None = ...
        ) -> None: ...


class ThinkingBlock(PlainModel):
    __plain_source__ = f"{_SCHEMA}:ThinkingBlock"
    __plain_fields__ = (
        _tag("thinking"),
        Field("thinking", check_str, scalar=True),
        Field("signature", _optional_str, default=None, scalar=True),
        Field("item_id", _optional_str, default=None, scalar=True),
        Field("encrypted_content", _optional_str, default=None, scalar=True),
    )

    type: Literal["thinking"]
    thinking: str
    # Anthropic requires the signature back verbatim when thinking precedes a tool_use.
    signature: str | None
    # OpenAI Responses reasoning item: its id and the opaque `encrypted_content` that must
    # go back (with `store=false`) for the model to keep its reasoning across tool calls.
    item_id: str | None
    encrypted_content: str | None

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(
            self,
            *,
            type: Literal["thinking"] = ...,
            thinking: str,
            signature: str | None = ...,
            item_id: str | None = ...,
            encrypted_content: str | None = ...,
        ) -> None: ...


class RedactedThinkingBlock(PlainModel):
    __plain_source__ = f"{_SCHEMA}:RedactedThinkingBlock"
    __plain_fields__ = (_tag("redacted_thinking"), Field("data", check_str, scalar=True))

    type: Literal["redacted_thinking"]
    data: str

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(self, *, type: Literal["redacted_thinking"] = ..., data: str) -> None: ...


class ToolUseBlock(PlainModel):
    __plain_source__ = f"{_SCHEMA}:ToolUseBlock"
    __plain_fields__ = (
        _tag("tool_use"),
        Field("id", check_str, scalar=True),
        Field("name", check_str, scalar=True),
        Field("input", check_dict(), factory=dict),
    )

    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(
            self,
            *,
            type: Literal["tool_use"] = ...,
            id: str,
            name: str,
            input: dict[str, Any] = ...,
        ) -> None: ...


class ToolResultBlock(PlainModel):
    __plain_source__ = f"{_SCHEMA}:ToolResultBlock"
    __plain_fields__ = (
        _tag("tool_result"),
        Field("tool_use_id", check_str, scalar=True),
        Field("content", check_str, scalar=True),
        Field("is_error", check_bool, default=False, scalar=True),
    )

    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: bool

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(
            self,
            *,
            type: Literal["tool_result"] = ...,
            tool_use_id: str,
            content: str,
            is_error: bool = ...,
        ) -> None: ...


ContentBlock: TypeAlias = (
    TextBlock | ImageBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock
)
"""A content block; told apart by its `type` (the declaration's discriminated union)."""

_BLOCKS: dict[str, type[PlainModel]] = {
    "text": TextBlock,
    "image": ImageBlock,
    "thinking": ThinkingBlock,
    "redacted_thinking": RedactedThinkingBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
}


MessageKind = Literal["prompt", "summary", "notice"]
"""What a user message is: a prompt's input (what the user sent, also a steer), the head
a compaction put in place of the older history, or a note the engine added (an interrupt).
Tool-result messages have no kind."""

_check_kind = check_optional(check_literal("prompt", "summary", "notice"))


def new_message_id() -> str:
    """A fresh message id: `m_` and 12 hex characters."""
    return "m_" + random_hex(12)


class MessagePart(PlainModel):
    """A user message merged into the one before it (`append_curated`): its own id and
    kind, and the index in `content` of its first block. Keeps every prompt addressable
    although the curated history merges consecutive user messages."""

    __plain_source__ = f"{_SCHEMA}:MessagePart"
    __plain_fields__ = (
        Field("id", check_str, scalar=True),
        Field("at", check_int, scalar=True),
        Field("kind", _check_kind, default=None, scalar=True),
    )

    id: str
    at: int
    kind: MessageKind | None

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(self, *, id: str, at: int, kind: MessageKind | None = ...) -> None: ...


class Message(PlainModel):
    """One conversation message. `role` is `user` (including tool results) or `assistant`.

    `id` is given by the engine when the message enters the curated history (see
    `new_message_id`) and stored with it; `parts` lists the user messages merged into
    this one after the first."""

    __plain_source__ = f"{_SCHEMA}:Message"
    __plain_fields__ = (
        Field("role", check_literal("user", "assistant"), scalar=True),
        Field("content", check_list(check_tagged("type", lambda: _BLOCKS))),
        Field("id", _optional_str, default=None, scalar=True),
        Field("kind", _check_kind, default=None, scalar=True),
        Field("parts", check_optional(check_list(check_model(lambda: MessagePart))), default=None),
    )

    role: Literal["user", "assistant"]
    content: list[ContentBlock]
    id: str | None
    kind: MessageKind | None
    parts: list[MessagePart] | None

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(
            self,
            *,
            role: Literal["user", "assistant"],
            content: Sequence[ContentBlock],
            id: str | None = ...,
            kind: MessageKind | None = ...,
            parts: list[MessagePart] | None = ...,
        ) -> None: ...

    @classmethod
    def user_text(cls, text: str) -> Message:
        return cls(role="user", content=[TextBlock(text=text)])

    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def thinking(self) -> str:
        return "".join(b.thinking for b in self.content if isinstance(b, ThinkingBlock))

    def images(self) -> list[ImageBlock]:
        return [b for b in self.content if isinstance(b, ImageBlock)]

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


class Usage(PlainModel):
    """Token usage of one model response, as the provider reported it."""

    __plain_source__ = f"{_SCHEMA}:Usage"
    __plain_fields__ = (
        Field("input_tokens", check_int, default=0, scalar=True),
        Field("output_tokens", check_int, default=0, scalar=True),
        Field("cache_creation_input_tokens", check_int, default=0, scalar=True),
        Field("cache_read_input_tokens", check_int, default=0, scalar=True),
    )

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int

    if TYPE_CHECKING:  # the declaration's keywords, for the type checker

        def __init__(
            self,
            *,
            input_tokens: int = ...,
            output_tokens: int = ...,
            cache_creation_input_tokens: int = ...,
            cache_read_input_tokens: int = ...,
        ) -> None: ...

    @property
    def prompt_tokens(self) -> int:
        """Everything the model read: fresh input plus cache writes plus cache reads."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
