"""The conversation as the engine keeps it, independent of any provider's wire format.

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


class Message(BaseModel):
    """One conversation message. `role` is `user` (including tool results) or `assistant`."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    role: Literal["user", "assistant"]
    content: list[ContentBlock]

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


class Usage(BaseModel):
    """Token usage of one model response, as the provider reported it."""

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Everything the model read: fresh input plus cache writes plus cache reads."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
