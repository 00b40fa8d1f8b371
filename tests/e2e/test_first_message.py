"""The stdio server's first message, read before its event loop (frames.read_first), over
real pipes, in both dialects and both native framings: a plainly valid `initialize`
answered whatever the reads cut it into, a second message in the same write served
after it, anything else first served as it always was, end of input and stop signals
while the server waits for its first message."""

from __future__ import annotations

import itertools
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0

DIALECTS = {
    "content-length": ([], False),
    "jsonl": (["--jsonl"], True),
    "acp": (["--acp"], True),
}


def _request(msg_id: int, method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


def _initialize(msg_id: int = 1) -> bytes:
    return _request(msg_id, "initialize", {"protocolVersion": 1, "clientInfo": {"name": "t"}})


class Server:
    """`python -m sema_rpc` over pipes: bytes in exactly as written, messages out."""

    def __init__(self, dialect: str, env: dict[str, str]):
        args, self.jsonl = DIALECTS[dialect]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sema_rpc", *args], cwd=REPO, env={**os.environ, **env},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.out = b""

    def frame(self, body: bytes) -> bytes:
        return body + b"\n" if self.jsonl else b"Content-Length: %d\r\n\r\n" % len(body) + body

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        os.write(self.proc.stdin.fileno(), data)  # one write(2): the bytes as given

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def _take(self) -> dict[str, Any] | None:
        if self.jsonl:
            line, sep, rest = self.out.partition(b"\n")
            if not sep:
                return None
            self.out = rest
            return json.loads(line)  # type: ignore[no-any-return]
        head, sep, rest = self.out.partition(b"\r\n\r\n")
        if not sep:
            return None
        length = int(head.split(b":")[1])
        if len(rest) < length:
            return None
        self.out = rest[length:]
        return json.loads(rest[:length])  # type: ignore[no-any-return]

    def message(self) -> dict[str, Any]:
        """The next message the server writes."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + DEADLINE_S
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while (msg := self._take()) is None:
                assert sel.select(max(0.0, deadline - time.monotonic())), "no answer in time"
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                assert chunk, f"stdout closed; stderr: {self.stderr()}"
                self.out += chunk
        return msg

    def ended(self) -> tuple[int, bytes]:
        """The exit code and what was written after the messages read."""
        assert self.proc.stdout is not None
        rest = self.proc.stdout.read()
        return self.proc.wait(DEADLINE_S), self.out + rest

    def stderr(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def readable(self) -> bytes:
        """What stdout holds now (without waiting)."""
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(0):
                return b""
        return os.read(self.proc.stdout.fileno(), 65536)

    def wait_on_stdin(self) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not self.waiting_on_stdin():
            assert self.proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)

    def waiting_on_stdin(self) -> bool:
        """Blocked in read(0, …) (the process table's view: /proc/PID/syscall)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/syscall").read_text().split()
        except OSError:
            return False
        return len(fields) > 1 and fields[0] == "0" and int(fields[1], 16) == 0


@pytest.fixture(params=list(DIALECTS))
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(dialect: str, server_env: dict[str, str]) -> Any:
    srv = Server(dialect, server_env)
    yield srv
    if srv.proc.poll() is None:
        srv.proc.kill()
        srv.proc.wait()


def _is_initialize_answer(msg: dict[str, Any], msg_id: int, dialect: str) -> bool:
    result = msg.get("result") or {}
    info = result.get("agentInfo" if dialect == "acp" else "serverInfo") or {}
    return (
        msg.get("id") == msg_id
        and result.get("protocolVersion") == 1
        and info.get("name") == "sema-rpc"
    )


def test_an_initialize_cut_into_many_writes_is_answered(server: Server, dialect: str) -> None:
    data = server.frame(_initialize())
    cuts = [0, 3, 20, len(data) - 1]  # inside the header (or the line), the body, the last byte
    for start, end in itertools.pairwise(cuts):
        server.write(data[start:end])
        time.sleep(0.05)
    # All but the last byte read and the server waiting for more: nothing answered yet.
    server.wait_on_stdin()
    assert server.readable() == b""
    server.write(data[-1:])
    assert _is_initialize_answer(server.message(), 1, dialect)
    server.close()
    code, rest = server.ended()
    assert (code, rest) == (0, b"")


def test_a_second_message_in_the_same_write_is_served_after_it(
    server: Server, dialect: str
) -> None:
    """Two `initialize`s in one write: the first answered before the loop, the second by
    the server (its models loaded): the same result, in order."""
    server.write(server.frame(_initialize(1)) + server.frame(_initialize(2)))
    first, second = server.message(), server.message()
    assert _is_initialize_answer(first, 1, dialect)
    assert _is_initialize_answer(second, 2, dialect)
    assert first["result"] == second["result"]
    server.close()
    assert server.ended() == (0, b"")


def test_a_first_message_that_is_not_initialize_is_served_as_usual(
    server: Server, dialect: str
) -> None:
    server.write(server.frame(_request(7, "no/such", {})))
    refused = server.message()
    assert refused["id"] == 7 and refused["error"]["code"] == -32601
    server.write(server.frame(_initialize(8)))
    assert _is_initialize_answer(server.message(), 8, dialect)
    server.close()
    assert server.ended() == (0, b"")


def test_an_initialize_the_server_does_not_vouch_for_gets_the_models_answer(
    server: Server, dialect: str
) -> None:
    """A version that is not a plain integer of the right value: not answered before the
    loop; the models refuse it with their usual -32602 (naming `protocolVersion`), and
    the next, plain `initialize` is answered."""
    version = "one" if dialect == "acp" else 2
    server.write(server.frame(_request(1, "initialize", {"protocolVersion": version})))
    refused = server.message()
    assert refused["id"] == 1 and refused["error"]["code"] == -32602
    assert any(e.get("loc") == ["protocolVersion"] for e in refused["error"]["data"])
    server.write(server.frame(_initialize(2)))
    assert _is_initialize_answer(server.message(), 2, dialect)
    server.close()
    assert server.ended() == (0, b"")


def test_garbage_first_is_answered_and_the_next_initialize_still_is(
    server: Server, dialect: str
) -> None:
    server.write(server.frame(b"not json {"))
    bad = server.message()
    assert bad["id"] is None and bad["error"]["code"] == -32700
    server.write(server.frame(_initialize(2)))
    assert _is_initialize_answer(server.message(), 2, dialect)
    server.close()
    assert server.ended() == (0, b"")


def test_a_bad_header_first_costs_that_message_only(server_env: dict[str, str]) -> None:
    srv = Server("content-length", server_env)
    body = _initialize(1)
    srv.write(b"Content-Length: 5.0\r\n\r\n" + body + srv.frame(_initialize(2)))
    bad = srv.message()
    assert bad["id"] is None and bad["error"]["code"] == -32600
    assert _is_initialize_answer(srv.message(), 2, "content-length")
    srv.close()
    assert srv.ended() == (0, b"")


def test_end_of_input_before_a_whole_first_message(server: Server, dialect: str) -> None:
    """Content-Length: the half message is reported (-32600) and the server exits 0.
    One JSON per line: a last line without its newline is still read, so the
    `initialize` is answered, then the server exits 0."""
    body = _initialize(1)
    if server.jsonl:
        server.write(body)
    else:
        server.write(server.frame(body)[:-5])
    server.close()
    msg = server.message()
    if server.jsonl:
        assert _is_initialize_answer(msg, 1, dialect)
    else:
        assert msg["id"] is None and msg["error"]["code"] == -32600
        assert "end of input" in msg["error"]["message"]
    assert server.ended() == (0, b"")


def test_end_of_input_with_nothing_read(server: Server) -> None:
    server.close()
    assert server.ended() == (0, b"")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_while_waiting_for_the_first_message(
    server_env: dict[str, str], signum: int
) -> None:
    """Stopped before anything was read: it exits 128 + the signal, writing nothing, as
    a server stopped after its first message does."""
    srv = Server("content-length", server_env)
    srv.wait_on_stdin()
    srv.proc.send_signal(signum)
    assert srv.ended() == (128 + signum, b"")
