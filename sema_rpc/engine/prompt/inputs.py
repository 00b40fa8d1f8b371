"""Prompt input as content: what `session/prompt`'s `input` becomes before the pipeline.

An input is a string, or a list of blocks:

- `{type: "text", text}`: typed text (custom commands and @references work in it);
- `{type: "image", data, mediaType}` or `{type: "image", path}`: PNG, JPEG, GIF or WebP.
  A path is resolved like the tools' paths (relative to the workspace, symlinks
  followed) and must stay inside the workspace. The media type is read from the bytes
  (a declared `mediaType` that disagrees with them is corrected); anything else is
  refused, as is an image over `MAX_IMAGE_BYTES`: an image the provider rejects would
  sit in the history and fail every later request of the session;
- `{type: "resource", uri, text?, mimeType?}`: a file's content for the model, `text`
  as given, else read from a `file://` uri inside the workspace (text files only, up to
  `MAX_RESOURCE_BYTES`).

Every refusal is an `InvalidArgument` raised before anything runs: nothing joins the
history. Engine blocks (`TextBlock`, `ImageBlock`) pass through unchanged, so in-process
callers can hand over content they built themselves.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from sema_rpc.core.errors import InvalidArgument
from sema_rpc.core.messages import ContentBlock, ImageBlock, ImageSource, TextBlock
from sema_rpc.core.policy.paths import display_path, is_inside, resolve_path
from sema_rpc.plain_record import FrozenRecord

MAX_IMAGE_BYTES = 3_932_160
"""One image's size limit: 3.75 MiB, which is 5 MiB as base64 (the smallest per-image
limit of the supported providers, Anthropic's)."""
MAX_IMAGES = 20
"""Images in one input."""
MAX_RESOURCE_BYTES = 256 * 1024
"""A resource file the server reads (the Read tool's limit)."""

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}
_RESOURCE_TAG = "<resource "


def sniff_image(head: bytes) -> str | None:
    """The media type of an image from its first bytes; None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


class PromptContent(FrozenRecord):
    """One input as engine content."""

    # A plain class (every session loads this module; a dataclass costs its creation).
    __slots__ = ("blocks", "text")
    _fields = ("blocks", "text")

    blocks: list[ContentBlock]
    text: str
    """The typed text (text blocks joined by newlines): what slash commands, the
    session's title and the project's input history see."""

    def __init__(self, blocks: list[ContentBlock], text: str) -> None:
        object.__setattr__(self, "blocks", blocks)
        object.__setattr__(self, "text", text)

    @property
    def images(self) -> list[ImageBlock]:
        return [b for b in self.blocks if isinstance(b, ImageBlock)]

    @property
    def text_only(self) -> bool:
        return all(isinstance(b, TextBlock) and not is_resource(b) for b in self.blocks)


def is_resource(block: ContentBlock) -> bool:
    """A resource's text block (its content is the file's, not typed: no @references)."""
    return isinstance(block, TextBlock) and block.text.startswith(_RESOURCE_TAG)


def to_content(raw: str | Sequence[Any], working_dir: Path) -> PromptContent:
    """`session/prompt`'s input (a string, wire blocks or engine blocks) as content;
    `working_dir` resolved. Raises InvalidArgument with the reason for anything unusable.

    Synchronous on purpose: a prompt takes its place in the session's queue without
    yielding to the loop, so prompts keep their arrival order; the reads are bounded
    (`MAX_IMAGE_BYTES`, `MAX_RESOURCE_BYTES`) and local."""
    if isinstance(raw, str):
        return PromptContent([TextBlock(text=raw)], raw)
    if not raw:
        raise InvalidArgument("input: an empty list of blocks; give at least one block")
    if sum(getattr(item, "type", None) == "image" for item in raw) > MAX_IMAGES:
        raise InvalidArgument(f"input: more than {MAX_IMAGES} images in one input")
    root = working_dir
    blocks: list[ContentBlock] = []
    for i, item in enumerate(raw):
        where = f"input[{i}]"
        kind = getattr(item, "type", None)
        if isinstance(item, TextBlock | ImageBlock):
            blocks.append(item)
        elif kind == "text":
            blocks.append(TextBlock(text=item.text))
        elif kind == "image":
            blocks.append(_image(item, root, where))
        elif kind == "resource":
            blocks.append(TextBlock(text=_resource(item, root, where)))
        else:
            raise InvalidArgument(f"{where}: unsupported block type {kind!r}")
    text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock) and not is_resource(b))
    return PromptContent(blocks, text)


def _image(item: Any, root: Path, where: str) -> ImageBlock:
    path = getattr(item, "path", None)
    if path:
        file = _inside(path, root, where)
        data = _read_image(file, where)
        media_type = sniff_image(data[:16])
        if media_type is None:
            raise InvalidArgument(
                f"{where}: {path} is not a PNG, JPEG, GIF or WebP image"
                f" (read from its bytes, whatever its extension)"
            )
        return ImageBlock(
            source=ImageSource(media_type=media_type, data=base64.b64encode(data).decode()),
            path=display_path(file, root),
        )
    encoded = "".join((getattr(item, "data", None) or "").split())  # MIME-style line breaks
    declared = (getattr(item, "media_type", None) or "").strip().lower()
    declared = _ALIASES.get(declared, declared)
    if declared not in MEDIA_TYPES:
        raise InvalidArgument(
            f"{where}: mediaType {getattr(item, 'media_type', None)!r} is not supported"
            f" (one of {', '.join(MEDIA_TYPES)})"
        )
    if len(encoded) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise InvalidArgument(f"{where}: {_too_large(len(encoded) * 3 // 4)}")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument(f"{where}: data is not valid base64") from None
    if len(raw) > MAX_IMAGE_BYTES:
        raise InvalidArgument(f"{where}: {_too_large(len(raw))}")
    sniffed = sniff_image(raw[:16])
    if sniffed is None:
        raise InvalidArgument(f"{where}: data is not a PNG, JPEG, GIF or WebP image")
    # Normalised (no whitespace, padded) so providers receive canonical base64.
    return ImageBlock(source=ImageSource(media_type=sniffed, data=base64.b64encode(raw).decode()))


def _too_large(size: int) -> str:
    return (
        f"the image is {size:,} bytes; the limit is {MAX_IMAGE_BYTES:,} bytes"
        " (scale it down or crop it)"
    )


def _inside(raw: str, root: Path, where: str) -> Path:
    """A path of the input, resolved like the tools' paths; outside the workspace: refused."""
    file = resolve_path(raw, root)
    if not is_inside(file, root):
        raise InvalidArgument(f"{where}: {raw} is outside the workspace ({root})")
    return file


