"""One fault list, every dialect: the native server (Content-Length and `--jsonl`) and
`--acp` answer each failure class with the same JSON-RPC error code (or, where JSON-RPC
says so, with nothing), and the process keeps serving after each one.

Each fault is written together with a harmless request behind it, in one write; what
the server wrote from the fault up to that request's answer is exactly the fault's
answer (nothing at all for a notification, a stray response or a cancel of nothing).
The server is a real subprocess over real pipes (tests/support/raw_peer.py).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.raw_peer import RawPeer


@dataclass(frozen=True)
class Dialect:
    """What differs between the dialects for the same fault: method names and params."""

    peer: str
    initialize: dict[str, Any]
    cancel: tuple[str, str]
    """The cancel notification and its id key."""

    def list_sessions(self, cwd: str) -> tuple[str, dict[str, Any]]:
        key = "cwd" if self.peer == "acp" else "workingDir"
        return "session/list", {key: cwd}

    def open_session(self, session_id: str, cwd: Path) -> tuple[str, dict[str, Any]]:
        if self.peer == "acp":
            return "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
        return "session/create", {"sessionId": session_id, "workingDir": str(cwd)}

    def bad_params(self) -> tuple[str, dict[str, Any]]:
        if self.peer == "acp":
            return "session/new", {"cwd": 5, "mcpServers": []}
        return "session/create", {"workingDir": 5}


NATIVE_INIT = {"protocolVersion": 1, "capabilities": {}}
ACP_INIT = {"protocolVersion": 1, "clientCapabilities": {}}
DIALECTS = {
    "content-length": Dialect("content-length", NATIVE_INIT, ("$/cancelRequest", "id")),
    "jsonl": Dialect("jsonl", NATIVE_INIT, ("$/cancelRequest", "id")),
    "acp": Dialect("acp", ACP_INIT, ("$/cancel_request", "requestId")),
}
EVERY_DIALECT = pytest.mark.parametrize("name", list(DIALECTS))

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
INVALID_PARAMS, INTERNAL_ERROR, HISTORY_UNREADABLE = -32602, -32603, -32015


def request(msg_id: Any, method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


class Faults:
    """Sends a fault and a ping behind it; returns what the server wrote in between."""

    def __init__(self, peer: RawPeer, dialect: Dialect):
        self.peer = peer
        self.dialect = dialect
        self.pings = 0

    async def answers_to(self, *bodies: bytes, skipped: bool = False) -> list[dict[str, Any]]:
        """Everything the server wrote for `bodies` (the ping's answer left out), once
        the ping and every request among `bodies` are answered (`skipped`: none is, the
        reader drops them)."""
        self.pings += 1
        ping = f"ping-{self.pings}"
        start = len(self.peer.messages)
        data = b"".join(self.peer.frame(b) for b in bodies)
        self.peer.send_raw(
            data + self.peer.frame(request(ping, "initialize", self.dialect.initialize))
        )
        answer = await self.peer.answer(ping, timeout=60)
        assert "result" in answer, answer  # still serving, in order
        wanted = Counter(() if skipped else _request_ids(bodies))

        def written() -> list[dict[str, Any]]:
            return [m.msg for m in self.peer.messages[start:] if m.msg.get("id") != ping]

        def complete() -> bool:
            got = Counter(m.get("id") for m in written() if "method" not in m)
            return all(got[i] >= n for i, n in wanted.items())

        await self.peer.wait_for(complete, timeout=60)
        return written()


def _request_ids(bodies: tuple[bytes, ...]) -> list[Any]:
    """The ids of the well-formed requests among `bodies` (each gets an answer)."""
    ids = []
    for body in bodies:
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            continue
        if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
            if isinstance(msg["id"], str | int) and msg.get("jsonrpc") == "2.0":
                ids.append(msg["id"])
    return ids


async def faults_of(name: str, env: dict[str, str], workspace: Path) -> list[tuple[str, Any]]:
    """Run the fault list against one dialect: each fault and what it got."""
    dialect = DIALECTS[name]
    history = Path(env["SEMA_ROOT"]) / "history"
    history.mkdir(parents=True, exist_ok=True)
    (history / "bad-seed.json").write_text('{"messages": 5, "todos": []}')
    peer = await RawPeer(env, dialect=dialect.peer).start()
    try:
        faults = Faults(peer, dialect)
        await peer.call("init", "initialize", dialect.initialize, timeout=60)
        seen: list[tuple[str, Any]] = []
        lst, lst_params = dialect.list_sessions(str(workspace))
        cancel, cancel_key = dialect.cancel
        cases: list[tuple[str, list[bytes]]] = [
            ("malformed JSON", [b'{"jsonrpc": "2.0", "id": 1, "method": '] ),
            ("not UTF-8", [b'{"jsonrpc":"2.0","id":2,"method":"\xff\xfe"}']),
            ("absurd nesting", [b'{"jsonrpc":"2.0","id":"deep","params":' + b"[" * 100_000]),
            ("a batch", [b'[{"jsonrpc":"2.0","id":3,"method":"initialize"}]']),
            ("wrong jsonrpc version", [b'{"jsonrpc":"1.0","id":"v","method":"initialize"}']),
            ("an id that is an object", [b'{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}']),
            ("no method", [b'{"jsonrpc":"2.0","id":"m"}']),
            ("a method that is not a string", [b'{"jsonrpc":"2.0","id":"n","method":7}']),
            ("unknown method", [request("u", "no/such/method", {})]),
            ("invalid params", [request("p", *dialect.bad_params())]),
            # A NUL byte in a path: the engine's path resolution raises ValueError, which
            # no handler expects (an internal error, answered as such).
            ("internal error", [request("i", lst, dialect.list_sessions("/tmp/a\x00b")[1])]),
            ("corrupt history", [request("h", *dialect.open_session("bad-seed", workspace))]),
            ("response to an unknown id", [b'{"jsonrpc":"2.0","id":"nobody","result":{}}']),
            ("error response to an unknown id",
             [b'{"jsonrpc":"2.0","id":"nobody","error":{"code":-1,"message":"x"}}']),
            ("duplicate request id", [request("d", lst, lst_params), request("d", lst, lst_params)]),
            ("cancel of an unknown id",
             [json.dumps({"jsonrpc": "2.0", "method": cancel, "params": {cancel_key: "x9"}}).encode()]),
            ("cancel without an id", [json.dumps({"jsonrpc": "2.0", "method": cancel}).encode()]),
            ("unknown notification", [b'{"jsonrpc":"2.0","method":"no/such/notification"}']),
        ]  # fmt: skip
        for what, bodies in cases:
            answers = await faults.answers_to(*bodies)
            seen.append((what, [(a.get("id"), _outcome(a)) for a in answers]))
        return seen
    finally:
        await peer.close()


def _outcome(answer: dict[str, Any]) -> Any:
    return answer["error"]["code"] if "error" in answer else "result"


EXPECTED = [
    ("malformed JSON", [(None, PARSE_ERROR)]),
    ("not UTF-8", [(None, PARSE_ERROR)]),
    ("absurd nesting", [(None, PARSE_ERROR)]),
    ("a batch", [(None, INVALID_REQUEST)]),
    ("wrong jsonrpc version", [("v", INVALID_REQUEST)]),
    ("an id that is an object", [(None, INVALID_REQUEST)]),
    ("no method", [("m", INVALID_REQUEST)]),
    ("a method that is not a string", [("n", INVALID_REQUEST)]),
    ("unknown method", [("u", METHOD_NOT_FOUND)]),
    ("invalid params", [("p", INVALID_PARAMS)]),
    ("internal error", [("i", INTERNAL_ERROR)]),
    ("corrupt history", [("h", HISTORY_UNREADABLE)]),
    ("response to an unknown id", []),
    ("error response to an unknown id", []),
    # The second is refused while the first runs; the first is answered.
    ("duplicate request id", [("d", INVALID_REQUEST), ("d", "result")]),
    ("cancel of an unknown id", []),
    ("cancel without an id", []),
    ("unknown notification", []),
]


@EVERY_DIALECT
async def test_every_dialect_answers_the_fault_list_alike(
    name: str, server_env: dict[str, str], workspace: Path
) -> None:
    assert await faults_of(name, server_env, workspace) == EXPECTED


@EVERY_DIALECT
async def test_an_oversized_message_is_refused_and_the_next_is_served(
    name: str, server_env: dict[str, str]
) -> None:
    """A message over the limit (256 MiB, here lowered to 1 MiB by its setting) is
    refused -32600 (id unknown: null) and skipped whole; the message behind it is served."""
    dialect = DIALECTS[name]
    env = {**server_env, "SEMA_MAX_MESSAGE_BYTES": str(1024 * 1024)}
    peer = await RawPeer(env, dialect=dialect.peer).start()
    try:
        head = b'{"jsonrpc":"2.0","id":"big","method":"initialize","params":{"x":"'
        body = head + b"a" * (3 * 1024 * 1024) + b'"}}'
        got = await Faults(peer, dialect).answers_to(body, skipped=True)
        assert [(a.get("id"), _outcome(a)) for a in got] == [(None, INVALID_REQUEST)]
        assert "larger than" in got[0]["error"]["message"]
    finally:
        await peer.close()
