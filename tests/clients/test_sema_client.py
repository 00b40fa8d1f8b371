"""sema_client: the Python client library (issue 6).

The first tests drive a real `sema-rpc` subprocess against the scripted model server;
the rest feed a client hand-made bytes over an in-memory transport, to pin down framing,
routing and server→client requests without the cost of a process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sema_client import (
    DEFERRED,
    Notification,
    SemaClient,
    SemaConnectionError,
    SemaRpcError,
    image_block,
    permission_result,
)
from sema_client.framing import STREAM_LIMIT

from sema_rpc.protocol import (
    PermissionRequestParams,
    PermissionResult,
    SessionForkResult,
    SessionPromptResult,
    SessionReadyParams,
    SessionRewindResult,
    StateUpdateParams,
    TextChunkParams,
    ToolExecutionErrorParams,
)
from tests.support.scripted_llm import Reply, ScriptedLLM

MODEL = "anthropic/claude-test"


def tool_result_text(request_body: dict[str, Any]) -> str:
    blocks = [b for b in request_body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    out = []
    for block in blocks:
        content = block["content"]
        out.append(content if isinstance(content, str) else "".join(c["text"] for c in content))
    return "\n".join(out)


# --------------------------------------------------------------------------- real server


async def test_prompt_takes_content_blocks(server_env, scripted_llm: ScriptedLLM, workspace: Path):
    from tests.e2e.test_content_blocks import PNG, PNG_B64

    profile = {"provider": "anthropic", "modelName": "claude-test", "images": True}
    (Path(server_env["SEMA_ROOT"]) / "models.json").write_text(
        json.dumps({"profiles": {"vision": profile}})
    )
    (workspace / "shot.png").write_bytes(PNG)
    scripted_llm.script(Reply.text("Two grey pixels, twice."))
    async with await SemaClient.spawn(env=server_env) as client:
        await client.initialize()
        ready = await client.create_session(workspace, model="vision")
        result = await client.prompt(
            ready.session_id,
            [
                {"type": "text", "text": "Same picture?"},
                image_block(PNG, "image/png"),
                {"type": "image", "path": "shot.png"},
            ],
        )
    assert result.stop_reason == "end_turn"
    content = scripted_llm.requests[0].body["messages"][-1]["content"]
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
    }
    assert content[:3] == [{"type": "text", "text": "Same picture?"}, image, image]


async def test_spawn_initialize_create_and_prompt_with_a_permission_callback(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    asked: list[PermissionRequestParams] = []

    async def decide(request: PermissionRequestParams) -> str:
        asked.append(request)
        return "allow_once"

    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "hello\n"})]),
        Reply.text("Written."),
    )
    async with await SemaClient.spawn(env=server_env) as client:
        client.on_permission(decide)
        init = await client.initialize()  # capabilities derived: permissions=True
        assert init.server_info.name == "sema-rpc"
        assert "tool:permission:request" in init.capabilities.server_requests
        ready = await client.create_session(workspace, model=MODEL)
        assert isinstance(ready, SessionReadyParams) and ready.model == MODEL
        result = await client.prompt(ready.session_id, "write notes")
    assert client.returncode == 0

    assert isinstance(result, SessionPromptResult) and result.stop_reason == "end_turn"
    assert (workspace / "notes.txt").read_text() == "hello\n"
    [request] = asked
    assert isinstance(request, PermissionRequestParams)
    assert request.tool_name == "Write" and request.content_kind == "diff"
    assert request.session_id == ready.session_id and "+hello" in request.content


async def test_messages_and_fork_helpers(server_env, scripted_llm: ScriptedLLM, workspace: Path):
    scripted_llm.script(*(Reply.text(f"Answer {i}.") for i in range(3)))
    async with await SemaClient.spawn(env=server_env) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL)).session_id
        ids = [(await client.prompt(sid, f"Question {i}")).message_id for i in range(3)]
        first = await client.messages(sid, limit=4)
        listed = await client.all_messages(sid, page=2)
        fork = await client.fork(sid, ids[1])
        forked = await client.all_messages(fork.session_id)
    assert len(first.messages) == 4 and first.next_cursor == first.messages[-1].id
    assert listed[:4] == first.messages and len(listed) == 6
    assert [m.id for m in listed if m.role == "user"] == ids
    assert isinstance(fork, SessionForkResult) and fork.input == "Question 1"
    assert fork.session_id != sid and forked == listed[:2]


async def test_rewind_helper(server_env, scripted_llm: ScriptedLLM, workspace: Path):
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "hello\n"})]),
        Reply.text("Written."),
    )
    notes = workspace / "notes.txt"
    async with await SemaClient.spawn(env=server_env) as client:
        await client.initialize()
        ready = await client.create_session(workspace, model=MODEL, permission_mode="bypass")
        sid = ready.session_id
        prompt_id = (await client.prompt(sid, "write notes")).message_id
        assert prompt_id is not None and notes.exists()
        back = await client.rewind(sid, prompt_id, restore="code")
        gone = not notes.exists()
        again = await client.rewind(sid, redo=True)
    assert isinstance(back, SessionRewindResult) and back.rewound and gone
    assert back.restored_files == ["notes.txt"] and back.input == "write notes"
    assert again.rewound and notes.read_text() == "hello\n"


async def test_two_iterators_each_see_every_notification(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    answer = "line one\u2028line two\u2029para — ünï\n" + "x" * 5000
    scripted_llm.script(Reply.text(answer, chunks=12))
    async with await SemaClient.spawn(env=server_env) as client:
        await client.initialize()
        ready = await client.create_session(workspace, model=MODEL)
        sid = ready.session_id
        seen_by_callback: list[str] = []
        client.on_notification(lambda e: seen_by_callback.append(e.event))

        async def collect(stream: Any) -> list[Any]:
            events = []
            async for event in stream:
                events.append(event)
                if isinstance(event, StateUpdateParams) and event.state == "idle":
                    break
            return events

        everything = client.notifications()
        mine = client.notifications(session_id=sid)
        tasks = [asyncio.create_task(collect(everything)), asyncio.create_task(collect(mine))]
        result = await client.prompt(sid, "say it \u2028 back")
        a, b = await asyncio.wait_for(asyncio.gather(*tasks), 10)

    assert result.stop_reason == "end_turn"
    assert [e.seq for e in a] == [e.seq for e in b] and len(a) >= 12 + 3
    assert [e.event for e in a] == seen_by_callback
    for events in (a, b):
        chunks = [e.delta for e in events if isinstance(e, TextChunkParams)]
        assert len(chunks) == 12 and "".join(chunks) == answer
    sent = scripted_llm.requests[0].body["messages"][-1]["content"]
    assert "say it \u2028 back" in json.dumps(sent, ensure_ascii=False)


async def test_server_request_without_handler_is_refused_and_the_turn_ends(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "x.txt", "content": "x"})]),
        Reply.text("Could not write."),
    )
    requests: list[dict[str, Any]] = []
    async with await SemaClient.spawn(env=server_env) as client:
        # Declares the capability but registers no handler: answered with -32601.
        await client.initialize(capabilities={"permissions": True})
        client.on_message(lambda m, _raw: requests.append(m) if "id" in m and "method" in m else 0)
        ready = await client.create_session(workspace, model=MODEL)
        async with client.notifications(ready.session_id) as events:
            result = await asyncio.wait_for(client.prompt(ready.session_id, "write"), 20)
            errors = []
            while events.pending():
                event = await events.next(1)
                if isinstance(event, ToolExecutionErrorParams):
                    errors.append(event)

    assert result.stop_reason == "end_turn"
    assert [r["method"] for r in requests] == ["tool:permission:request"]
    assert not (workspace / "x.txt").exists()
    assert len(errors) == 1 and errors[0].tool_name == "Write"
    assert "not run" in tool_result_text(scripted_llm.requests[1].body)


async def test_content_length_framing_and_rpc_errors(server_env, workspace: Path):
    async with await SemaClient.spawn(env=server_env, jsonl=False) as client:
        await client.initialize()
        with pytest.raises(SemaRpcError) as err:
            await client.create_session(workspace / "missing", model=MODEL)
        assert err.value.code == -32602 and err.value.method == "session/create"
        with pytest.raises(SemaRpcError) as err:
            await client.interrupt("no-such-session")
        assert err.value.code == -32010 and err.value.data == {"sessionId": "no-such-session"}
        ready = await client.create_session(workspace, model=MODEL, mode="Plan")
        assert ready.mode == "Plan"
        assert await client.update_mode(ready.session_id, "Agent") == "Agent"
        models = await client.list_models(ready.session_id)
        assert models.current == MODEL  # no models.json: the session's own model
        assert [(m.name, m.provider, m.model) for m in models.models] == [
            ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),  # the key's default
            (MODEL, "anthropic", "claude-test"),
        ]
        switched = await client.set_model(ready.session_id, "openai/gpt-4.1", thinking=True)
        assert (switched.model, switched.thinking) == ("openai/gpt-4.1", True)
        with pytest.raises(SemaRpcError) as err:
            await client.set_model(ready.session_id, "no-such-model")
        assert err.value.code == -32602 and "no-such-model" in err.value.message
        assert await client.interrupt(ready.session_id) is False
        await client.shutdown()
    assert client.returncode == 0


async def test_a_dead_server_fails_pending_requests_with_its_stderr():
    # The server dies once the request is on its way (it reads the request's first line):
    # the request is pending then, whatever the speed of the interpreter's start.
    client = await SemaClient.spawn(
        [sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit('boom: no server')"]
    )
    with pytest.raises(SemaConnectionError) as err:
        await client.initialize()
    assert "boom: no server" in str(err.value) and err.value.returncode == 1
    assert await client.close() == 1


# --------------------------------------------------------------------------- in-memory transport


class FakeWriter:
    """The part of asyncio.StreamWriter the client uses; records what it writes."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False
        self.wrote = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.data += data
        self.wrote.set()

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in bytes(self.data).splitlines() if line.strip()]

    async def wait_messages(self, n: int) -> list[dict[str, Any]]:
        async with asyncio.timeout(5):
            while len(self.messages()) < n:
                self.wrote.clear()
                await self.wrote.wait()
        return self.messages()


