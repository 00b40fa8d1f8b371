"""`sema-rpc --acp` against the ACP conformance requirements of the official test kit
(agentclientprotocol/acp-tck): each test is named by the requirement ids it checks
(`ACP-<AREA>-<NNN>`). A raw line client over real pipes, so every byte on stdout is seen.
The cancel and close races and the image capability are tested in test_acp.py."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_client import REPO, SchemaCheck
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.asyncio

QUIET_S = 1.0
"""How long "no answer arrives" is watched for (a heuristic, as the test kit's)."""


class LineClient:
    """A client that writes and reads raw lines, keeping every line of stdout."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.raw: list[bytes] = []
        self.messages: list[dict[str, Any]] = []
        self.check = SchemaCheck()
        self._next = 1000
        self._changed = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())
        self.auto_answer: dict[str, Any] = {}
        """Agent → client method → the result this client answers with."""

    @classmethod
    async def start(cls, env: dict[str, str]) -> LineClient:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sema_rpc",
            "--acp",
            cwd=str(REPO),
            env={**os.environ, **env},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.raw.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                message = {"unparsable": line.decode(errors="replace")}
            self.messages.append(message)
            if isinstance(message, dict) and "jsonrpc" in message:
                self.check.message("in", message)
                method = message.get("method")
                if method in self.auto_answer and "id" in message:
                    answer = {"jsonrpc": "2.0", "id": message["id"]}
                    answer["result"] = self.auto_answer[method]
                    await self.send(answer)
            self._changed.set()

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        if "jsonrpc" in message and "method" in message:
            self.check.message("out", message)
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: dict[str, Any], msg_id: Any = None) -> dict[str, Any]:
        """The whole answer (`result` or `error`)."""
        if msg_id is None:
            self._next += 1
            msg_id = self._next
        await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await self.answer(msg_id)

    async def answer(self, msg_id: Any, timeout: float = 30) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while True:
                for m in self.messages:
                    if m.get("id") == msg_id and "method" not in m:
                        return m
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(wait(), timeout)

    def requests_to_client(self) -> list[str]:
        return [m["method"] for m in self.messages if "method" in m and "id" in m]

    async def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = await asyncio.wait_for(self.proc.wait(), 15)
        await self._reader
        return code


async def started(env: dict[str, str], workspace: Path, caps: dict[str, Any] | None = None):
    client = await LineClient.start(env)
    init = await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps or {}})
    new = await client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    return client, init["result"], new["result"]["sessionId"]


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


async def test_ACP_INIT_001_002_003_004_version_negotiation_never_echoes_what_it_does_not_speak(
    server_env,
):
    client = await LineClient.start(server_env)
    v1 = await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    future = await client.call(
        "initialize",
        {"protocolVersion": 65535, "clientCapabilities": {}, "info": {"name": "x", "version": "9"}},
    )
    old = await client.call("initialize", {"protocolVersion": 0})
    assert v1["result"]["protocolVersion"] == 1
    assert future["result"]["protocolVersion"] == 1, "65535 is not echoed"
    assert old["result"]["protocolVersion"] == 1
    info = v1["result"]["agentInfo"]
    assert info["name"] == "sema-rpc" and info["version"]
    assert await client.close() == 0
    assert not client.check.errors, client.check.errors[:5]


async def test_ACP_TRANSPORT_001_002_SCHEMA_001_stdout_carries_only_protocol_lines(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.tools(
            [
                ("Bash", {"command": "echo to-stdout; echo to-stderr >&2; printf '\\xff'"}, "b1"),
                ("Read", {"file_path": str(workspace / "README.md")}, "r1"),
                ("Read", {"file_path": "/etc/passwd"}, "r2"),
            ]
        ),
        Reply.text("Done, naïve café ✓."),
    )
    client, _init, sid = await started(server_env, workspace)
    client.auto_answer["session/request_permission"] = {
        "outcome": {"outcome": "selected", "optionId": "allow_once"}
    }
    answer = await client.call("session/prompt", {"sessionId": sid, "prompt": text("go")})
    assert answer["result"]["stopReason"] == "end_turn"
    await client.send({"jsonrpc": "2.0", "id": "bad", "method": "session/prompt", "params": {}})
    await client.answer("bad")
    assert await client.close() == 0
    assert client.raw, "something was said"
    for line in client.raw:
        line.decode("utf-8")  # ACP-TRANSPORT-002: raises on invalid UTF-8
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", line
    assert not any("unparsable" in m for m in client.messages)
    agents = [e for e in client.check.errors if e.startswith("in ")]
    assert not agents, agents[:5]  # ACP-SCHEMA-001: what the agent sent


async def test_ACP_JSONRPC_001_002_005_ids_echoed_exactly_one_of_result_or_error(
    server_env, workspace
):
    client, _init, sid = await started(server_env, workspace)
    by_int = await client.call("session/list", {}, msg_id=7)
    by_str = await client.call("session/list", {}, msg_id="seven")
    failed = await client.call("session/set_mode", {"sessionId": sid, "modeId": "nope"}, msg_id=8)
    after = await client.call("session/list", {}, msg_id="after")
    assert by_int["id"] == 7 and by_str["id"] == "seven" and failed["id"] == 8
    for answer in (by_int, by_str, failed, after):
        assert ("result" in answer) != ("error" in answer)
    assert isinstance(failed["error"]["code"], int) and failed["error"]["message"]
    assert "result" in after, "the connection stays usable after an error"
    assert await client.close() == 0


async def test_ACP_JSONRPC_003_004_EXT_001_ERROR_001_unknown_methods_and_notifications(
    server_env, workspace
):
    client, _init, sid = await started(server_env, workspace)
    extension = await client.call("_vendor/unknown", {"x": 1})
    unknown = await client.call("no/such_method", {})
    assert extension["error"]["code"] == -32601
    assert unknown["error"]["code"] == -32601
    before = len(client.messages)
    await client.notify("_vendor/ping", {"sessionId": sid})
    await client.notify("no/such_notification", {})
    await client.notify("session/cancel", {"sessionId": sid})  # nothing runs: nothing to say
    await asyncio.sleep(QUIET_S)
    assert client.messages[before:] == [], "notifications are never answered"
    alive = await client.call("session/list", {})
    assert "result" in alive
    for message in client.messages:
        if "error" in message:
            text_ = message["error"]["message"]
            assert text_ and "\n" not in text_, message
    assert await client.close() == 0


async def test_ACP_META_001_meta_is_accepted_everywhere_and_passed_over(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("fine"))
    meta = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "x": [1]}
    client = await LineClient.start(server_env)
    init = await client.call("initialize", {"protocolVersion": 1, "_meta": meta})
    new = await client.call("session/new", {"cwd": str(workspace), "mcpServers": [], "_meta": meta})
    sid = new["result"]["sessionId"]
    answer = await client.call(
        "session/prompt", {"sessionId": sid, "prompt": text("hi"), "_meta": meta}
    )
    assert "result" in init
    assert answer["result"]["stopReason"] == "end_turn"
    body = json.dumps(scripted_llm.requests[-1].body)
    assert "traceparent" not in body, "client metadata is not the model's business"
    assert await client.close() == 0


async def test_ACP_CLIENTCAP_001_002_003_no_fs_terminal_or_elicitation_unless_advertised(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    question = {
        "questions": [
            {
                "question": "Which?",
                "header": "Pick",
                "options": [
                    {"label": "a", "description": "A"},
                    {"label": "b", "description": "B"},
                ],
                "multiSelect": False,
            }
        ]
    }
    scripted_llm.script(
        Reply.tools(
            [
                ("Read", {"file_path": str(workspace / "README.md")}, "c1"),
                ("Write", {"file_path": str(workspace / "new.txt"), "content": "x\n"}, "c2"),
                ("Bash", {"command": "touch ran.txt"}, "c3"),
                ("AskUserQuestion", question, "c4"),
            ]
        ),
        Reply.text("ok"),
    )
    client, _init, sid = await started(server_env, workspace)
    client.auto_answer["session/request_permission"] = {
        "outcome": {"outcome": "selected", "optionId": "allow_once"}
    }
    answer = await client.call("session/prompt", {"sessionId": sid, "prompt": text("all")})
    assert answer["result"]["stopReason"] == "end_turn"
    assert (workspace / "new.txt").read_text() == "x\n" and (workspace / "ran.txt").exists()
    asked = set(client.requests_to_client())
    assert asked == {"session/request_permission"}, asked
    assert await client.close() == 0


async def test_ACP_SHUTDOWN_001_the_agent_exits_promptly_on_eof_even_mid_turn(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    import threading

    gate = threading.Event()
    reply = Reply.text("never finished", chunks=3, gate=gate)
    scripted_llm.script(reply)
    client, _init, sid = await started(server_env, workspace)
    await client.send(
        {
            "jsonrpc": "2.0",
            "id": "p",
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": text("go")},
        }
    )
    await asyncio.to_thread(reply.at_gate.wait, 15)
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        assert await client.close() == 0
    finally:
        gate.set()
    assert loop.time() - began < 10
    answer = next(m for m in client.messages if m.get("id") == "p")
    assert answer["result"]["stopReason"] == "cancelled", "the open prompt is answered"


async def test_ACP_LIST_002_DELETE_002_RESUME_002_LOAD_002_session_lifecycle_edges(
    server_env, scripted_llm: ScriptedLLM, workspace, tmp_path
):
    scripted_llm.script(Reply.text("remembered"))
    client, _init, sid = await started(server_env, workspace)
    await client.call("session/prompt", {"sessionId": sid, "prompt": text("remember")})
    empty = await client.call("session/list", {"cwd": str(tmp_path / "nobody-here")})
    assert empty["result"]["sessions"] == []
    gone = await client.call("session/delete", {"sessionId": "never-created"})
    assert gone["result"] == {}, "deleting what is not there succeeds silently"
    assert await client.close() == 0

    client = await LineClient.start(server_env)
    await client.call("initialize", {"protocolVersion": 1})
    before = len(client.messages)
    resumed = await client.call("session/resume", {"sessionId": sid, "cwd": str(workspace)})
    at = client.messages.index(resumed)
    history = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"}
    kinds = [
        m["params"]["update"]["sessionUpdate"]
        for m in client.messages[before:at]
        if m.get("method") == "session/update"
    ]
    assert not history & set(kinds), "resume replays nothing"
    await client.call("session/close", {"sessionId": sid})
    before = len(client.messages)
    loaded = await client.call(
        "session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
    )
    at = client.messages.index(loaded)
    await asyncio.sleep(QUIET_S)
    replay = [
        m["params"]["update"]["sessionUpdate"]
        for m in client.messages[at + 1 :]
        if m.get("method") == "session/update"
    ]
    assert set(replay) <= {"available_commands_update"}, "the replay comes before the answer"
    assert "agent_message_chunk" in [
        m["params"]["update"]["sessionUpdate"]
        for m in client.messages[before:at]
        if m.get("method") == "session/update"
    ]
    assert await client.close() == 0


async def test_ACP_PROMPTCAP_003_CONFIG_003_AUTH_002_capabilities_honoured(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("seen"))
    client, init, sid = await started(server_env, workspace)
    assert init["agentCapabilities"]["promptCapabilities"]["embeddedContext"] is True
    answer = await client.call(
        "session/prompt",
        {
            "sessionId": sid,
            "prompt": [
                {"type": "text", "text": "look"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///x/buffer.py", "text": "print('unsaved')"},
                },
            ],
        },
    )
    assert answer["result"]["stopReason"] == "end_turn"
    assert "print('unsaved')" in json.dumps(scripted_llm.requests[-1].body)
    new = await client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    types = {o["type"] for o in new["result"]["configOptions"]}
    assert "boolean" not in types, "no boolean option for a client that did not ask for them"
    assert all(m.get("type") != "terminal" for m in init.get("authMethods", []))
    assert await client.close() == 0
