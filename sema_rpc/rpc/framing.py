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
import time
from collections.abc import Callable
from typing import BinaryIO

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""A message larger than this is refused with -32600 and skipped."""


def max_message_bytes() -> int:
    """The largest message read: `$SEMA_MAX_MESSAGE_BYTES` (a positive integer; any other
    value is ignored with a warning), else `MAX_MESSAGE_BYTES`."""
    raw = os.environ.get("SEMA_MAX_MESSAGE_BYTES", "").strip()
    if not raw:
        return MAX_MESSAGE_BYTES
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    log.warning("ignoring SEMA_MAX_MESSAGE_BYTES=%r: not a positive integer", raw)
    return MAX_MESSAGE_BYTES


OnBody = Callable[[bytes], None]
OnError = Callable[[str], None]

_HEADER_LINE = re.compile(rb"([!-9;-~]+)[ \t]*:[ \t]*(.*?)[ \t]*\r?", re.DOTALL)
_FRAME_START = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)
"""Where a frame can start again after a bad header: a whole `Content-Length: N` line.
It cannot be inside a JSON body (a raw newline never occurs inside a JSON string, and
an unquoted name is not JSON), so resynchronising on it never cuts a good message."""


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
    """LSP base protocol: headers, a blank line, then exactly Content-Length bytes.

    Header lines end with CRLF or a bare LF; the block ends at the first empty line. The
    Content-Length value must be digits only. A bad header block (no Content-Length, a
    value such as `5.0`, `1_0` or `5abc`, two different values) is reported once and
    the reader skips to the next `Content-Length: N` line: it costs that message only.
    """

    def __init__(self, on_body: OnBody, on_error: OnError, max_bytes: int = MAX_MESSAGE_BYTES):
        self._on_body = on_body
        self._on_error = on_error
        self._max = max_bytes
        self._buf = bytearray()
        self._need: int | None = None  # body length once headers are read
        self._skip = 0
        self._resync = False  # after a bad header: looking for the next frame's header

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
            if self._resync:
                match = _FRAME_START.search(buf)
                if match is None:
                    # Keep a tail that may be the start of a header line cut by the read.
                    del buf[: max(0, len(buf) - 64)]
                    return
                del buf[: match.start()]
                self._resync = False
            if self._need is None:
                parsed = self._headers(buf)
                if parsed is None:
                    if len(buf) > 64 * 1024:
                        self._on_error("header block too long; discarded")
                        self._resync = True
                        del buf[:1]
                        continue
                    return
                length, error = parsed
                if length is None:
                    self._on_error(f"{error}; message discarded")
                    self._resync = True
                    continue
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

    @staticmethod
    def _headers(buf: bytearray) -> tuple[int | None, str] | None:
        """Consume one header block from `buf`: (length, "") or (None, why it is bad);
        None while the block is incomplete (nothing consumed)."""
        values: list[bytes] = []
        pos = 0
        seen = False
        while True:
            end = buf.find(b"\n", pos)
            if end < 0:
                return None
            line = bytes(buf[pos:end])
            pos = end + 1
            if line in (b"", b"\r"):
                if seen:
                    break
                continue  # a stray line break between frames is not a header block
            seen = True
            match = _HEADER_LINE.fullmatch(line)
            if match is not None and match.group(1).lower() == b"content-length":
                values.append(match.group(2))
        del buf[:pos]
        if not values:
            return None, "message without a Content-Length header"
        shown = ", ".join(repr(v.decode("ascii", "replace")) for v in values)
        if len(set(values)) > 1 or not values[0].isdigit():
            return None, f"invalid Content-Length header: {shown}"
        return int(values[0]), ""

    def eof(self) -> None:
        if not self._resync and (self._need is not None or self._buf.strip()):
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
    """Writes frames to stdout without blocking the loop when stdout is a pipe.

    On a pipe or socket, frames written with `batch=True` (the high-rate deltas) wait
    for the end of the event-loop iteration (`loop.call_soon`) and go out together in
    one write: a burst of 20,000 text chunks costs a few dozen `write(2)`s, not 20,000.
    Any other frame (answers, lifecycle notifications, requests) is written at once,
    together with the batched frames before it, so order is kept and a notification
    followed by a long synchronous stretch (building the next model request) is not
    held back by it. A batch is also flushed once it holds `FLUSH_BYTES` or its oldest
    frame has waited `FLUSH_AFTER_S`, so a long iteration still streams. `tap` sees
    every message body, one by one, in order, as it is written, with the session the
    writer tagged it with. A regular file (stdout
    redirected) is written and flushed synchronously, frame by frame.
    """

    FLUSH_BYTES = 256 * 1024
    """Flush within the iteration once this much is pending."""
    FLUSH_AFTER_S = 0.002
    """…or once the oldest pending frame has waited this long (a long iteration that
    keeps producing deltas still streams them out)."""

    def __init__(self, stream: BinaryIO | None, jsonl: bool):
        self._stream = stream
        self._jsonl = jsonl
        self.jsonl = jsonl
        """The framing: one JSON per line, else Content-Length headers."""
        self._transport: asyncio.WriteTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._pending_since = 0.0
        self._flush_scheduled = False
        self.closed = False
        self.tap: Callable[[bytes, str | None], None] | None = None
        """Sees every outgoing message body and its session tag (the recorder)."""

    @classmethod
    def over(cls, transport: asyncio.WriteTransport, *, jsonl: bool) -> FrameWriter:
        """A writer to a transport the caller has (a connection a listener accepted),
        batching as on a pipe; created on the loop's thread."""
        writer = cls(None, jsonl)
        writer._transport = transport
        writer._loop = asyncio.get_running_loop()
        writer._loop_thread = threading.get_ident()
        return writer

    async def start(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self._stream is not None, "a writer over a transport is started already"
        mode = os.fstat(self._stream.fileno()).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            transport, _ = await loop.connect_write_pipe(asyncio.Protocol, self._stream)
            self._transport = transport  # type: ignore[assignment]
            self._loop = loop
            self._loop_thread = threading.get_ident()

    def write(self, body: bytes, *, batch: bool = False, session: str | None = None) -> None:
        """Frame and send one message body; `batch=True` lets it wait for the end of the
        loop iteration to share a write with the frames after it. `session`: the session
        the message belongs to, for `tap` (None: none, or not known where it is written)."""
        if self.tap is not None:
            self.tap(body, session)
        if self.closed:
            return
        if self._transport is None:
            self._write_file(body)
            return
        frame = encode_frame(body, self._jsonl)
        if threading.get_ident() == self._loop_thread:
            self._queue(frame, batch)
            return
        # Off the loop's thread (never on the hot path): the loop queues it.
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._queue, frame, batch)
        except RuntimeError:  # the loop is closed
            self.closed = True

    def write_frame(
        self, body: bytes, frame: bytes, *, batch: bool = False, session: str | None = None
    ) -> None:
        """`write` for a body already framed for this writer's framing (`encode_frame`):
        one notification sent to many connections is framed once per framing, not once
        per connection."""
        if self.tap is not None:
            self.tap(body, session)
        if self.closed:
            return
        if self._transport is None:
            self._write_file(body)
        elif threading.get_ident() == self._loop_thread:
            self._queue(frame, batch)
        else:
            assert self._loop is not None
            try:
                self._loop.call_soon_threadsafe(self._queue, frame, batch)
            except RuntimeError:  # the loop is closed
                self.closed = True

    def _queue(self, frame: bytes, batch: bool) -> None:
        pending = self._pending
        now = time.monotonic()
        if not pending:
            self._pending_since = now
        pending.append(frame)
        self._pending_bytes += len(frame)
        if (
            not batch
            or self._pending_bytes >= self.FLUSH_BYTES
            or now - self._pending_since >= self.FLUSH_AFTER_S
        ):
            self.flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Hand every pending frame to the transport, in order, in one write (loop thread)."""
        self._flush_scheduled = False
        frames = self._pending
        if not frames:
            return
        self._pending = []
        self._pending_bytes = 0
        transport = self._transport
        if self.closed or transport is None:
            return
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        try:
            if transport.is_closing():
                self.closed = True
                return
            transport.write(data)
        except (BrokenPipeError, ConnectionResetError, ValueError):
            # The client went away; keep running so in-flight turns can finish and flush history.
            self.closed = True

    def _write_file(self, body: bytes) -> None:
        if self._stream is None:
            return
        try:
            self._stream.write(encode_frame(body, self._jsonl))
            self._stream.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            self.closed = True

    async def drain(self, timeout: float = 5.0) -> None:
        """Flush what is pending, then wait (up to `timeout`) for the pipe to take it."""
        transport = self._transport
        if transport is None:
            return
        self.flush()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while transport.get_write_buffer_size() and not transport.is_closing():
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.005)