def connect(*, jsonl: bool = True) -> tuple[SemaClient, asyncio.StreamReader, FakeWriter]:
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    writer = FakeWriter()
    client = SemaClient(reader, writer, jsonl=jsonl).start()  # type: ignore[arg-type]
    return client, reader, writer


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


async def test_raw_line_separators_large_lines_and_unknown_notifications():
    client, reader, _ = connect()
    stream = client.notifications()
    big = "y" * (3 << 20)  # far above StreamReader's default 64 KiB limit
    for delta in ("a\u2028b\u2029c", big):
        reader.feed_data(
            line(
                {
                    "jsonrpc": "2.0",
                    "method": "message:text:chunk",
                    "params": {"sessionId": "s", "seq": 1, "delta": delta},
                }
            )
        )
    reader.feed_data(line({"jsonrpc": "2.0", "method": "future:event", "params": {"x": [1]}}))
    reader.feed_data(line({"jsonrpc": "2.0", "method": "state:update", "params": {"state": 7}}))
    reader.feed_eof()
    events = [e async for e in stream]
    assert [type(e) for e in events] == [TextChunkParams, TextChunkParams] + [Notification] * 2
    assert events[0].delta == "a\u2028b\u2029c" and events[1].delta == big
    assert events[2].method == "future:event" and events[2].params == {"x": [1]}
    assert events[3].event == "state:update", "params that do not validate stay untyped"
    assert await client.close() is None


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: %d\r\nContent-Type: x\r\n\r\n",
        b"Content-Length: %d\r\n\r\n",  # as the server writes it
        b"content-length:%d\n\n",
    ],
)
async def test_content_length_frames_split_anywhere(header: bytes):
    client, reader, _ = connect(jsonl=False)
    stream = client.notifications()
    body = json.dumps(
        {"jsonrpc": "2.0", "method": "message:text:chunk", "params": {"delta": "é\u2028"}},
        ensure_ascii=False,
    ).encode()
    data = (header % len(body) + body) * 2
    for i in range(0, len(data), 7):
        reader.feed_data(data[i : i + 7])
    reader.feed_eof()
    events = [e async for e in stream]
    assert [e.delta for e in events] == ["é\u2028", "é\u2028"]


