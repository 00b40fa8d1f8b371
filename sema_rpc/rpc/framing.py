"""Message framing on stdio: LSP `Content-Length` headers (default) or one JSON per line.

Readers are fed raw bytes (from an asyncio pipe protocol, or a thread reading a regular
file) and hand complete message bodies to a callback. Framing errors are reported, the
stream is resynchronised where possible, and the process keeps serving.

JSONL splits on LF only: U+2028/U+2029 are legal inside JSON strings. Outgoing JSON is
ASCII-escaped, so those characters never appear raw on the wire in either mode.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import stat
import threading
from collections.abc import Callable
from typing import BinaryIO

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""A message larger than this is refused with -32600 and skipped."""

OnBody = Callable[[bytes], None]
OnError = Callable[[str], None]

_CONTENT_LENGTH = re.compile(rb"content-length\s*:\s*(\d+)", re.IGNORECASE)


class JsonlDecoder:
    """Splits a byte stream on b'\\n'."""

    def __init__(self, on_body: OnBody, on_error: OnError, max_bytes: int = MAX_MESSAGE_BYTES):
        self._on_body = on_body
        self._on_error = on_error
        self._max = max_bytes
        self._buf = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> None:
        buf = self._buf
        start = len(buf)
        buf += data
        while True:
            newline = buf.find(b"\n", start)
            if newline < 0:
                break
            line = bytes(buf[:newline])
            del buf[: newline + 1]
            start = 0
            if self._discarding:
                self._discarding = False
                continue
            if line.strip():
                self._on_body(line)
        if len(buf) > self._max and not self._discarding:
            self._on_error(f"message larger than {self._max} bytes; skipped")
            self._discarding = True
        if self._discarding:
            buf.clear()

    def eof(self) -> None:
        rest = bytes(self._buf).strip()
        self._buf.clear()
        if rest and not self._discarding:
            # A last line without its newline is still a whole JSON value if it parses.
            self._on_body(rest)


class ContentLengthDecoder:
    """LSP base protocol: headers, a blank line, then exactly Content-Length bytes."""

    def __init__(self, on_body: OnBody, on_error: OnError, max_bytes: int = MAX_MESSAGE_BYTES):
        self._on_body = on_body
        self._on_error = on_error
        self._max = max_bytes
        self._buf = bytearray()
        self._need: int | None = None  # body length once headers are read
        self._skip = 0

    def feed(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        while True:
            if self._skip:
                n = min(self._skip, len(buf))
                del buf[:n]
                self._skip -= n
                if self._skip:
                    return
            if self._need is None:
                end = buf.find(b"\r\n\r\n")
                sep = 4
                if end < 0:
                    end = buf.find(b"\n\n")
                    sep = 2
                if end < 0:
                    if len(buf) > 64 * 1024:
                        self._on_error("header block too long; discarded")
                        buf.clear()
                    return
                headers = bytes(buf[:end])
                del buf[: end + sep]
                match = _CONTENT_LENGTH.search(headers)
                if match is None:
                    self._on_error("message without a Content-Length header; discarded")
                    continue
                length = int(match.group(1))
                if length > self._max:
                    self._on_error(f"message larger than {self._max} bytes; skipped")
                    self._skip = length
                    continue
                self._need = length
            if len(buf) < self._need:
                return
            body = bytes(buf[: self._need])
            del buf[: self._need]
            self._need = None
            self._on_body(body)

    def eof(self) -> None:
        if self._need is not None or self._buf.strip():
            self._on_error("end of input in the middle of a message; discarded")
        self._buf.clear()
        self._need = None


def encode_frame(body: bytes, jsonl: bool) -> bytes:
    if jsonl:
        return body + b"\n"
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


# ---------------------------------------------------------------------------- stdin


class _PipeProtocol(asyncio.Protocol):
    def __init__(self, feed: Callable[[bytes], None], on_eof: Callable[[], None]):
        self._feed = feed
        self._on_eof = on_eof

    def data_received(self, data: bytes) -> None:
        self._feed(data)

    def eof_received(self) -> bool:
        self._on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_eof()


async def read_stream(
    stream: BinaryIO, feed: Callable[[bytes], None], loop: asyncio.AbstractEventLoop
) -> None:
    """Feed everything read from `stream` until EOF.

    Pipes, sockets and ttys use the event loop directly; a regular file (which the loop's
    pipe transport refuses) is read by a thread.
    """
    done = asyncio.Event()
    finished = False

    def on_eof() -> None:
        nonlocal finished
        if not finished:
            finished = True
            done.set()

    mode = os.fstat(stream.fileno()).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
        transport, _ = await loop.connect_read_pipe(lambda: _PipeProtocol(feed, on_eof), stream)
        try:
            await done.wait()
        finally:
            transport.close()
        return

    def pump() -> None:
        fd = stream.fileno()
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            loop.call_soon_threadsafe(feed, chunk)
        loop.call_soon_threadsafe(on_eof)

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    await done.wait()


# ---------------------------------------------------------------------------- stdout


class FrameWriter:
    """Writes frames to stdout without blocking the loop when stdout is a pipe."""

    def __init__(self, stream: BinaryIO, jsonl: bool):
        self._stream = stream
        self._jsonl = jsonl
        self._transport: asyncio.WriteTransport | None = None
        self.closed = False
        self.tap: Callable[[bytes], None] | None = None
        """Sees every outgoing message body (the transcript recorder)."""

    async def start(self, loop: asyncio.AbstractEventLoop) -> None:
        mode = os.fstat(self._stream.fileno()).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            transport, _ = await loop.connect_write_pipe(asyncio.Protocol, self._stream)
            self._transport = transport  # type: ignore[assignment]

    def write(self, body: bytes) -> None:
        if self.tap is not None:
            self.tap(body)
        if self.closed:
            return
        frame = encode_frame(body, self._jsonl)
        try:
            if self._transport is not None:
                if self._transport.is_closing():
                    self.closed = True
                    return
                self._transport.write(frame)
            else:
                self._stream.write(frame)
                self._stream.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            # The client went away; keep running so in-flight turns can finish and flush history.
            self.closed = True

    async def drain(self, timeout: float = 5.0) -> None:
        transport = self._transport
        if transport is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while transport.get_write_buffer_size() and not transport.is_closing():
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.005)
