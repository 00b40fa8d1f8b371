"""Both framings sema-rpc speaks: JSONL and LSP-style Content-Length.

JSONL splits on b"\\n" only (never on U+2028/U+2029, which may appear raw inside JSON
strings); Content-Length reads the headers, then exactly N bytes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["STREAM_LIMIT", "FramingError", "MessageReader", "encode_message", "frame_body"]

STREAM_LIMIT = 1 << 30
"""StreamReader limit for the server's stdout: the server accepts 256 MiB messages, and a
tool result echoed back can be large. The limit is a ceiling, not an allocation."""


class FramingError(Exception):
    """The byte stream cannot be split into messages any more."""


def encode_message(message: dict[str, Any], *, jsonl: bool) -> bytes:
    """One framed message. The JSON is ASCII (non-ASCII is \\u-escaped), so it never
    contains a raw newline and Content-Length is its byte length."""
    return frame_body(json.dumps(message, separators=(",", ":")).encode("ascii"), jsonl=jsonl)


def frame_body(body: bytes, *, jsonl: bool) -> bytes:
    """One message body (bytes as given) framed: a line, or Content-Length headers."""
    if jsonl:
        return body + b"\n"
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class MessageReader:
    """Reads one message body (bytes, without framing) at a time."""

    def __init__(self, stream: asyncio.StreamReader, *, jsonl: bool):
        self.stream = stream
        self.jsonl = jsonl

    async def read(self) -> bytes | None:
        """The next message body; None at end of stream."""
        return await (self._read_line() if self.jsonl else self._read_frame())

    async def _read_line(self) -> bytes | None:
        while True:
            try:
                line = await self.stream.readline()  # splits on b"\n" only
            except ValueError as exc:  # a line longer than the limit
                raise FramingError(f"message larger than {STREAM_LIMIT} bytes: {exc}") from exc
            if not line:
                return None
            body = line.rstrip(b"\r\n")
            if body.strip():
                return body

    async def _read_frame(self) -> bytes | None:
        length: int | None = None
        while True:
            try:
                header = await self.stream.readline()
            except ValueError as exc:
                raise FramingError(f"header line too long: {exc}") from exc
            if not header:
                return None
            if header in (b"\r\n", b"\n"):
                if length is None:
                    raise FramingError("frame without Content-Length")
                break
            name, sep, value = header.decode("latin-1").partition(":")
            if not sep:
                raise FramingError(f"malformed header line: {header[:80]!r}")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError as exc:
                    raise FramingError(f"bad Content-Length: {value.strip()!r}") from exc
        try:
            return await self.stream.readexactly(length)
        except asyncio.IncompleteReadError:
            return None