async def test_server_requests_answers_errors_and_cancellation():
    client, reader, writer = connect()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow(_params: Any) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    def broken(_params: Any) -> None:
        raise RuntimeError("kaput")

    client.on_request("slow:request", slow)
    client.on_request("broken:request", broken)
    client.on_permission(lambda req: {"decision": "reject", "feedback": f"not {req.title}"})
    permission = {
        "sessionId": "s",
        "toolCallId": "t1",
        "toolName": "Write",
        "title": "Write a.txt",
        "input": {},
        "content": "+x",
        "options": ["allow_once", "reject"],
    }
    reader.feed_data(line({"jsonrpc": "2.0", "id": "sema-1", "method": "nobody:handles"}))
    reader.feed_data(line({"jsonrpc": "2.0", "id": "sema-2", "method": "slow:request"}))
    reader.feed_data(line({"jsonrpc": "2.0", "id": 3, "method": "broken:request"}))
    reader.feed_data(
        line(
            {
                "jsonrpc": "2.0",
                "id": "sema-4",
                "method": "tool:permission:request",
                "params": permission,
            }
        )
    )
    await asyncio.wait_for(started.wait(), 5)
    reader.feed_data(
        line({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "sema-2"}})
    )
    await asyncio.wait_for(cancelled.wait(), 5)
    answers = {m["id"]: m for m in await writer.wait_messages(3)}
    await asyncio.sleep(0.05)

    assert answers["sema-1"]["error"]["code"] == -32601
    assert answers[3]["error"]["code"] == -32603 and "kaput" in answers[3]["error"]["message"]
    assert answers["sema-4"]["result"] == {"decision": "reject", "feedback": "not Write a.txt"}
    assert "sema-2" not in answers, "a withdrawn request gets no late answer"
    assert len(writer.messages()) == 3
    reader.feed_eof()
    await client.close()


