"""The conversation's pydantic declarations: the source of truth for `core/messages.py`,
fields only (the methods are the plain classes').

The engine runs on the plain classes of `core/messages.py` (no pydantic on its path);
this module is imported only when an input is not plainly valid (its validation decides,
and its `ValidationError` is the error) and by the tests that hold the plain classes to it.
Content blocks follow Anthropic's shapes because they are the richest (thinking with
signatures, redacted thinking, tool_use / tool_result pairs); the OpenAI providers
translate to and from them. These objects are what history files store, one message
per line.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Block(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


class TextBlock(_Block):
    type: Literal["text"] = "text"
    text: str


class ImageSource(_Block):
    type: Literal["base64"] = "base64"
    media_type: str
    """image/png | image/jpeg | image/gif | image/webp (checked against the bytes on input)."""
    data: str
    """The image's bytes, base64-encoded."""


class ImageBlock(_Block):
    """An image in a user message (prompt input). Stored in the history with its bytes,
    so a resumed session sends the same image again."""

    type: Literal["image"] = "image"
    source: ImageSource
    path: str | None = None
    """The workspace path it was read from (relative to the workspace), when the input
    named a file: for display only, never sent to a model."""


class ThinkingBlock(_Block):
    type: Literal["thinking"] = "thinking"
    thinking: str
    # Anthropic requires the signature back verbatim when thinking precedes a tool_use.
    signature: str | None = None
    # OpenAI Responses reasoning item: its id and the opaque `encrypted_content` that must
    # go back (with `store=false`) for the model to keep its reasoning across tool calls.
    item_id: str | None = None
    encrypted_content: str | None = None


class RedactedThinkingBlock(_Block):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolUseBlock(_Block):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(_Block):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False


ContentBlock = Annotated[
    TextBlock | ImageBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock,
    Field(discriminator="type"),
]


MessageKind = Literal["prompt", "summary", "notice"]
"""What a user message is: a prompt's input (what the user sent, also a steer), the head
a compaction put in place of the older history, or a note the engine added (an interrupt).
Tool-result messages have no kind."""


class MessagePart(BaseModel):
    """A user message merged into the one before it (`append_curated`): its own id and
    kind, and the index in `content` of its first block. Keeps every prompt addressable
    although the curated history merges consecutive user messages."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    id: str
    at: int
    kind: MessageKind | None = None


class Message(BaseModel):
    """One conversation message. `role` is `user` (including tool results) or `assistant`.

    `id` is given by the engine when the message enters the curated history (see
    `new_message_id`) and stored with it; `parts` lists the user messages merged into
    this one after the first."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    role: Literal["user", "assistant"]
    content: list[ContentBlock]
    id: str | None = None
    kind: MessageKind | None = None
    parts: list[MessagePart] | None = None


class Usage(BaseModel):
    """Token usage of one model response, as the provider reported it."""

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
