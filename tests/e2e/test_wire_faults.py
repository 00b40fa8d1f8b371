"""Faults in the reader and dispatch, over both framings: a bad message costs at most
itself, a notification is never answered, and text with lone surrogates never gets past
the reader."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.e2e.conftest import SharedServer
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient

MODEL = "anthropic/claude-test"
FRAMINGS = pytest.mark.parametrize("jsonl", [True, False], ids=["jsonl", "content-length"])


async def still_serving(client: WireClient) -> None:
    result = await client.call("initialize", {"protocolVersion": 1})
    assert result["serverInfo"]["name"] == "sema-rpc"


def prompt_bytes(msg_id: str, session_id: str, escaped_input: str) -> bytes:
    """A prompt whose input is given as raw JSON string text (escapes kept as typed)."""
    head = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "session/prompt"})[:-1]
    params = json.dumps({"sessionId": session_id})[:-1]
    return f'{head}, "params": {params}, "input": "{escaped_input}"}}}}'.encode()


@FRAMINGS
async def test_an_escaped_lone_surrogate_becomes_a_replacement_character(
    server_env, scripted_llm: ScriptedLLM, workspace, jsonl: bool
):
    """`JSON.stringify` of a string cut inside an emoji: the text arrives with U+FFFD in
    place of the half character, and the session is not poisoned (also after a restart)."""
    async with WireClient(env=server_env, jsonl=jsonl) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        scripted_llm.script(Reply.text("one"), Reply.text("two"))
        answer = client.expect_response("cut")
        client.send_bytes(client.frame(prompt_bytes("cut", sid, r"a \ud800 b \ud83d\ude00")))
        result = (await asyncio.wait_for(answer, 10))["result"]
        assert result["stopReason"] == "end_turn", result
        sent = json.dumps(scripted_llm.requests[0].body, ensure_ascii=False)
        assert "a \ufffd b \U0001f600" in sent  # a whole pair stays the emoji it encodes
        assert (await client.call("session/prompt", {"sessionId": sid, "input": "next"}))[
            "stopReason"
        ] == "end_turn"
        # The same character in a path parameter is just an unknown path.
        answer = client.expect_response("list")
        client.send_bytes(
            client.frame(
                b'{"jsonrpc":"2.0","id":"list","method":"session/list",'
                b'"params":{"workingDir":"/tmp/\\udc80x"}}'
            )
        )
        assert (await asyncio.wait_for(answer, 10))["result"] == {"sessions": []}
    async with WireClient(env=server_env, jsonl=jsonl) as client:  # a restart resumes it
        await client.initialize()
        ready = await client.create_session(workspace, model=MODEL, sessionId=sid)
        assert ready["historyLoaded"] is True
        scripted_llm.script(Reply.text("three"))
        result = await client.call("session/prompt", {"sessionId": sid, "input": "after restart"})
        assert result["stopReason"] == "end_turn"
        assert "a \ufffd b" in json.dumps(scripted_llm.requests[-1].body, ensure_ascii=False)
        assert client.unsolicited == []


@FRAMINGS
@pytest.mark.asyncio(loop_scope="module")
async def test_encoded_surrogate_bytes_are_not_utf8_and_a_parse_error(
    shared_server: SharedServer, jsonl: bool
):
    client = await shared_server(jsonl=jsonl)
    client.send_bytes(
        client.frame(
            b'{"jsonrpc":"2.0","id":9,"method":"session/list",'
            b'"params":{"workingDir":"/tmp/\xed\xa0\x80"}}'
        )
    )
    [answer] = await client.wait_unsolicited(1)
    assert answer["id"] is None and answer["error"]["code"] == -32700
    assert "UTF-8" in answer["error"]["message"]
    await still_serving(client)


@FRAMINGS
async def test_a_cancel_notification_with_any_id_is_never_answered(server_env, jsonl: bool):
    async with WireClient(env=server_env, jsonl=jsonl) as client:
        for params in ({"id": []}, {"id": {}}, {"id": True}, {"id": None}, {}, [], "x", None):
            client.notify("$/cancelRequest", params)
        # Other notifications with broken params are not answered either.
        client.notify("exit", {"unknown": []})
        client.notify("$/setTrace", [1, 2])
        await still_serving(client)
        await asyncio.sleep(0.3)  # watching for an answer that must not come
        assert client.unsolicited == []
        assert b"Traceback" not in client.stderr


@pytest.mark.parametrize("value", [b"5.0", b"1_0", b"5abc", b"-5", b"12 34"])
@pytest.mark.asyncio(loop_scope="module")
async def test_a_content_length_with_trailing_garbage_costs_only_its_message(
    shared_server: SharedServer, value: bytes
):
    client = await shared_server(jsonl=False)
    bad = b'{"jsonrpc":"2.0","id":"bad","method":"initialize"}'
    good = b'{"jsonrpc":"2.0","id":"good","method":"initialize"}'
    answer = client.expect_response("good")
    client.send_bytes(b"Content-Length: " + value + b"\r\n\r\n" + bad + client.frame(good))
    response = await asyncio.wait_for(answer, 10)
    assert response["result"]["serverInfo"]["name"] == "sema-rpc"
    [error] = await client.wait_unsolicited(1)
    assert error["error"]["code"] == -32600
    assert "Content-Length" in error["error"]["message"]
    await still_serving(client)
    assert len(client.unsolicited) == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_a_header_block_ending_in_bare_newlines_is_read_with_the_next_frame(
    shared_server: SharedServer,
):
    client = await shared_server(jsonl=False)
    first = b'{"jsonrpc":"2.0","id":"lf","method":"initialize"}'
    second = b'{"jsonrpc":"2.0","id":"crlf","method":"initialize"}'
    answers = [client.expect_response("lf"), client.expect_response("crlf")]
    client.send_bytes(b"Content-Length: %d\n\n" % len(first) + first + client.frame(second))
    for response in await asyncio.wait_for(asyncio.gather(*answers), 10):
        assert response["result"]["serverInfo"]["name"] == "sema-rpc"
    assert client.unsolicited == []


@pytest.mark.asyncio(loop_scope="module")
async def test_a_frame_without_content_length_costs_only_itself(shared_server: SharedServer):
    client = await shared_server(jsonl=False)
    bad = b'{"jsonrpc":"2.0","id":"bad","method":"initialize"}'
    good = b'{"jsonrpc":"2.0","id":"good","method":"initialize"}'
    answer = client.expect_response("good")
    client.send_bytes(b"Content-Type: x\r\n\r\n" + bad + client.frame(good))
    assert (await asyncio.wait_for(answer, 10))["result"]["protocolVersion"] == 1
    [error] = await client.wait_unsolicited(1)
    assert error["error"]["code"] == -32600


async def test_an_undecodable_file_name_in_tool_output_does_not_poison_the_session(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """A workspace file whose name is not UTF-8 reaches the model through Glob, Grep or Bash
    as text with U+FFFD in place of the bad bytes; the session keeps working, also after a
    restart (the history holds the same text)."""
    (workspace / "src").joinpath(b"bad\xff\xfe.py".decode("utf-8", "surrogateescape")).write_text(
        "x = 1\n"
    )
    async with WireClient(env=server_env) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
        scripted_llm.script(
            Reply.tools([("Glob", {"pattern": "src/bad*"}), ("Grep", {"pattern": "x = 1"})]),
            Reply.text("found it"),
            Reply.text("still fine"),
        )
        first = await client.call("session/prompt", {"sessionId": sid, "input": "find it"})
        assert first["stopReason"] == "end_turn", first
        results = json.dumps(scripted_llm.requests[1].body, ensure_ascii=False)
        assert "bad\ufffd\ufffd.py" in results
        second = await client.call("session/prompt", {"sessionId": sid, "input": "and now?"})
        assert second["stopReason"] == "end_turn", second
    async with WireClient(env=server_env) as client:
        await client.initialize()
        await client.create_session(workspace, model=MODEL, sessionId=sid)
        scripted_llm.script(Reply.text("after restart"))
        third = await client.call("session/prompt", {"sessionId": sid, "input": "again"})
        assert third["stopReason"] == "end_turn", third