async def test_responses_errors_cancellation_and_connection_loss():
    client, reader, writer = connect()
    ok = asyncio.create_task(client.request("mode/update", {"sessionId": "s", "mode": "Plan"}))
    bad = asyncio.create_task(client.interrupt("s"))
    sent = await writer.wait_messages(2)
    assert [m["id"] for m in sent] == [1, 2] and sent[1]["method"] == "session/interrupt"
    reader.feed_data(line({"jsonrpc": "2.0", "id": 2, "error": {"code": -32010, "message": "no"}}))
    reader.feed_data(line({"jsonrpc": "2.0", "id": 1, "result": {"mode": "Plan"}}))
    assert await ok == {"mode": "Plan"}
    with pytest.raises(SemaRpcError) as err:
        await bad
    assert err.value.code == -32010

    # A caller that gives up sends $/cancelRequest (for session/prompt: an interrupt).
    with pytest.raises(TimeoutError):
        await client.prompt("s", "hi", timeout=0.05)
    assert writer.messages()[-1] == {
        "jsonrpc": "2.0",
        "method": "$/cancelRequest",
        "params": {"id": 3},
    }

    pending = asyncio.create_task(client.request("shutdown"))
    stream = client.notifications()
    await writer.wait_messages(5)
    reader.feed_eof()
    with pytest.raises(SemaConnectionError):
        await pending
    assert [e async for e in stream] == []
    with pytest.raises(SemaConnectionError):
        await client.request("shutdown")
    await client.close()


def test_permission_results():
    assert permission_result("allow_always").decision == "allow_always"
    assert permission_result(True).decision == "allow_once"
    assert permission_result(None).decision == "reject"
    fb = permission_result(PermissionResult(decision="reject", feedback="no"))
    assert fb.wire() == {"decision": "reject", "feedback": "no"}
    with pytest.raises(ValueError):
        permission_result("maybe")


