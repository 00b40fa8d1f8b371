"""The light path's HTTP/1.1 client codec: a request as bytes, a response's bytes as
events. No I/O (transport.py reads and writes the sockets) and nothing heavier to import
than our own error classes.

Requests (`encode_request`): `METHOD target HTTP/1.1`, the headers in the order given
(`Host` first when it is among them), a blank line, then the body; names and values are
checked (a token for a name; a value without control characters or surrounding white
space) and a request that cannot be written raises `LocalProtocolError`, naming the
header but never quoting its value (it may be a credential).

Responses (`ResponseParser`, one per request): `feed()` the bytes as they arrive,
`feed_eof()` when the peer closes, and take `next_event()` until it returns `END`:

- `Head`: the status line (`HTTP/1.1` or `HTTP/1.0`) and the header fields, names
  lower-cased, repeated fields kept in their order. Interim (1xx) heads come as `Head`s
  too, before the final one. A line folded onto the one before (obs-fold), a malformed
  line, or a head (or a chunk-size line, or the trailer) longer than `MAX_HEAD` is a
  `RemoteProtocolError`. A line ends with CRLF or a bare LF.
- body data as `bytes`: framed by `Transfer-Encoding: chunked` (extensions ignored,
  trailers read and dropped; a bad chunk size or chunk end is a protocol error), else
  by `Content-Length`, else it runs until the connection closes. A response to HEAD, a
  204 or a 304, and a 2xx to CONNECT, has no body.
- `END` once the body ended; `NEED_DATA` while more bytes are needed.

A close before the final head is "Server disconnected without sending a response."; a
close inside a Content-Length or chunked body names what was missing.

`reusable` (after `END`): whether the connection may carry another request — both sides
spoke HTTP/1.1 without `Connection: close`, the body was not framed by the close, and
nothing followed the response's end.
"""

from __future__ import annotations

from sema_rpc.providers.transport_errors import RemoteProtocolError

__all__ = [
    "END",
    "MAX_HEAD",
    "NEED_DATA",
    "Head",
    "LocalProtocolError",
    "ResponseParser",
    "encode_request",
    "keep_alive",
]

MAX_HEAD = 16 * 1024
"""Bytes a response head (or a chunk-size line, or a trailer) may take."""
_MAX_LENGTH_DIGITS = 20


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


NEED_DATA = _Sentinel("NEED_DATA")
"""`next_event()`: feed more bytes (or the end of the stream) first."""
END = _Sentinel("END")
"""`next_event()`: the response ended."""

_TOKEN = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_CTL = bytes([*range(0x09), *range(0x0A, 0x20), 0x7F])  # control characters but HTAB
_HEX = b"0123456789abcdefABCDEF"
_OWS = b" \t"


class LocalProtocolError(ValueError):
    """A request this codec will not write (a bad method, target, header name or value)."""


class Head:
    """A response's status line and header fields (names lower-case, in order)."""

    __slots__ = ("headers", "reason", "status", "version")

    def __init__(
        self, version: str, status: int, reason: str, headers: list[tuple[str, str]]
    ) -> None:
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers

    def values(self, name: str) -> list[str]:
        """A comma-separated field's members, lower-cased, over all its lines."""
        return [
            item.strip(" \t").lower()
            for key, value in self.headers
            if key == name
            for item in value.split(",")
            if item.strip(" \t")
        ]

    def __repr__(self) -> str:
        return f"Head({self.version!r}, {self.status}, {self.reason!r}, {self.headers!r})"


# ------------------------------------------------------------------------ requests


def _is_token(value: bytes) -> bool:
    return bool(value) and not value.translate(None, _TOKEN)


def encode_request(
    method: str, target: str, headers: list[tuple[str, str]], body: bytes = b""
) -> bytes:
    """The request's bytes: its head, then `body` (the caller frames it, with a
    `Content-Length` among `headers`)."""
    try:
        method_b = method.encode("ascii")
        target_b = target.encode("ascii")
    except UnicodeEncodeError:
        raise LocalProtocolError("the method and target must be ASCII") from None
    if not _is_token(method_b):
        raise LocalProtocolError(f"illegal method {method!r}")
    if not target_b or any(c <= 0x20 or c == 0x7F for c in target_b):
        raise LocalProtocolError("illegal request target")
    lines = [b"%s %s HTTP/1.1\r\n" % (method_b, target_b)]
    host: list[bytes] = []
    for name, value in headers:
        try:
            name_b = name.encode("ascii")
        except UnicodeEncodeError:
            raise LocalProtocolError("a header name must be ASCII") from None
        if not _is_token(name_b):
            raise LocalProtocolError(f"illegal header name {name!r}")
        try:
            value_b = value.encode("ascii")
        except UnicodeEncodeError:
            raise LocalProtocolError(f"the value of header {name!r} is not ASCII") from None
        if value_b != value_b.strip(_OWS) or value_b != value_b.translate(None, _CTL):
            raise LocalProtocolError(f"illegal value for header {name!r}")
        line = b"%s: %s\r\n" % (name_b, value_b)
        (host if name_b.lower() == b"host" else lines).append(line)
    return b"".join([lines[0], *host, *lines[1:], b"\r\n", body])


