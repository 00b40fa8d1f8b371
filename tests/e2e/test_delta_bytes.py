"""The bytes of the high-rate delta notifications (text, thinking, tool output chunks).

The server writes them from a per-message template instead of serialising each one
generically (rpc/server.py `DeltaEncoder`). What a client reads must not change: each
chunk's body is byte for byte the generic serialisation (`{"jsonrpc","method","params":
model.wire()}`, compact, ASCII-escaped) of the same values, in both framings. The wire
test reads the server's raw stdout and splits the frames itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.plain_checks import check_bool, check_int, check_optional_str, check_union
from sema_rpc.plain_model import Field
from sema_rpc.protocol import (
    EventParams,
    TextChunkParams,
    ThinkingChunkParams,
    ToolExecutionUpdateParams,
)
from sema_rpc.rpc.server import DeltaEncoder
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import REPO

TRICKY = (
    'He said "hi" \\ back\nthen\r\ttabbed, \x00 \x1f \x7f, é ß 中文 € 😀 '
    "\u2028 \u2029 \ufeff, a lone \ud800 and \udfff, end"
)
"""Quotes, backslashes, control characters, non-ASCII (BMP and astral), the JSON-legal
line separators a JSONL reader must not split on, and lone surrogates (which a JSON
string escape can carry from the model's stream)."""

CHUNKS = {
    "message:text:chunk": TextChunkParams,
    "message:thinking:chunk": ThinkingChunkParams,
    "tool:execution:update": ToolExecutionUpdateParams,
}


def generic(method: str, params: dict[str, Any]) -> bytes:
    """The generic path: the notification as a dict, the model's wire dump, compact ASCII JSON."""
    model = CHUNKS[method].model_validate(params)
    message = {"jsonrpc": "2.0", "method": method, "params": model.wire()}
    return json.dumps(message, separators=(",", ":")).encode("ascii")


def split_frames(raw: bytes, jsonl: bool) -> list[bytes]:
    """The message bodies of a server's whole stdout, framing checked strictly."""
    if jsonl:
        assert raw.endswith(b"\n")
        return raw[:-1].split(b"\n")
    bodies = []
    pos = 0
    while pos < len(raw):
        end = raw.index(b"\r\n\r\n", pos)
        header = raw[pos:end]
        assert header.startswith(b"Content-Length: "), header
        length = int(header[len(b"Content-Length: ") :])
        bodies.append(raw[end + 4 : end + 4 + length])
        pos = end + 4 + length
        assert len(bodies[-1]) == length
    return bodies


async def converse(env: dict[str, str], workspace: Path, jsonl: bool) -> bytes:
    """initialize, a session, one prompt (thinking, text, a Bash call, text), shutdown,
    exit: the server's stdout up to its end."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        *(["--jsonl"] if jsonl else []),
        env=env,
        cwd=str(REPO),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    out = bytearray()

    def send(msg_id: int | None, method: str, params: dict[str, Any]) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            message["id"] = msg_id
        body = json.dumps(message).encode()
        assert proc.stdin is not None
        proc.stdin.write(
            body + b"\n" if jsonl else b"Content-Length: %d\r\n\r\n" % len(body) + body
        )

    async def until(marker: bytes) -> None:
        assert proc.stdout is not None
        while marker not in out:
            data = await asyncio.wait_for(proc.stdout.read(65536), 30)
            assert data, f"stdout ended before {marker!r}"
            out.extend(data)

    send(1, "initialize", {"protocolVersion": 1})
    await until(b'"id":1')
    send(
        2,
        "session/create",
        {"workingDir": str(workspace), "model": "anthropic/claude-x", "permissionMode": "bypass"},
    )
    await until(b'"id":2')
    sid = json.loads(split_frames(bytes(out), jsonl)[-1])["result"]["sessionId"]
    send(3, "session/prompt", {"sessionId": sid, "input": "go"})
    await until(b'"id":3')
    send(4, "shutdown", {})
    await until(b'"id":4')
    send(None, "exit", {})
    proc.stdin.close()
    out.extend(await asyncio.wait_for(proc.stdout.read(), 30))
    assert await asyncio.wait_for(proc.wait(), 30) == 0
    return bytes(out)


@pytest.mark.parametrize("jsonl", [False, True], ids=["content-length", "jsonl"])
async def test_delta_notifications_are_the_generic_bytes(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, jsonl: bool
):
    (workspace / "say.txt").write_text('out "q" \\ é € 😀\n\ttab\n' * 3)
    scripted_llm.script(
        Reply.turn(
            thinking=TRICKY,
            text=TRICKY,
            tools=[("Bash", {"command": "cat say.txt"}, 'call_"x"\\é')],
            chunks=len(TRICKY),  # one character a delta: each special one on its own
        ),
        Reply.text(TRICKY, chunks=7),
    )
    raw = await converse(server_env, workspace, jsonl)

    bodies = split_frames(raw, jsonl)
    seen: dict[str, list[dict[str, Any]]] = {method: [] for method in CHUNKS}
    for body in bodies:
        assert body.isascii()
        message = json.loads(body)
        method = message.get("method")
        if method in CHUNKS:
            assert body == generic(method, message["params"]), body
            seen[method].append(message["params"])

    # What the chunks carried, so the comparison above covered the tricky text.
    def joined(method: str) -> str:
        return "".join(p["delta"] for p in seen[method])

    assert joined("message:thinking:chunk") == TRICKY
    assert joined("message:text:chunk") == TRICKY + TRICKY
    assert len(seen["message:text:chunk"]) == len(TRICKY) + 7
    assert "é € 😀" in joined("tool:execution:update")
    assert {p["toolCallId"] for p in seen["tool:execution:update"]} == {'call_"x"\\é'}


class _WithPartId(TextChunkParams):
    """A delta with a field of its own beside `messageId`: the encoder serialises every
    field of the class, whatever it adds (a plain model's fields are its table)."""

    __plain_fields__ = (
        *TextChunkParams.__plain_fields__,
        Field("part_id", check_optional_str, alias="partId", default=None, scalar=True),
    )


class _WithNumber(TextChunkParams):
    """A constant field that is not a string: 1 and True are equal keys but dump apart,
    so such a class goes the generic way."""

    __plain_fields__ = (
        *TextChunkParams.__plain_fields__,
        Field("n", check_union(check_int, check_bool), default=1, scalar=True),
    )


@pytest.mark.parametrize(
    "event",
    [
        TextChunkParams(delta=TRICKY, session_id="s1", seq=12),
        TextChunkParams(delta="", session_id="s1", seq=0),
        ThinkingChunkParams(delta=TRICKY, session_id="s1", agent_id="a_1", seq=3),
        ToolExecutionUpdateParams(
            delta=TRICKY, session_id="s", seq=9, tool_call_id='c"1\u2028', tool_name="Bash"
        ),
        # a constant value that holds the encoder's marker: the generic way
        ToolExecutionUpdateParams(
            delta="x", session_id="s", seq=9, tool_call_id="\x00seq", tool_name="Bash"
        ),
        _WithPartId(delta=TRICKY, session_id="s1", seq=4, part_id="p_0123456789ab"),
        _WithPartId(delta=TRICKY, session_id="s1", seq=5),
        _WithNumber(delta=TRICKY, session_id="s1", seq=6, n=True),
    ],
    ids=["text", "empty", "thinking", "tool", "marker", "message-id", "message-id-none", "number"],
)
def test_encoder_matches_the_generic_serialisation(event: EventParams):
    encoder = DeltaEncoder()
    if isinstance(event, _WithNumber):  # a template for n=1 must not serve n=True
        encoder.encode(_WithNumber(delta="x", session_id="s1", seq=1, n=1))
    expected = json.dumps(
        {"jsonrpc": "2.0", "method": event.event, "params": event.wire()}, separators=(",", ":")
    ).encode("ascii")
    assert encoder.encode(event) == expected
    assert encoder.encode(event) == expected  # from the template the first call cached
    event.seq += 1
    event.delta += '"'
    assert encoder.encode(event) == json.dumps(
        {"jsonrpc": "2.0", "method": event.event, "params": event.wire()}, separators=(",", ":")
    ).encode("ascii")
