"""Both framings sema-rpc speaks: JSONL and LSP-style Content-Length.

JSONL splits on b"\\n" only (never on U+2028/U+2029, which may appear raw inside JSON
strings); Content-Length reads the headers, then exactly N bytes.
"""

from __future__ import annotations

import asyncio
import json
import re
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
    """Reads message bodies (bytes, without framing).

    The stream is read in large chunks (`stream.read(CHUNK)`), and every complete message
    in a chunk is split out at once (`bytes.split` for JSONL): a long answer's thousands
    of small notifications cost a few hundred reads and no per-message await. `stream`
    is anything with StreamReader's `read(n)` (at most n bytes; b"" at the end)."""

    CHUNK = 1 << 16

    def __init__(self, stream: asyncio.StreamReader, *, jsonl: bool):
        self.stream = stream
        self.jsonl = jsonl
        self._buffer = bytearray()
        self._ready: list[bytes] = []
        self._next = 0
        self._eof = False

    async def read(self) -> bytes | None:
        """The next message body; None at end of stream."""
        while self._next >= len(self._ready):
            batch = await self.read_many()
            if not batch:
                return None
            self._ready, self._next = batch, 0
        body = self._ready[self._next]
        self._next += 1
        return body

    async def read_many(self) -> list[bytes]:
        """Every message body available now, in order (at least one); [] at end of stream.
        A last line without its newline is a message (JSONL); a frame cut short is not."""
        if self._next < len(self._ready):
            rest = self._ready[self._next :]
            self._ready, self._next = [], 0
            return rest
        while not self._eof:
            chunk = await self.stream.read(self.CHUNK)
            if not chunk:
                self._eof = True
                if self.jsonl and self._buffer.strip():
                    body = bytes(self._buffer).rstrip(b"\r\n")
                    self._buffer.clear()
                    return [body]
                return []
            bodies = self._split_lines(chunk) if self.jsonl else self._split_frames(chunk)
            if bodies:
                return bodies
        return []

    def _split_lines(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer
        end = chunk.rfind(b"\n")
        if end < 0:
            buffer += chunk
            if len(buffer) > STREAM_LIMIT:
                raise FramingError(f"message larger than {STREAM_LIMIT} bytes")
            return []
        if buffer:
            buffer += chunk[:end]
            lines = bytes(buffer).split(b"\n")
            buffer.clear()
        else:
            lines = chunk[:end].split(b"\n")
        if end + 1 < len(chunk):
            buffer += chunk[end + 1 :]
        # splits on b"\n" only; a CR before it (CRLF) and blank lines are dropped
        return [line.rstrip(b"\r") for line in lines if line.strip()]

    def _split_frames(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer
        buffer += chunk
        bodies: list[bytes] = []
        start = 0
        plain = _PLAIN_HEADER.match
        while True:
            m = plain(buffer, start)
            if m is not None:  # the server's own header: no header parsing
                length = int(m[1])
                body_start = m.end()
                if len(buffer) - body_start < length:
                    break
                bodies.append(bytes(buffer[body_start : body_start + length]))
                start = body_start + length
                continue
            head_end = buffer.find(b"\r\n\r\n", start)
            sep = 4
            lf_end = buffer.find(b"\n\n", start, head_end if head_end >= 0 else len(buffer))
            if lf_end >= 0 and (head_end < 0 or lf_end < head_end):
                head_end, sep = lf_end, 2
            if head_end < 0:
                if len(buffer) - start > 64 * 1024:
                    raise FramingError("header line too long")
                break
            length = _content_length(bytes(buffer[start:head_end]))
            body_start = head_end + sep
            if len(buffer) - body_start < length:
                if length > STREAM_LIMIT:
                    raise FramingError(f"message larger than {STREAM_LIMIT} bytes")
                break
            bodies.append(bytes(buffer[body_start : body_start + length]))
            start = body_start + length
        if start:
            del buffer[:start]
        return bodies


_PLAIN_HEADER = re.compile(rb"Content-Length: ?([0-9]{1,10})\r\n\r\n")
"""A frame whose only header is Content-Length, as the server writes it."""


def _content_length(headers: bytes) -> int:
    """The Content-Length of one frame's header block."""
    length: int | None = None
    for header in headers.split(b"\n"):
        line = header.rstrip(b"\r")
        if not line.strip():
            continue
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise FramingError(f"malformed header line: {line[:80]!r}")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError as exc:
                raise FramingError(f"bad Content-Length: {value.strip()!r}") from exc
    if length is None:
        raise FramingError("frame without Content-Length")
    if length < 0:
        raise FramingError(f"bad Content-Length: {length}")
    return length