def keep_alive(headers: list[tuple[str, str]]) -> bool:
    """Whether a request with these headers lets its connection live on (no
    `Connection: close`)."""
    return not any(
        item.strip(" \t").lower() == "close"
        for name, value in headers
        if name.lower() == "connection"
        for item in value.split(",")
    )


# ------------------------------------------------------------------------ responses

_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _UNTIL_CLOSE, _DONE = range(8)


class ResponseParser:
    """The events of one response to a `method` request (see the module's docstring)."""

    __slots__ = (
        "_buf",
        "_eof",
        "_method",
        "_remaining",
        "_reusable",
        "_scanned",
        "_state",
        "head",
    )

    def __init__(self, method: str, *, request_keep_alive: bool = True) -> None:
        self._method = method.upper()
        self._buf = bytearray()
        self._eof = False
        self._state = _HEAD
        self._scanned = 0  # bytes of `_buf` already searched for a line's end
        self._remaining = 0  # of the Content-Length body, or of the current chunk
        self._reusable = request_keep_alive
        self.head: Head | None = None
        """The final (non-1xx) head once it arrived."""

    def feed(self, data: bytes) -> None:
        if self._eof:
            raise RuntimeError("bytes fed after the end of the stream")
        self._buf += data

    def feed_eof(self) -> None:
        """The peer closed the connection: nothing more will come."""
        self._eof = True

    @property
    def reusable(self) -> bool:
        """After `END`: the connection may carry the next request."""
        return self._state == _DONE and self._reusable and not self._buf and not self._eof

    def next_event(self) -> object:
        """A `Head`, body `bytes`, `END` or `NEED_DATA`."""
        state = self._state
        if state == _LENGTH:
            return self._take(self._remaining, _DONE)
        if state == _CHUNK_DATA:
            return self._take(self._remaining, _CHUNK_END)
        if state == _UNTIL_CLOSE:
            if self._buf:
                data = bytes(self._buf)
                self._buf.clear()
                return data
            if self._eof:
                self._state = _DONE
                return END
            return NEED_DATA
        if state == _HEAD:
            return self._read_head()
        if state == _CHUNK_SIZE:
            return self._read_chunk_size()
        if state == _CHUNK_END:
            return self._read_chunk_end()
        if state == _TRAILER:
            return self._read_trailer()
        return END

    # ---------------------------------------------------------------- body

    def _take(self, remaining: int, after: int) -> object:
        buf = self._buf
        if remaining == 0:
            self._state = after
            return self.next_event()
        if not buf:
            if self._eof:
                raise self._cut()
            return NEED_DATA
        if len(buf) <= remaining:
            data = bytes(buf)
            buf.clear()
        else:
            data = bytes(buf[:remaining])
            del buf[:remaining]
        self._remaining = remaining - len(data)
        return data

    def _cut(self) -> RemoteProtocolError:
        if self._state == _LENGTH:
            length = self._length_value()
            return RemoteProtocolError(
                "peer closed connection without sending complete message body "
                f"(received {length - self._remaining} bytes, expected {length})"
            )
        return RemoteProtocolError(
            "peer closed connection without sending complete message body (incomplete chunked read)"
        )

    def _length_value(self) -> int:
        assert self.head is not None
        return int(self.head.values("content-length")[0])

    def _line(self) -> bytes | None:
        """The next line (CRLF or LF stripped), else None (more bytes needed); a line
        longer than `MAX_HEAD` is a protocol error."""
        buf = self._buf
        end = buf.find(b"\n", self._scanned)
        if end < 0:
            self._scanned = len(buf)
            if len(buf) > MAX_HEAD:
                raise RemoteProtocolError("Receive buffer too long")
            if self._eof:
                raise self._cut()
            return None
        line = bytes(buf[:end])
        del buf[: end + 1]
        self._scanned = 0
        return line[:-1] if line.endswith(b"\r") else line

    def _read_chunk_size(self) -> object:
        line = self._line()
        if line is None:
            return NEED_DATA
        size = line.split(b";", 1)[0].strip(_OWS)
        if not size or len(size) > _MAX_LENGTH_DIGITS or size.translate(None, _HEX):
            raise RemoteProtocolError(f"illegal chunk header: {line[:40]!r}")
        self._remaining = int(size, 16)
        self._state = _CHUNK_DATA if self._remaining else _TRAILER
        return self.next_event()

    def _read_chunk_end(self) -> object:
        buf = self._buf
        if buf[:2] == b"\r\n":
            del buf[:2]
        elif buf[:1] == b"\n":
            del buf[:1]
        elif len(buf) < 2 and buf in (b"", b"\r"):
            if self._eof:
                raise self._cut()
            return NEED_DATA
        else:
            raise RemoteProtocolError(f"malformed chunk footer: {bytes(buf[:2])!r}")
        self._state = _CHUNK_SIZE
        return self.next_event()

    def _read_trailer(self) -> object:
        total = 0
        while True:
            line = self._line()
            if line is None:
                return NEED_DATA
            if not line:
                self._state = _DONE
                return END
            total += len(line)
            if total > MAX_HEAD:
                raise RemoteProtocolError("Receive buffer too long")
            _field(line)  # checked, then dropped

    # ---------------------------------------------------------------- head

    def _head_end(self) -> int:
        """The index just past the head's blank line, or -1."""
        buf = self._buf
        if buf[:1] == b"\n" or buf[:2] == b"\r\n":
            raise RemoteProtocolError("no response line received")
        start = self._scanned
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                self._scanned = len(buf)
                return -1
            if buf[nl + 1 : nl + 2] == b"\n":
                return nl + 2
            if buf[nl + 1 : nl + 3] == b"\r\n":
                return nl + 3
            if nl + 3 > len(buf):  # the blank line may still come after this one
                self._scanned = nl
                return -1
            start = nl + 1

    def _read_head(self) -> object:
        end = self._head_end()
        if end < 0 or end > MAX_HEAD:
            if len(self._buf) > MAX_HEAD:
                raise RemoteProtocolError("Receive buffer too long")
            if end < 0:
                if self._eof:
                    raise RemoteProtocolError("Server disconnected without sending a response.")
                return NEED_DATA
        raw = bytes(self._buf[:end])
        del self._buf[:end]
        self._scanned = 0
        lines = raw.split(b"\n")[:-2]  # the head's lines, the blank line's two pieces off
        lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
        version, status, reason = _status_line(lines[0])
        headers = [_field(line) for line in lines[1:]]
        head = Head(version, status, reason, headers)
        if status < 200:
            if status == 101:
                raise RemoteProtocolError("101 Switching Protocols to a request without Upgrade")
            return head  # interim: the final head follows
        self.head = head
        self._frame(head)
        return head

    def _frame(self, head: Head) -> None:
        if head.version != "1.1" or "close" in head.values("connection"):
            self._reusable = False
        status, method = head.status, self._method
        lengths = [v for k, v in head.headers if k == "content-length"]
        codings = [v for k, v in head.headers if k == "transfer-encoding"]
        if status in (204, 304) or method == "HEAD" or (method == "CONNECT" and status < 300):
            self._state = _DONE
            return
        if codings:
            if len(codings) > 1:
                raise RemoteProtocolError("multiple Transfer-Encoding headers")
            if codings[0].strip(" \t").lower() != "chunked":
                raise RemoteProtocolError("Only Transfer-Encoding: chunked is supported")
            if lengths:  # both: the coding wins; such a message may be smuggling
                self._reusable = False
            self._state = _CHUNK_SIZE
            return
        if lengths:
            found = {item.strip(" \t") for value in lengths for item in value.split(",")}
            if len(found) != 1:
                raise RemoteProtocolError("conflicting Content-Length headers")
            value = found.pop()
            if not value.isascii() or not value.isdigit() or len(value) > _MAX_LENGTH_DIGITS:
                raise RemoteProtocolError("bad Content-Length")
            self._remaining = int(value)
            self._state = _LENGTH
            return
        self._reusable = False  # the close ends the body
        self._state = _UNTIL_CLOSE


def _status_line(line: bytes) -> tuple[str, int, str]:
    """("1.1" or "1.0", status, reason) of `HTTP/1.x NNN reason` (the reason optional)."""
    proto, _, rest = line.partition(b" ")
    code, space, reason = rest.partition(b" ")
    if (
        proto not in (b"HTTP/1.1", b"HTTP/1.0")
        or len(code) != 3
        or not code.isdigit()
        or (not space and rest != code)
        or reason != reason.translate(None, _CTL)
    ):
        raise RemoteProtocolError(f"illegal status line: {line[:80]!r}")
    return proto[5:].decode(), int(code), reason.decode("latin-1")


def _field(line: bytes) -> tuple[str, str]:
    """(lower-case name, value) of a header line; obs-fold and malformed lines raise."""
    if line[:1] in (b" ", b"\t"):
        raise RemoteProtocolError("obsolete line folding in the header is not accepted")
    name, colon, value = line.partition(b":")
    value = value.strip(_OWS)
    if not colon or not _is_token(name) or value != value.translate(None, _CTL):
        raise RemoteProtocolError(f"illegal header line: {line[:80]!r}")
    return name.decode("ascii").lower(), value.decode("latin-1")
