"""Frames without the event loop: the decoders, the encoder, and the first message of a
stdio server read and answered before the loop (and asyncio) exist.

Decoders are fed raw bytes (by framing.py's readers, a socket listener, or
`read_first`'s leftovers) and hand complete message bodies to a callback. Framing
errors are reported, the stream is resynchronised where possible, and the process
keeps serving.

JSONL splits on LF only: U+2028/U+2029 are legal inside JSON strings. Outgoing JSON is
ASCII-escaped, so those characters never appear raw on the wire in either mode.

Imports the standard library's light modules only: it is on the path to `initialize`
before the event loop (tests/e2e/test_startup_imports.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any, BinaryIO, Literal

from sema_rpc.core.text import SURROGATE_ESCAPE

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
    import logging  # here: the path to the first answer has no logging (cli.py)

    logging.getLogger("sema_rpc.rpc.framing").warning(
        "ignoring SEMA_MAX_MESSAGE_BYTES=%r: not a positive integer", raw
    )
    return MAX_MESSAGE_BYTES


def _quiet_max_message_bytes() -> int:
    """`max_message_bytes` without its warning (the server gives it, once logging is set
    up)."""
    raw = os.environ.get("SEMA_MAX_MESSAGE_BYTES", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_MESSAGE_BYTES


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


def dumps(obj: Any) -> bytes:
    # ASCII output: U+2028/U+2029 (and every non-ASCII char) are escaped, so a JSONL
    # reader splitting on "\n" can never cut a message, and Content-Length is len(bytes).
    return json.dumps(obj, separators=(",", ":")).encode("ascii")


# ---------------------------------------------------------------------------- before the loop

FIRST_READ_LIMIT = 64 * 1024
"""`read_first` gives up (hands over what it read) past this many bytes without a whole
first message: an `initialize` is a few hundred bytes."""


class First:
    """What `read_first` read from stdin before the event loop: `rest`, the bytes the
    normal reader must take first (everything read when nothing was answered); `eof`,
    whether the input ended meanwhile; `stopped`, the stop signal that came while it
    waited (0: none); and, when the first message was answered, its `body`, its
    `params`, and the `reply` body written."""

    __slots__ = ("body", "eof", "params", "reply", "rest", "stopped")

    def __init__(self, rest: bytes, eof: bool = False, stopped: int = 0) -> None:
        self.rest = rest
        self.eof = eof
        self.stopped = stopped
        self.body: bytes | None = None
        self.params: Any = None
        self.reply: bytes | None = None

    @property
    def answered(self) -> bool:
        return self.reply is not None


STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
"""Stop a server waiting for its first message (as the loop's handlers do later:
core.processes.STOP_SIGNALS)."""


class _Stopped(BaseException):
    """Not an Exception: nothing on the way (`answer`'s guard) may swallow it."""


def read_first(
    fd: int, out: BinaryIO, *, jsonl: bool, answer: Callable[[Any], dict[str, Any] | None]
) -> First:
    """`_read_first` with the stop signals caught while it runs: a `First` whose
    `stopped` is the signal, and nothing else, when one comes (no handler of the loop's
    exists yet; the caller exits 128 + the signal, as the server does later)."""
    import signal

    def stopped(signum: int, _frame: Any) -> None:
        raise _Stopped(signum)

    signums = [getattr(signal, name) for name in STOP_SIGNALS]
    previous = {signum: signal.signal(signum, stopped) for signum in signums}
    try:
        return _read_first(fd, out, jsonl=jsonl, answer=answer)
    except _Stopped as stop:
        return First(b"", stopped=stop.args[0])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _read_first(
    fd: int, out: BinaryIO, *, jsonl: bool, answer: Callable[[Any], dict[str, Any] | None]
) -> First:
    """Read stdin (`fd`) until one whole message, with the framing the server reads
    (`jsonl`, else Content-Length), blocking; when it is a plainly valid `initialize`
    (`answer(params)` gives its result; None, or an exception, for one it does not vouch
    for), write its answer to `out`, framed: the bytes the connection would write.

    Anything else answers nothing and hands every byte read to the normal reader, which
    then does what it always did: a first message that is not `initialize`, one that
    does not parse, a bad header block, a message over the size limit, an id that is not
    a string or an integer, an escaped surrogate anywhere (the connection rewrites
    those). So do end of input before a whole message (`eof`: the normal reader sees the
    bytes, then the end), `FIRST_READ_LIMIT` bytes without a whole message, and a stdin
    that cannot be read blocking. A message split over several reads is joined; bytes
    read past the first message (a second message in the same write) are `rest`."""
    limit = min(FIRST_READ_LIMIT, _quiet_max_message_bytes())
    buf = bytearray()
    while True:
        frame = _first_frame(buf, jsonl, limit)
        if frame is not None:
            break
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # not readable blocking (O_NONBLOCK inherited), or no stdin
            return First(bytes(buf))
        if not chunk:
            return First(bytes(buf), eof=True)
        buf += chunk
    if frame is False:
        return First(bytes(buf))
    body, end = frame
    request = _plain_request(body, "initialize")
    try:
        result = None if request is None else answer(request[1])
    except Exception:  # the server answers it as it always does (its error answer)
        result = None
    if request is None or result is None:
        return First(bytes(buf))
    reply = dumps({"jsonrpc": "2.0", "id": request[0], "result": result})
    _write_all(out, encode_frame(reply, jsonl))
    first = First(bytes(buf[end:]))
    first.body, first.params, first.reply = body, request[1], reply
    return first


def _write_all(out: BinaryIO, frame: bytes) -> None:
    """Write `frame` whole (waiting while a non-blocking stdout is full). A client gone
    is not an error here: the writer the server starts finds it closed."""
    data = memoryview(frame)
    try:
        while data:
            written = out.write(data)
            if written is None:  # a non-blocking stdout, full
                import select

                select.select([], [out], [])
                continue
            data = data[written:]
    except OSError:  # BrokenPipeError: the client went away
        pass


def _first_frame(
    buf: bytearray, jsonl: bool, limit: int
) -> tuple[bytes, int] | Literal[False] | None:
    """The first message of `buf` and where it ends; None: not whole yet; False: none
    `read_first` answers (framing the decoders refuse, too large, or past `limit`)."""
    if jsonl:
        end = buf.find(b"\n")
        if end < 0:
            return False if len(buf) > limit else None
        line = bytes(buf[:end])
        return (line, end + 1) if line.strip() and len(line) <= limit else False
    work = bytearray(buf)
    parsed = ContentLengthDecoder._headers(work)
    if parsed is None:
        return False if len(buf) > limit else None
    length, _ = parsed
    if length is None or length > limit:
        return False
    start = len(buf) - len(work)
    if len(work) < length:
        return None
    return bytes(work[:length]), start + length


def _plain_request(body: bytes, method: str) -> tuple[str | int, Any] | None:
    """(id, params) of `body` when it is a request for `method` the connection reads
    exactly as `json.loads` does (UTF-8, no escaped surrogate), with a string or
    integer id; None for anything else."""
    if SURROGATE_ESCAPE.search(body) is not None:
        return None
    try:
        obj = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if type(obj) is not dict or obj.get("jsonrpc") != "2.0" or obj.get("method") != method:
        return None
    msg_id = obj.get("id")
    if type(msg_id) is not str and type(msg_id) is not int:
        return None
    return msg_id, obj.get("params")
