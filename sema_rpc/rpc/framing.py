"""Message framing on stdio: LSP `Content-Length` headers (default) or one JSON per line.

Readers are fed raw bytes (from an asyncio pipe protocol, or a thread reading a regular
file) and hand them to a decoder (frames.py: the decoders, the encoder and the first
message read before the loop, which need no event loop). Framing errors are reported,
the stream is resynchronised where possible, and the process keeps serving.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from collections.abc import Callable
from typing import BinaryIO

from sema_rpc.rpc.frames import (
    MAX_MESSAGE_BYTES,
    ContentLengthDecoder,
    JsonlDecoder,
    OnBody,
    OnError,
    encode_frame,
    max_message_bytes,
)

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
    stream: BinaryIO,
    feed: Callable[[bytes], None],
    loop: asyncio.AbstractEventLoop,
    *,
    head: bytes = b"",
    at_eof: bool = False,
) -> None:
    """Feed everything read from `stream` until EOF.

    `head`: bytes read from `stream` before the loop (frames.read_first), fed first;
    `at_eof`: the input had ended then (not read again: a terminal's end of input is
    given once).

    Pipes, sockets and ttys use the event loop directly; a regular file (which the loop's
    pipe transport refuses) is read by a thread.
    """
    if head:
        feed(head)
    if at_eof:
        return
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


__all__ = [
    "MAX_MESSAGE_BYTES",
    "ContentLengthDecoder",
    "FrameWriter",
    "JsonlDecoder",
    "OnBody",
    "OnError",
    "encode_frame",
    "max_message_bytes",
    "read_stream",
]