async def test_a_relative_working_dir_is_resolved_by_the_client(
    server_env, workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    """The library resolves a relative path against the caller's directory, as Python
    code expects. The server, started in `/`, rejects a relative workingDir (-32602), so
    the session exists only because the wire carried the absolute path."""
    monkeypatch.chdir(workspace.parent)
    async with await SemaClient.spawn(env=server_env, cwd="/") as client:
        ready = await client.create_session(workspace.name, model=MODEL)
        assert ready.working_dir == str(workspace.resolve())
        with pytest.raises(SemaRpcError) as err:
            await client.request("session/create", {"workingDir": workspace.name})
        assert err.value.code == -32602 and "absolute" in err.value.message


async def test_a_deferred_server_request_is_answered_by_the_caller_later():
    client, reader, writer = connect()
    seen: list[Any] = []

    def defer(params: Any) -> Any:
        seen.append(params)
        return DEFERRED

    client.on_request("plan:exit:request", defer)
    request = {"jsonrpc": "2.0", "id": "sema-7", "method": "plan:exit:request"}
    reader.feed_data(line({**request, "params": {"requestId": "sema-7"}}))
    async with asyncio.timeout(5):
        while not seen:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert writer.messages() == [], "a deferred request is not answered by the client"
    answer = {"jsonrpc": "2.0", "id": seen[0]["requestId"], "result": {"approved": True}}
    await client.send_message(answer)
    await client.send_body(b"not json")
    assert bytes(writer.data) == json.dumps(answer, separators=(",", ":")).encode() + (
        b"\nnot json\n"
    )
    reader.feed_eof()
    await client.close()


async def test_jsonl_lines_in_any_pieces_crlf_blank_lines_and_an_unterminated_last_line():
    client, reader, _ = connect()
    stream = client.notifications()

    def chunk(seq: int) -> bytes:
        params = {"seq": seq, "delta": f"d{seq}"}
        return json.dumps(
            {"jsonrpc": "2.0", "method": "message:text:chunk", "params": params}
        ).encode()

    data = b"".join(
        chunk(i) + (b"\r\n" if i % 3 == 0 else b"\n") + (b"  \n\n" if i % 5 == 0 else b"")
        for i in range(1, 200)
    )
    for i in range(0, len(data), 97):  # lines cut anywhere, many lines per piece
        reader.feed_data(data[i : i + 97])
    reader.feed_data(chunk(200))  # no newline before the end of the stream
    reader.feed_eof()
    events = [e async for e in stream]
    assert [e.delta for e in events] == [f"d{i}" for i in range(1, 201)]
    assert [e.seq for e in events] == list(range(1, 201))


async def test_a_negative_content_length_ends_the_connection_with_the_reason():
    client, reader, _ = connect(jsonl=False)
    reader.feed_data(b"Content-Length: -5\r\n\r\n{}")
    await asyncio.wait_for(client.wait_closed(), 5)
    with pytest.raises(SemaConnectionError, match="Content-Length"):
        await client.request("session/interrupt", {"sessionId": "s"})


async def test_a_notification_iterator_survives_timeouts_and_shares_items_between_readers():
    client, reader, _ = connect()
    stream = client.notifications()
    with pytest.raises(TimeoutError):
        await stream.next(timeout=0.05)

    def chunk(seq: int) -> bytes:
        return line(
            {
                "jsonrpc": "2.0",
                "method": "message:text:chunk",
                "params": {"seq": seq, "delta": str(seq)},
            }
        )

    # two readers wait on one iterator: each item goes to exactly one of them
    readers = [asyncio.ensure_future(stream.next(timeout=5)) for _ in range(2)]
    await asyncio.sleep(0)
    reader.feed_data(chunk(1) + chunk(2))
    got = sorted(e.seq for e in await asyncio.gather(*readers))
    assert got == [1, 2]
    reader.feed_data(chunk(3))
    assert (await stream.next(timeout=5)).seq == 3
    assert stream.pending() == 0
    reader.feed_data(chunk(4) + chunk(5))
    await asyncio.sleep(0.05)
    assert stream.pending() == 2
    reader.feed_eof()
    assert [e.seq async for e in stream] == [4, 5]
