"""Bad input gets the right JSON-RPC error and the process keeps serving."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.e2e.conftest import SharedServer
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient


async def still_serving(client: WireClient) -> None:
    result = await client.call("initialize", {"protocolVersion": 1})
    assert result["serverInfo"]["name"] == "sema-rpc"


@pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "content-length"])
@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"this is not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
        (b"[1, 2, 3]", -32600),
        (b"42", -32600),
        (b'"a string"', -32600),
        (b'{"jsonrpc": "2.0", "id": 9}', -32600),
        (b'{"jsonrpc": "2.0", "id": {"nested": 1}, "method": "initialize"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 9, "method": 12}', -32600),
        (
            b'{"jsonrpc": "2.0", "id": 9, "method": "session/create", "params": {"workingDir": "/tmp"\xff\xfe}}',
            -32700,
        ),
    ],
    ids=[
        "not-json",
        "truncated",
        "array",
        "number",
        "string",
        "no-method",
        "bad-id",
        "method-not-string",
        "invalid-utf8",
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_malformed_messages_get_an_error_without_id(
    shared_server: SharedServer, raw: bytes, code: int, jsonl: bool
):
    client = await shared_server(jsonl=jsonl)
    client.send_bytes(client.frame(raw))
    [answer] = await client.wait_unsolicited(1)
    assert answer["error"]["code"] == code
    assert answer["id"] in (None, 9)
    await still_serving(client)


@pytest.mark.asyncio(loop_scope="module")
async def test_missing_jsonrpc_version_is_answered_with_its_id(shared_server: SharedServer):
    client = await shared_server()
    client.send({"id": 7, "method": "initialize", "params": {}})
    [answer] = await client.wait_unsolicited(1)
    assert answer == {"jsonrpc": "2.0", "id": 7, "error": answer["error"]}
    assert answer["error"]["code"] == -32600
    await still_serving(client)


@pytest.mark.asyncio(loop_scope="module")
async def test_unknown_method(shared_server: SharedServer):
    client = await shared_server()
    response = await client.request("session/teleport", {})
    assert response["error"]["code"] == -32601
    # An unknown notification is ignored silently (no id, nothing to answer).
    client.notify("$/somethingElse", {})
    await still_serving(client)


@pytest.mark.asyncio(loop_scope="module")
async def test_wrong_param_types_carry_pydantic_details(shared_server: SharedServer):
    client = await shared_server()
    response = await client.request("session/create", {"workingDir": 17, "useTools": "Read"})
    error = response["error"]
    assert error["code"] == -32602
    locations = {tuple(d["loc"]) for d in error["data"]}
    assert ("workingDir",) in locations and ("useTools",) in locations
    assert all("msg" in d for d in error["data"])
    # Params that are not an object at all.
    response = await client.request("session/prompt", ["positional", "params"])
    assert response["error"]["code"] == -32602
    await still_serving(client)


async def test_unknown_fields_are_ignored(client: WireClient, workspace):
    ready = await client.call(
        "session/create",
        {"workingDir": str(workspace), "futureOption": {"x": 1}, "model": "anthropic/m"},
    )
    assert ready["workingDir"] == str(workspace.resolve())


@pytest.mark.asyncio(loop_scope="module")
async def test_unknown_session_and_bad_working_dir(shared_server: SharedServer, tmp_path):
    client = await shared_server()
    for method, params in [
        ("session/prompt", {"sessionId": "nope", "input": "hi"}),
        ("session/interrupt", {"sessionId": "nope"}),
        ("mode/update", {"sessionId": "nope", "mode": "Plan"}),
    ]:
        response = await client.request(method, params)
        assert response["error"]["code"] == -32010, (method, response)
        assert response["error"]["data"] == {"sessionId": "nope"}
    response = await client.request("session/create", {"workingDir": str(tmp_path / "missing")})
    assert response["error"]["code"] == -32602
    response = await client.request("session/create", {"workingDir": "relative/path"})
    assert response["error"]["code"] == -32602
    await still_serving(client)


@pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "content-length"])
async def test_huge_messages(server_env, workspace, scripted_llm: ScriptedLLM, jsonl: bool):
    async with WireClient(env=server_env, jsonl=jsonl) as client:
        # A 6 MB junk line is a parse error, and the stream resynchronises after it.
        client.send_bytes(client.frame(b"x" * 6_000_000))
        [answer] = await client.wait_unsolicited(1, timeout=20)
        assert answer["error"]["code"] == -32700
        # A 3 MB valid prompt goes through whole.
        ready = await client.create_session(workspace, model="anthropic/m")
        scripted_llm.script(Reply.text("big"))
        big = "y" * 3_000_000
        result = await client.call(
            "session/prompt", {"sessionId": ready["sessionId"], "input": big}, timeout=30
        )
        assert result["stopReason"] == "end_turn"
        sent = scripted_llm.requests[0].body["messages"][0]["content"]
        assert big in json.dumps(sent)


async def test_line_separators_inside_strings(
    client: WireClient, scripted_llm: ScriptedLLM, workspace
):
    """U+2028/U+2029 are legal inside JSON strings: JSONL must split on LF only."""
    await client.initialize()
    ready = await client.create_session(workspace, model="anthropic/m")
    scripted_llm.script(Reply.text("back\u2028at\u2029you", chunks=1))
    raw = '{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"%s","input":"one\u2028two\u2029three"}}'
    client.send_bytes((raw % ready["sessionId"]).encode() + b"\n")
    [answer] = await client.wait_unsolicited(1)
    assert answer["id"] == "p1" and answer["result"]["stopReason"] == "end_turn"
    request = scripted_llm.requests[0].body
    assert "one\u2028two\u2029three" in json.dumps(
        request["messages"][0]["content"], ensure_ascii=False
    )
    complete = client.events("message:complete")[0]
    assert complete.params["content"] == "back\u2028at\u2029you"
    # On the wire they are escaped, so a reader splitting on any line break is safe too.
    assert "\u2028".encode() not in client.stdout and b"\\u2028" in client.stdout
    assert "\u2029".encode() not in client.stdout and b"\\u2029" in client.stdout


async def test_eof_in_the_middle_of_a_message_exits_cleanly(server_env):
    async with WireClient(env=server_env, jsonl=False) as client:
        await still_serving(client)
        client.send_bytes(b'Content-Length: 500\r\n\r\n{"jsonrpc": "2.0", "id": 1, ')
        assert await client.close() == 0
        assert b"Traceback" not in client.stderr


@pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "content-length"])
@pytest.mark.asyncio(loop_scope="module")
async def test_absurdly_nested_json_is_a_parse_error_and_loses_nothing(
    shared_server: SharedServer, jsonl: bool
):
    nested = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ' + b"[" * 5000
    nested += b"]" * 5000 + b"}"
    client = await shared_server(jsonl=jsonl)
    # The nested message and two good ones in one write: all three are answered.
    good = [
        json.dumps({"jsonrpc": "2.0", "id": f"alive{i}", "method": "initialize"}).encode()
        for i in (1, 2)
    ]
    replies = [client.expect_response(f"alive{i}") for i in (1, 2)]
    client.send_bytes(b"".join(client.frame(m) for m in [nested, *good]))
    [answer] = await client.wait_unsolicited(1)
    assert answer["error"]["code"] == -32700
    for reply in await asyncio.wait_for(asyncio.gather(*replies), 10):
        assert reply["result"]["serverInfo"]["name"] == "sema-rpc"
    assert b"Traceback" not in client.stderr


async def test_eof_in_the_middle_of_a_jsonl_line_exits_cleanly(server_env):
    async with WireClient(env=server_env, jsonl=True) as client:
        await still_serving(client)
        client.send_bytes(b'{"jsonrpc": "2.0", "id": 1, ')
        assert await client.close() == 0
        [answer] = client.unsolicited
        assert answer["error"]["code"] == -32700
        assert b"Traceback" not in client.stderr


@pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "content-length"])
async def test_shutdown_and_exit_in_one_write_exit_0(server_env, jsonl: bool):
    client = await WireClient(env=server_env, jsonl=jsonl).start()
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    client.send_bytes(b"".join(client.frame(json.dumps(m).encode()) for m in messages))
    assert client.proc is not None
    assert await client.proc.wait() == 0
    await client.close()


async def test_requests_after_shutdown_are_refused_and_exit_ends_the_process(client: WireClient):
    await client.initialize()
    assert await client.call("shutdown") == {}
    response = await client.request("initialize", {})
    assert response["error"]["code"] == -32600
    client.notify("exit")
    assert client.proc is not None
    assert await client.proc.wait() == 0
