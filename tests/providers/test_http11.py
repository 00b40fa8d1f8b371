"""The light transport's HTTP/1.1 codec (`http11.py`): the request bytes (h11's, which
the SDKs' httpx2 sends, as the oracle), and a response's bytes read as events — status
lines, header fields, the three body framings, what ends a body early, what is a
protocol error, and when the connection may be reused. The same events whichever way
the bytes are split. Then the transport over a real socket: when a connection is kept."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sema_rpc.providers import http, http11, transport
from sema_rpc.providers.transport_errors import RemoteProtocolError


def _events(raw: bytes, method: str = "POST", *, pieces: list[int] | None = None,
            eof: bool = True, keep_alive: bool = True) -> tuple[list[Any], http11.ResponseParser]:  # fmt: skip
    """The events of `raw` fed whole, or cut at the offsets `pieces`; body bytes merged."""
    parser = http11.ResponseParser(method, request_keep_alive=keep_alive)
    cuts = [0, *(pieces or []), len(raw)]
    chunks = [raw[a:b] for a, b in itertools.pairwise(cuts)]
    out: list[Any] = []
    while True:
        ev = parser.next_event()
        if ev is http11.NEED_DATA:
            if chunks:
                parser.feed(chunks.pop(0))
                continue
            if eof and not parser._eof:
                parser.feed_eof()
                continue
            out.append(ev)
            return out, parser
        if isinstance(ev, http11.Head):
            out.append(("head", ev.version, ev.status, ev.reason, ev.headers))
        elif ev is http11.END:
            out.append(ev)
            return out, parser
        else:
            assert isinstance(ev, bytes) and ev
            if out and isinstance(out[-1], bytes):
                out[-1] += ev
            else:
                out.append(ev)


def _error(raw: bytes, method: str = "POST", *, eof: bool = True) -> str:
    with pytest.raises(RemoteProtocolError) as caught:
        _events(raw, method, eof=eof)
    return str(caught.value)


# ------------------------------------------------------------------------ requests


def _h11_request(method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    conn = h11.Connection(h11.CLIENT)
    out = conn.send(h11.Request(method=method, target=target, headers=headers)) or b""
    if body:
        out += conn.send(h11.Data(data=body)) or b""
    return out + (conn.send(h11.EndOfMessage()) or b"")


@pytest.mark.parametrize(
    ("method", "target", "headers", "body"),
    [
        ("POST", "/v1/messages?beta=true", [("Host", "api.example.com"), ("Accept", "*/*"),
         ("Content-Type", "application/json"), ("x-api-key", "sk-1"),
         ("Content-Length", "7")], b'{"a":1}'),
        ("GET", "/", [("Host", "127.0.0.1:8080"), ("Connection", "keep-alive")], b""),
        ("GET", "http://origin:81/a?b", [("Accept", "*/*"), ("Host", "origin:81"),
         ("Proxy-Authorization", "Basic bWU6cHc=")], b""),
        ("CONNECT", "api.example.com:443", [("Host", "api.example.com:443")], b""),
        ("POST", "/", [("Host", "h"), ("X-Empty", ""), ("X-Tab", "a\tb"),
         ("Content-Length", "3")], b"abc"),
    ],
)  # fmt: skip
def test_a_request_is_the_bytes_h11_writes(
    method: str, target: str, headers: list[tuple[str, str]], body: bytes
) -> None:
    ours = http11.encode_request(method, target, headers, body)
    assert ours == _h11_request(method, target, headers, body)
    assert ours.split(b"\r\n")[1].lower().startswith(b"host: ")  # Host first, as h11 puts it


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ([("x-api-key", "sk-secret\r\nX-Injected: 1")], "x-api-key"),
        ([("x-api-key", " sk-secret")], "x-api-key"),
        ([("x-api-key", "sk-secret\n")], "x-api-key"),
        ([("authorization", "Bearer sk-sécret")], "authorization"),
        ([("bad name", "v")], "bad name"),
        ([("", "v")], "''"),
    ],
)
def test_a_header_that_cannot_be_written_is_refused_without_quoting_its_value(
    headers: list[tuple[str, str]], named: str
) -> None:
    with pytest.raises(http11.LocalProtocolError) as caught:
        http11.encode_request("POST", "/", [("Host", "h"), *headers])
    assert named in str(caught.value)
    assert "secret" not in str(caught.value) and "sécret" not in str(caught.value)


def test_a_bad_method_or_target_is_refused() -> None:
    for method, target in (("PO ST", "/"), ("", "/"), ("GET", ""), ("GET", "/a b"), ("GET", "/é")):
        with pytest.raises(http11.LocalProtocolError):
            http11.encode_request(method, target, [("Host", "h")])


def test_a_request_asking_to_close_is_not_kept_alive() -> None:
    assert http11.keep_alive([("Host", "h"), ("Connection", "keep-alive")])
    assert not http11.keep_alive([("connection", "Upgrade, Close")])
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    assert _events(raw, keep_alive=False)[1].reusable is False
    assert _events(raw, keep_alive=True, eof=False)[1].reusable is True


# ------------------------------------------------------------------------ heads


def test_status_lines_of_http_1_1_and_1_0_with_or_without_a_reason() -> None:
    for line, expected in (
        (b"HTTP/1.1 200 OK", ("1.1", 200, "OK")),
        (b"HTTP/1.0 404 Not Found", ("1.0", 404, "Not Found")),
        (b"HTTP/1.1 204", ("1.1", 204, "")),
        (b"HTTP/1.1 500 ", ("1.1", 500, "")),
        (b"HTTP/1.1 200 caf\xe9 ok", ("1.1", 200, "caf\xe9 ok")),
    ):
        events, _ = _events(line + b"\r\nContent-Length: 0\r\n\r\n")
        assert events[0][1:4] == expected, line


@pytest.mark.parametrize(
    "line",
    [b"HTTP/2.0 200 OK", b"HTTP/1.1 20 OK", b"HTTP/1.1 2000 OK", b"http/1.1 200 OK",
     b"HTTP/1.1  200 OK", b"HTTP/1.1 200 O\x00K", b"ICY 200 OK", b"HTTP/1.1 abc OK",
     b"HTTP/1.1"],
)  # fmt: skip
def test_a_bad_status_line_is_a_protocol_error(line: bytes) -> None:
    assert _error(line + b"\r\nContent-Length: 0\r\n\r\n").startswith("illegal status line")


def test_header_names_are_lower_cased_and_repeated_fields_kept_in_order() -> None:
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nSet-Cookie: a=1\r\n"
        b"X-Request-ID:   req_1  \r\nset-cookie: b=2\r\nX-Empty:\r\nContent-Length: 0\r\n\r\n"
    )
    (head, end), _ = _events(raw)
    assert head[4] == [
        ("content-type", "text/event-stream"),
        ("set-cookie", "a=1"),
        ("x-request-id", "req_1"),
        ("set-cookie", "b=2"),
        ("x-empty", ""),
        ("content-length", "0"),
    ]
    assert end is http11.END
    headers = transport.Headers(head[4])
    assert headers.get("SET-COOKIE") == "a=1, b=2" and headers["X-Request-Id"] == "req_1"


def test_a_head_may_end_its_lines_with_a_bare_lf() -> None:
    (head, body, end), _ = _events(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok")
    assert head[2] == 200 and body == b"ok" and end is http11.END


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (b"X-Long: a\r\n  folded", "obsolete line folding"),
        (b"X-Long: a\r\n\tfolded", "obsolete line folding"),
        (b"No colon here", "illegal header line"),
        (b"Space Name: v", "illegal header line"),
        (b"Name : v", "illegal header line"),
        (b": v", "illegal header line"),
        (b"X-Nul: a\x00b", "illegal header line"),
        (b"X-Cr: a\rb", "illegal header line"),
        (b"Content-Length: 1, 2", "conflicting Content-Length"),
        (b"Content-Length: 1\r\nContent-Length: 2", "conflicting Content-Length"),
        (b"Content-Length: -1", "bad Content-Length"),
        (b"Content-Length: 1e3", "bad Content-Length"),
        (b"Content-Length: " + b"9" * 21, "bad Content-Length"),
        (b"Transfer-Encoding: gzip", "Only Transfer-Encoding: chunked"),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "multiple Transfer"),
    ],
)
def test_a_bad_header_is_a_protocol_error(head: bytes, message: str) -> None:
    assert message in _error(b"HTTP/1.1 200 OK\r\n" + head + b"\r\n\r\n")


def test_a_response_starting_with_a_blank_line_is_a_protocol_error() -> None:
    assert _error(b"\r\nHTTP/1.1 200 OK\r\n\r\n") == "no response line received"


def test_a_head_longer_than_the_limit_is_a_protocol_error_complete_or_not() -> None:
    big = b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * http11.MAX_HEAD
    assert _error(big, eof=False) == "Receive buffer too long"  # still incomplete
    assert _error(big + b"\r\nContent-Length: 0\r\n\r\n") == "Receive buffer too long"
    fits = b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (http11.MAX_HEAD - 100) + b"\r\n\r\n"
    assert _events(fits + b"body")[0][1] == b"body"


def test_interim_heads_come_before_the_final_one() -> None:
    raw = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    )
    events, parser = _events(raw)
    assert [e[2] for e in events[:3]] == [100, 103, 200]
    assert events[3:] == [b"ok", http11.END]
    assert parser.head is not None and parser.head.status == 200
    assert "Switching Protocols" in _error(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")


# ------------------------------------------------------------------------ bodies


def test_a_content_length_body_ends_at_its_length() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello"
    events, parser = _events(raw, eof=False)
    assert events[1:] == [b"hello", http11.END]
    assert parser.reusable


def test_a_chunked_body_drops_extensions_and_trailers() -> None:
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1 ; x\r\n,\r\n000006\r\n world\r\n"
        b"0;last\r\nX-Trailer: yes\r\nX-Other: 1\r\n\r\n"
    )
    events, parser = _events(raw, eof=False)
    assert events[1:] == [b"hello, world", http11.END]
    assert parser.reusable


@pytest.mark.parametrize(
    ("chunks", "message"),
    [
        (b"zz\r\nab\r\n0\r\n\r\n", "illegal chunk header"),
        (b"\r\nab\r\n0\r\n\r\n", "illegal chunk header"),
        (b"-1\r\n", "illegal chunk header"),
        (b"1" * 21 + b"\r\n", "illegal chunk header"),
        (b"2\r\nabc\r\n0\r\n\r\n", "malformed chunk footer"),
        (b"0\r\nbad trailer\r\n\r\n", "illegal header line"),
    ],
)
def test_a_bad_chunk_is_a_protocol_error(chunks: bytes, message: str) -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
    assert _error(raw).startswith(message)


def test_transfer_encoding_wins_over_content_length_and_the_connection_is_not_kept() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    events, parser = _events(raw, eof=False)
    assert events[1:] == [b"abc", http11.END]
    assert not parser.reusable


def test_a_body_without_framing_runs_until_the_close() -> None:
    events, parser = _events(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end")
    assert events[1:] == [b"to the end", http11.END]
    assert not parser.reusable


@pytest.mark.parametrize(
    ("method", "status"), [("HEAD", 200), ("POST", 204), ("GET", 304), ("CONNECT", 200)]
)
def test_responses_without_a_body(method: str, status: int) -> None:
    raw = b"HTTP/1.1 %d X\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n" % status
    events, _parser = _events(raw, method, eof=False)
    assert [e[2] for e in events[:1]] == [status] and events[1:] == [http11.END]


def test_a_connect_refused_with_a_body_has_its_body() -> None:
    raw = b"HTTP/1.1 407 Proxy Auth\r\nContent-Length: 2\r\n\r\nno"
    assert _events(raw, "CONNECT")[0][1:] == [b"no", http11.END]


# ------------------------------------------------------------------------ ends and reuse


def test_a_close_before_the_end_names_what_was_missing() -> None:
    assert _error(b"") == "Server disconnected without sending a response."
    assert (
        _error(b"HTTP/1.1 200 OK\r\nContent-") == "Server disconnected without sending a response."
    )
    assert _error(b"HTTP/1.1 100 Continue\r\n\r\n") == (
        "Server disconnected without sending a response."
    )
    assert _error(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ndata: {}\n\n") == (
        "peer closed connection without sending complete message body "
        "(received 10 bytes, expected 100)"
    )
    cut = "peer closed connection without sending complete message body (incomplete chunked read)"
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for tail in (b"", b"a", b"a\r\n0123", b"4\r\n0123", b"4\r\n0123\r", b"0\r\n", b"0\r\nX: 1\r\n"):
        assert _error(chunked + tail) == cut, tail


@pytest.mark.parametrize(
    ("raw", "reusable"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", True),
        (b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", True),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", False),
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", False),
        (b"HTTP/1.1 200 OK\r\nConnection: x, CLOSE\r\nContent-Length: 2\r\n\r\nok", False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok\r\n", False),  # bytes after the end
        (b"HTTP/1.1 204 No Content\r\n\r\n", True),
    ],
)
def test_when_the_connection_may_carry_the_next_request(raw: bytes, reusable: bool) -> None:
    events, parser = _events(raw, eof=False)
    assert events[-1] is http11.END
    assert parser.reusable is reusable


def test_nothing_is_reusable_before_the_end() -> None:
    events, parser = _events(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\no", eof=False)
    assert events[-1] is http11.NEED_DATA and not parser.reusable


# ------------------------------------------------------------------------ any split

_names = st.sampled_from(["X-A", "x-b", "Content-Type", "Set-Cookie", "Connection", "Link"])
_values = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=12)


@st.composite
def _responses(draw: st.DrawFn) -> bytes:
    eol = draw(st.sampled_from([b"\r\n", b"\n"]))
    interim = draw(st.lists(st.sampled_from([100, 102, 103]), max_size=2))
    version = draw(st.sampled_from([b"1.1", b"1.0"]))
    status = draw(st.sampled_from([200, 201, 400, 500]))
    headers = draw(st.lists(st.tuples(_names, _values), max_size=4))
    body = draw(st.lists(st.binary(min_size=1, max_size=20), max_size=4))
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    out = b"".join(b"HTTP/1.1 %d Interim%s%s" % (code, eol, eol) for code in interim)
    out += b"HTTP/%s %d Reason Phrase%s" % (version, status, eol)
    out += b"".join(b"%s: %s%s" % (k.encode(), v.encode(), eol) for k, v in headers)
    if framing == "length":
        out += b"Content-Length: %d%s%s%s" % (sum(map(len, body)), eol, eol, b"".join(body))
    elif framing == "chunked":
        out += b"Transfer-Encoding: chunked" + eol + eol
        for piece in body:
            out += b"%x;ext=1\r\n%s\r\n" % (len(piece), piece)
        out += b"0\r\nX-Trailer: t\r\n\r\n"
    else:
        out += eol + b"".join(body)
    return out


@settings(max_examples=60, deadline=None)
@given(_responses())
def test_a_response_split_at_any_byte_gives_the_same_events(raw: bytes) -> None:
    whole, _ = _events(raw)
    assert whole[-1] is http11.END
    for cut in range(len(raw) + 1):
        assert _events(raw, pieces=[cut])[0] == whole, cut
    assert _events(raw, pieces=list(range(1, len(raw))))[0] == whole  # a byte at a time


@settings(max_examples=60, deadline=None)
@given(_responses())
def test_a_valid_response_reads_as_h11_reads_it(raw: bytes) -> None:
    ours, _ = _events(raw)
    conn = h11.Connection(h11.CLIENT)
    conn.send(
        h11.Request(method="POST", target="/", headers=[("Host", "h"), ("Content-Length", "0")])
    )
    conn.send(h11.EndOfMessage())
    conn.receive_data(raw)
    conn.receive_data(b"")
    theirs: list[Any] = []
    while True:
        ev: Any = conn.next_event()
        if type(ev) in (h11.InformationalResponse, h11.Response):
            headers = [(k.decode(), v.decode("latin-1")) for k, v in ev.headers]
            theirs.append(
                (
                    "head",
                    ev.http_version.decode(),
                    ev.status_code,
                    ev.reason.decode("latin-1"),
                    headers,
                )
            )
        elif type(ev) is h11.Data:
            if theirs and isinstance(theirs[-1], bytes):
                theirs[-1] += bytes(ev.data)
            else:
                theirs.append(bytes(ev.data))
        else:
            assert type(ev) is h11.EndOfMessage
            theirs.append(http11.END)
            break
    assert ours == theirs


# ------------------------------------------------------------------------ over a socket


async def _connections(head: bytes) -> int:
    """The connections two requests take when each is answered with `head` + "ok"."""
    opened = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal opened
        opened += 1
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                await reader.readexactly(2)  # the body: "{}"
                writer.write(head + b"Content-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    try:
        async with http.new_transport() as client:
            for _ in range(2):
                response = await http.open_stream(client, url, {}, b"{}", max_retries=0)
                assert await response.aread() == b"ok"
                await response.aclose()
    finally:
        server.close()
    return opened


@pytest.mark.parametrize(
    ("head", "connections"),
    [
        (b"HTTP/1.1 200 OK\r\n", 1),
        (b"HTTP/1.0 200 OK\r\n", 2),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n", 2),
    ],
)
async def test_the_transport_reuses_a_connection_only_when_both_sides_allow(
    head: bytes, connections: int
) -> None:
    assert await _connections(head) == connections


async def test_a_malformed_response_is_a_protocol_error_of_the_transport() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    try:
        async with http.new_transport() as client:
            with pytest.raises(http.TransportFailure, match=r"Connection error\.") as caught:
                await http.open_stream(client, url, {}, b"", max_retries=0)
    finally:
        server.close()
    assert isinstance(caught.value.__cause__, transport.RemoteProtocolError)
    assert "obsolete line folding" in str(caught.value.__cause__)
