"""Where client and server could disagree: a stop right behind its prompt, a close during
a turn, a request id the server could not echo, a capability the model does not have,
a completed message and a crash. Each over real pipes, byte by byte (tests/support/raw_peer.py),
in every dialect it applies to."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.raw_peer import RawPeer
from tests.support.scripted_llm import Reply, ScriptedLLM

MODEL = "anthropic/claude-test"
NATIVE = pytest.mark.parametrize("dialect", ["jsonl", "content-length"])
ALL = pytest.mark.parametrize("dialect", ["jsonl", "content-length", "acp"])


def request(msg_id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


async def open_session(peer: RawPeer, workspace: Path) -> str:
    """initialize + a new session, in the peer's dialect; the session id."""
    if peer.dialect == "acp":
        await peer.call("i", "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await peer.call("n", "session/new", {"cwd": str(workspace), "mcpServers": []})
        return new["sessionId"]
    await peer.call("i", "initialize", {"protocolVersion": 1, "capabilities": {}})
    ready = await peer.call("n", "session/create", {"workingDir": str(workspace), "model": MODEL})
    return ready["sessionId"]


def prompt_msg(peer: RawPeer, msg_id: Any, sid: str, text: str) -> dict[str, Any]:
    if peer.dialect == "acp":
        return request(msg_id, "session/prompt", {"sessionId": sid, "prompt": [_text(text)]})
    return request(msg_id, "session/prompt", {"sessionId": sid, "input": text})


def stop_msg(peer: RawPeer, sid: str) -> dict[str, Any]:
    if peer.dialect == "acp":
        return notification("session/cancel", {"sessionId": sid})
    return request("stop", "session/interrupt", {"sessionId": sid})


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def stop_reason(peer: RawPeer, answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return answer["result"]["stopReason"]


STOPPED = {"jsonl": "interrupted", "content-length": "interrupted", "acp": "cancelled"}


def session_traffic(peer: RawPeer, sid: str) -> list[dict[str, Any]]:
    """The notifications and server→client requests about `sid`, in order."""
    return [m.msg for m in peer.messages if "method" in m.msg and m.params.get("sessionId") == sid]


# ------------------------------------------------------------------ a stop right behind


@ALL
async def test_a_stop_written_right_behind_the_prompt_ends_that_turn(
    server_env, scripted_llm: ScriptedLLM, workspace, dialect: str
):
    """The stop is in the same write as the prompt: the prompt was read first, so the
    stop ends it before it starts: the model is never asked."""
    scripted_llm.script(Reply.text("Next."))
    peer = await RawPeer(server_env, dialect).start()
    try:
        sid = await open_session(peer, workspace)
        peer.send(prompt_msg(peer, "p1", sid, "a long answer"), stop_msg(peer, sid))
        answer = await peer.answer("p1", timeout=10)
        assert stop_reason(peer, answer) == STOPPED[dialect]
        if dialect != "acp":
            assert (await peer.answer("stop"))["result"] == {"interrupted": True}
        # The next prompt is not touched by that stop.
        peer.send(prompt_msg(peer, "p2", sid, "and now"))
        assert stop_reason(peer, await peer.answer("p2")) == "end_turn"
        assert len(scripted_llm.requests) == 1
        assert "a long answer" not in json.dumps(scripted_llm.requests[0].body)
    finally:
        await peer.close()


@NATIVE
async def test_a_stop_when_nothing_runs_does_not_touch_the_next_turn(
    server_env, scripted_llm: ScriptedLLM, workspace, dialect: str
):
    scripted_llm.script(Reply.text("Answered in full."))
    peer = await RawPeer(server_env, dialect).start()
    try:
        sid = await open_session(peer, workspace)
        peer.send(stop_msg(peer, sid), prompt_msg(peer, "p1", sid, "hello"))
        assert (await peer.answer("stop"))["result"] == {"interrupted": False}
        assert stop_reason(peer, await peer.answer("p1")) == "end_turn"
    finally:
        await peer.close()


async def test_acp_cancel_before_any_prompt_does_not_cancel_the_next(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("Answered in full."))
    peer = await RawPeer(server_env, "acp").start()
    try:
        sid = await open_session(peer, workspace)
        peer.send(stop_msg(peer, sid))
        peer.send(prompt_msg(peer, "p1", sid, "hello"))
        assert stop_reason(peer, await peer.answer("p1")) == "end_turn"
    finally:
        await peer.close()


# ------------------------------------------------------------------ close during a turn


@pytest.mark.parametrize("behind", [False, True], ids=["mid-stream", "right-behind"])
async def test_acp_close_during_a_turn_cancels_it_and_nothing_follows(
    server_env, scripted_llm: ScriptedLLM, workspace, behind: bool
):
    scripted_llm.script(Reply.text("word " * 600, deltas=600, delay_s=0.02))
    peer = await RawPeer(server_env, "acp").start()
    try:
        sid = await open_session(peer, workspace)
        close = request("c", "session/close", {"sessionId": sid})
        if behind:
            peer.send(prompt_msg(peer, "p1", sid, "a long answer"), close)
        else:
            peer.send(prompt_msg(peer, "p1", sid, "a long answer"))
            await peer.wait_for(lambda: len(session_traffic(peer, sid)) > 5)
            peer.send(close)
        assert (await peer.answer("c"))["result"] == {}
        answer = await peer.answer("p1")
        assert stop_reason(peer, answer) == "cancelled"
        closed_at = peer.messages.index(peer.answers("c")[0])
        # Let anything that would still come arrive, then look.
        await peer.call("l", "session/list", {})
        after = [
            m.msg
            for m in peer.messages[closed_at + 1 :]
            if "method" in m.msg and m.params.get("sessionId") == sid
        ]
        assert after == []
        # The session is gone for this connection.
        peer.send(prompt_msg(peer, "p2", sid, "still there?"))
        assert "error" in await peer.answer("p2")
    finally:
        await peer.close()


# ------------------------------------------------------------------ ids echoed as written

_ID_PIECES = ["a", "Z", "0", " ", "\\ud800", "\\udfff", "\\udbff", "\\ud83d\\ude00", "\\u00e9"]


def _raw_id(rng: random.Random) -> bytes:
    """A request id as a client writes it: an integer, or a string of ASCII pieces and
    escapes (lone surrogates among them), in the lowercase escape form."""
    if rng.random() < 0.2:
        return str(rng.randrange(-(10**12), 10**12)).encode()
    pieces = [rng.choice(_ID_PIECES) for _ in range(rng.randrange(1, 6))]
    return b'"' + "".join(pieces).encode() + b'"'


def _fuzz_messages(rng: random.Random, dialect: str, sid: str) -> list[tuple[bytes | None, bytes]]:
    """(raw id or None for a notification, body) × 2,000: unknown methods, invalid params,
    harmless real methods, notifications, duplicates of nothing."""
    acp = dialect == "acp"
    methods = (
        [
            ("session/list", {}),
            ("session/set_mode", {"sessionId": sid, "modeId": "nope"}),
            ("session/prompt", {"sessionId": "no-such-session", "prompt": []}),
            ("x/unknown", {}),
        ]
        if acp
        else [
            ("tool/list", {"sessionId": sid}),
            ("session/interrupt", {"sessionId": sid}),
            ("mode/update", {"sessionId": sid, "mode": "nope"}),
            ("x/unknown", {}),
        ]
    )
    out: list[tuple[bytes | None, bytes]] = []
    seen: set[bytes] = set()
    while len(out) < 2000:
        method, params = rng.choice(methods)
        if rng.random() < 0.1:
            body = json.dumps(notification(method, params)).encode()
            out.append((None, body))
            continue
        raw = _raw_id(rng)
        if raw in seen:
            continue
        seen.add(raw)
        body = b'{"jsonrpc":"2.0","id":%s,"method":%s,"params":%s}' % (
            raw,
            json.dumps(method).encode(),
            json.dumps(params).encode(),
        )
        out.append((raw, body))
    return out


@ALL
async def test_request_ids_come_back_byte_for_byte_seeded_fuzz(server_env, workspace, dialect: str):
    """2,000 seeded messages; every request is answered once, its id exactly as written
    (a lone surrogate escape such as `"a\\ud800"` included)."""
    rng = random.Random(26)
    peer = await RawPeer(server_env, dialect).start()
    try:
        sid = await open_session(peer, workspace)
        start = len(peer.messages)
        messages = _fuzz_messages(rng, dialect, sid)
        for i in range(0, len(messages), 50):
            peer.send_raw(b"".join(peer.frame(body) for _raw, body in messages[i : i + 50]))
        wanted = [raw for raw, _body in messages if raw is not None]
        assert any(b"\\ud800" in raw for raw in wanted)

        def answered() -> dict[bytes, int]:
            counts: dict[bytes, int] = {}
            for m in peer.messages[start:]:
                if "method" in m.msg:
                    continue
                found = re.search(rb'"id":("(?:[^"\\]|\\.)*"|-?[0-9]+)', m.raw)
                if found is not None:
                    counts[found.group(1)] = counts.get(found.group(1), 0) + 1
            return counts

        await peer.wait_for(lambda: len(answered()) >= len(wanted), timeout=60)
        counts = answered()
        missing = [raw for raw in wanted if raw not in counts]
        assert missing == [], f"{len(missing)} requests unanswered, e.g. {missing[:3]}"
        assert all(counts[raw] == 1 for raw in wanted)
    finally:
        await peer.close()


@ALL
async def test_an_id_with_a_lone_surrogate_matches_when_written_in_upper_case(
    server_env, workspace, dialect: str
):
    """Written `\\uD800`: the answer's id is the same JSON string (the server writes its
    escapes in lower case), so a client's decoded id matches."""
    peer = await RawPeer(server_env, dialect).start()
    try:
        await open_session(peer, workspace)
        peer.send_raw(peer.frame(b'{"jsonrpc":"2.0","id":"q\\uD800","method":"x/unknown"}'))
        answer = await peer.answer("q\ud800")
        assert answer["error"]["code"] == -32601
    finally:
        await peer.close()


@NATIVE
async def test_a_stop_right_behind_a_running_prompt_interrupts_it(
    server_env, scripted_llm: ScriptedLLM, workspace, dialect: str
):
    """The stop comes once the turn streams: it ends that turn, long before its 600 deltas."""
    scripted_llm.script(Reply.text("word " * 600, deltas=600, delay_s=0.02), Reply.text("Next."))
    peer = await RawPeer(server_env, dialect).start()
    try:
        sid = await open_session(peer, workspace)
        peer.send(prompt_msg(peer, "p1", sid, "a long answer"))
        await peer.wait_for(lambda: peer.notifications("message:text:chunk"))
        peer.send(stop_msg(peer, sid))
        assert stop_reason(peer, await peer.answer("p1")) == "interrupted"
        assert len(peer.notifications("message:text:chunk")) < 600
    finally:
        await peer.close()


# ------------------------------------------------------------------ image capability


@pytest.mark.parametrize("images", [False, True])
async def test_acp_advertises_images_only_when_the_default_model_takes_them(
    server_env, scripted_llm: ScriptedLLM, workspace, images: bool
):
    """`promptCapabilities.image` is what the model a new session starts with can take;
    an image sent anyway to a model without images is refused, -32602, nothing kept."""
    profile: dict[str, Any] = {"provider": "anthropic", "model": "house-model-1"}
    if images:
        profile["images"] = True
    (Path(server_env["SEMA_ROOT"]) / "models.json").write_text(
        json.dumps({"profiles": {"house": profile}, "pointers": {"main": "house"}})
    )
    scripted_llm.script(Reply.text("Seen."))
    peer = await RawPeer(server_env, "acp").start()
    try:
        init = await peer.call("i", "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["agentCapabilities"]["promptCapabilities"]["image"] is images
        new = await peer.call("n", "session/new", {"cwd": str(workspace), "mcpServers": []})
        png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
        peer.send(
            request(
                "p",
                "session/prompt",
                {
                    "sessionId": new["sessionId"],
                    "prompt": [
                        _text("what is this?"),
                        {"type": "image", "mimeType": "image/png", "data": png},
                    ],
                },
            )
        )
        answer = await peer.answer("p")
        if images:
            assert answer["result"]["stopReason"] == "end_turn"
        else:
            assert answer["error"]["code"] == -32602
            assert scripted_llm.requests == []
    finally:
        await peer.close()


# ------------------------------------------------------------------ complete means kept


@pytest.mark.parametrize("attempt", range(2))
async def test_a_message_the_client_saw_complete_survives_kill_9(
    server_env, scripted_llm: ScriptedLLM, workspace, attempt: int
):
    """The client kills the server the moment `message:complete` arrives; resumed, the
    next model request has that message, its tool call and exactly one result for it."""
    scripted_llm.script(
        Reply.tools([("Glob", {"pattern": "src/*.py"}, f"call_keep{attempt}")], text="Looking."),
        Reply.text("never reached", delay_s=0.5),
        Reply.text("Resumed."),
    )
    peer = await RawPeer(server_env, "jsonl").start()
    sid = await open_session(peer, workspace)
    peer.send(prompt_msg(peer, "p1", sid, f"remember {attempt}"))
    await peer.wait_for(lambda: peer.notifications("message:complete"), timeout=30)
    await peer.kill9()
    scripted_llm.wait_for_requests(1)

    again = await RawPeer(server_env, "jsonl").start()
    try:
        await again.call("i", "initialize", {"protocolVersion": 1, "capabilities": {}})
        await again.call(
            "n",
            "session/create",
            {"workingDir": str(workspace), "model": MODEL, "sessionId": sid},
        )
        await again.call("p2", "session/prompt", {"sessionId": sid, "input": "go on"})
        body = scripted_llm.requests[-1].body
        uses = [
            b["id"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        ]
        results = [
            b["tool_use_id"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        assert f"call_keep{attempt}" in uses, json.dumps(body)[:2000]
        assert f"remember {attempt}" in json.dumps(body)
        assert sorted(results) == sorted(uses)
    finally:
        await again.close()