def _read_image(file: Path, where: str) -> bytes:
    try:
        with open(file, "rb") as f:
            data = f.read(MAX_IMAGE_BYTES + 1)
    except IsADirectoryError:
        raise InvalidArgument(f"{where}: {file} is a directory, not an image") from None
    except FileNotFoundError:
        raise InvalidArgument(f"{where}: {file} does not exist") from None
    except OSError as e:
        raise InvalidArgument(f"{where}: cannot read {file}: {e.strerror or e}") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidArgument(f"{where}: {_too_large(file.stat().st_size)}")
    return data


def _resource(item: Any, root: Path, where: str) -> str:
    uri = getattr(item, "uri", "") or ""
    text = getattr(item, "text", None)
    name = uri
    if text is None:
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            raise InvalidArgument(
                f"{where}: resource {uri!r} has no text; only a file:// uri inside the"
                " workspace is read by the server"
            )
        if parsed.netloc not in ("", "localhost"):
            raise InvalidArgument(f"{where}: {uri!r} names another host")
        file = _inside(unquote(parsed.path), root, where)
        text = _read_text(file, where)
        name = display_path(file, root)
    mime = getattr(item, "mime_type", None)
    attrs = f'uri="{_escape(uri)}"' + (f' mimeType="{_escape(mime)}"' if mime else "")
    if name != uri:
        attrs += f' path="{_escape(name)}"'
    return f"{_RESOURCE_TAG}{attrs}>\n{text}\n</resource>"


def _escape(value: str) -> str:
    """`html.escape(value)` (quotes included), without importing `html` and its entity table."""
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def _read_text(file: Path, where: str) -> str:
    try:
        with open(file, "rb") as f:
            data = f.read(MAX_RESOURCE_BYTES + 1)
    except IsADirectoryError:
        raise InvalidArgument(f"{where}: {file} is a directory, not a file") from None
    except FileNotFoundError:
        raise InvalidArgument(f"{where}: {file} does not exist") from None
    except OSError as e:
        raise InvalidArgument(f"{where}: cannot read {file}: {e.strerror or e}") from None
    if len(data) > MAX_RESOURCE_BYTES:
        raise InvalidArgument(
            f"{where}: {file} is over {MAX_RESOURCE_BYTES // 1024} KB; send a part of it as"
            " the resource's text, or let the model Read it"
        )
    if b"\x00" in data[:8192]:
        raise InvalidArgument(f"{where}: {file} is not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{where}: {file} is not UTF-8 text") from None
