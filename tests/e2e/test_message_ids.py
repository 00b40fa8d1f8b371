"""Message ids over real pipes: the ids streamed with chunks, message:complete and tool
events are the ids session/messages lists and session/prompt answers; session/messages
pages, reads a session on disk without resuming it, and gives old history files (written
before ids) the same ids at every load; session/fork copies the conversation before a
prompt into a new session that then goes its own way; bad params are refused clearly."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

pytestmark = pytest.mark.asyncio

MODEL = "anthropic/claude-test"


LONG = " It goes on." * 400


def history_file(env: dict[str, str], session_id: str) -> Path:
    return Path(env["SEMA_ROOT"]) / "history" / f"{session_id}.jsonl"


async def start(env: dict[str, str]) -> WireClient:
    client = await WireClient(env=env).start()
    await client.initialize()
    return client


async def create(client: WireClient, workspace: Path, **params: Any) -> str:
    ready = await client.create_session(workspace, model=MODEL, **params)
    return ready["sessionId"]


async def prompt(client: WireClient, sid: str, text: str) -> dict[str, Any]:
    return await client.call("session/prompt", {"sessionId": sid, "input": text})


async def messages(client: WireClient, sid: str, **params: Any) -> list[dict[str, Any]]:
    """Every page of session/messages, concatenated."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = await client.call(
            "session/messages",
            {"sessionId": sid, **params, **({"cursor": cursor} if cursor else {})},
        )
        out += page["messages"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return out


def user_texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content if b["type"] == "text"]


def text_of(entry: dict[str, Any]) -> str:
    return "".join(c["text"] for c in entry["content"])


async def error_of(client: WireClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(RpcFailure) as failure:
        await client.call(method, params)
    return failure.value.error


async def test_streamed_ids_are_the_ids_session_messages_lists(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(
        Reply.turn(
            thinking="The README will say.",
            text="Reading.",
            tools=[("Read", {"file_path": "README.md"})],
        ),
        Reply.text("It is a tiny demo project."),
    )
    client = await start(server_env)
    try:
        sid = await create(client, workspace, permissionMode="bypass")
        result = await prompt(client, sid, "What is this project?")
        assert result["stopReason"] == "end_turn"
        listed = await messages(client, sid)
    finally:
        await client.close()

    assert [(m["role"], m.get("kind")) for m in listed] == [
        ("user", "prompt"),
        ("assistant", None),
        ("assistant", None),
    ], "the tool results are folded into the call, not listed"
    question, reading, answer = listed
    assert question["id"] == result["messageId"]
    assert text_of(question) == "What is this project?", "no system reminders"
    assert reading["thinking"] == "The README will say."
    assert text_of(reading) == "Reading."
    [call] = reading["toolCalls"]
    assert call["name"] == "Read" and call["title"] == "Read README.md"
    assert call["input"] == {"file_path": "README.md"}
    assert call["status"] == "completed" and "A tiny project." in call["result"]
    assert text_of(answer) == "It is a tiny demo project."
    assert len({m["id"] for m in listed}) == 3

    def ids(method: str) -> list[str]:
        return [e.params.get("messageId") for e in client.events(method, sid)]

    thinking, text = ids("message:thinking:chunk"), ids("message:text:chunk")
    assert thinking and set(thinking) == {reading["id"]}
    assert text and set(text) == {reading["id"], answer["id"]}
    assert text.index(answer["id"]) > text.index(reading["id"])
    assert ids("message:complete") == [reading["id"], answer["id"]]
    tool_events = [e for e in client.received if e.method.startswith("tool:execution:")]
    assert [e.method for e in tool_events] == ["tool:execution:start", "tool:execution:complete"]
    assert {e.params["messageId"] for e in tool_events} == {reading["id"]}
    assert tool_events[0].params["toolCallId"] == call["id"]


async def test_pages_and_a_restart_give_the_same_messages(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(*(Reply.text(f"Answer {i}.") for i in range(4)))
    client = await start(server_env)
    sid = await create(client, workspace)
    prompt_ids = [(await prompt(client, sid, f"Question {i}"))["messageId"] for i in range(4)]
    whole = await client.call("session/messages", {"sessionId": sid})
    assert "nextCursor" not in whole
    listed = whole["messages"]
    assert [text_of(m) for m in listed] == [
        text for i in range(4) for text in (f"Question {i}", f"Answer {i}.")
    ]
    assert [m["id"] for m in listed[::2]] == prompt_ids
    first = await client.call("session/messages", {"sessionId": sid, "limit": 3})
    assert [m["id"] for m in first["messages"]] == [m["id"] for m in listed[:3]]
    assert first["nextCursor"]
    assert await messages(client, sid, limit=3) == listed
    assert await messages(client, sid, limit=1) == listed
    await client.close()

    # A new process: the session is on disk only. session/messages reads it without
    # resuming it (a prompt to it is still refused), and the ids are the same.
    client = await start(server_env)
    try:
        assert await messages(client, sid, limit=5) == listed
        fork = await client.call("session/fork", {"sessionId": sid, "messageId": prompt_ids[2]})
        assert fork["input"] == "Question 2" and fork["workingDir"] == str(workspace.resolve())
        assert await messages(client, fork["sessionId"]) == listed[:4]
        err = await error_of(client, "session/prompt", {"sessionId": sid, "input": "hi"})
        assert err["code"] == -32010, "reading it (and forking it) did not resume it"
        ready = await client.create_session(workspace, sessionId=sid, model=MODEL)
        assert ready["historyLoaded"] is True
        assert await messages(client, sid) == listed
    finally:
        await client.close()


async def test_an_old_history_without_ids_gets_the_same_ids_at_every_load(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    sid = "written-before-ids"
    lines: list[dict[str, Any]] = [
        {"t": "meta", "v": 1, "n": 0, "at": 1.0, "sessionId": sid, "workingDir": str(workspace)},
        {"t": "message", "n": 1, "at": 1.0, "role": "user",
         "content": [{"type": "text", "text": "List the files"}]},
        {"t": "message", "n": 2, "at": 1.0, "role": "assistant",
         "content": [{"type": "tool_use", "id": "toolu_old", "name": "Glob",
                      "input": {"pattern": "*.md"}}]},
        {"t": "message", "n": 3, "at": 1.0, "role": "user",
         "content": [{"type": "tool_result", "tool_use_id": "toolu_old",
                      "content": "README.md"}]},
        {"t": "message", "n": 4, "at": 1.0, "role": "assistant",
         "content": [{"type": "text", "text": "Only README.md."}]},
        {"t": "message", "n": 5, "at": 1.0, "role": "user",
         "content": [{"type": "text", "text": "Thanks"}]},
        {"t": "message", "n": 6, "at": 1.0, "role": "assistant",
         "content": [{"type": "text", "text": "You are welcome."}]},
    ]  # fmt: skip
    path = history_file(server_env, sid)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    original = path.read_bytes()

    client = await start(server_env)
    try:
        first = await messages(client, sid)
        assert [text_of(m) for m in first] == ["List the files", "", "Only README.md.", "Thanks",
                                               "You are welcome."]  # fmt: skip
        assert first[1]["toolCalls"][0]["status"] == "completed"
        assert all(m["id"].startswith("m_") for m in first)
        assert len({m["id"] for m in first}) == 5
        assert await messages(client, sid) == first
    finally:
        await client.close()
    client = await start(server_env)
    try:
        assert await messages(client, sid) == first, "a new process derives the same ids"
        await client.create_session(workspace, sessionId=sid, model=MODEL)
        assert await messages(client, sid) == first, "resumed: the same ids"
        fork = await client.call("session/fork", {"sessionId": sid, "messageId": first[3]["id"]})
        assert fork["input"] == "Thanks"
        assert await messages(client, fork["sessionId"]) == first[:3]
    finally:
        await client.close()
    assert path.read_bytes() == original, "loading never rewrites an old file"


async def test_a_fork_goes_its_own_way_and_the_original_is_untouched(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("First answer."), Reply.text("Second answer."))
    client = await start(server_env)
    try:
        sid = await create(client, workspace, mode="Plan")
        first = await prompt(client, sid, "First question")
        second = await prompt(client, sid, "Second question")
        before = await messages(client, sid)
        on_disk = history_file(server_env, sid).read_bytes()

        fork = await client.call(
            "session/fork", {"sessionId": sid, "messageId": second["messageId"]}
        )
        fid = fork["sessionId"]
        assert fid != sid and fork["historyLoaded"] is True
        assert fork["input"] == "Second question"
        assert fork["workingDir"] == str(workspace.resolve())
        assert fork["mode"] == "Plan" and fork["model"] == "anthropic/claude-test"
        ready = client.events("session:ready", fid)
        assert len(ready) == 1
        assert await messages(client, fid) == before[:2], "the messages before it, same ids"
        assert await messages(client, sid) == before
        assert history_file(server_env, sid).read_bytes() == on_disk

        # Both go on independently.
        scripted_llm.script(Reply.text("Fork answer."), Reply.text("Original answer."))
        fork_turn = await prompt(client, fid, "A different question")
        assert fork_turn["stopReason"] == "end_turn"
        sent_for_fork = scripted_llm.requests[-1].body["messages"]
        assert [user_texts(m)[0] for m in sent_for_fork if m["role"] == "user"] == [
            "First question",
            "A different question",
        ]
        assert await prompt(client, sid, "Third question")
        sent_for_original = scripted_llm.requests[-1].body["messages"]
        assert [user_texts(m)[0] for m in sent_for_original if m["role"] == "user"] == [
            "First question",
            "Second question",
            "Third question",
        ]
        forked = await messages(client, fid)
        assert [text_of(m) for m in forked] == [
            "First question", "First answer.", "A different question", "Fork answer.",
        ]  # fmt: skip
        assert forked[0]["id"] == first["messageId"]
        original = await messages(client, sid)
        assert original[:4] == before
        assert [text_of(m) for m in original[4:]] == ["Third question", "Original answer."]

        # No messageId: the whole conversation; the first prompt: an empty one.
        whole = await client.call("session/fork", {"sessionId": sid})
        assert "input" not in whole
        assert await messages(client, whole["sessionId"]) == original
        empty = await client.call(
            "session/fork", {"sessionId": sid, "messageId": first["messageId"]}
        )
        assert empty["input"] == "First question" and empty["historyLoaded"] is False
        assert await messages(client, empty["sessionId"]) == []
    finally:
        await client.close()

    # The fork lasts: a new process resumes it with its own history.
    client = await start(server_env)
    try:
        assert [text_of(m) for m in await messages(client, fid)] == [
            "First question", "First answer.", "A different question", "Fork answer.",
        ]  # fmt: skip
    finally:
        await client.close()


async def test_a_prompt_merged_after_a_failed_turn_stays_addressable(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    """A prompt after a turn that failed follows a user message: the history merges the
    two for the model, and each keeps its id."""
    scripted_llm.script(
        Reply.error(400, message="bad request", error_type="invalid_request_error"),
        Reply.text("Recovered."),
    )
    client = await start(server_env)
    try:
        sid = await create(client, workspace)
        failed = await prompt(client, sid, "First try")
        assert failed["stopReason"] == "error" and failed["messageId"]
        ok = await prompt(client, sid, "Second try")
        sent = scripted_llm.requests[-1].body["messages"]
        assert len(sent) == 1 and user_texts(sent[0])[0] == "First try"
        assert "Second try" in user_texts(sent[0]), "one merged user message for the model"
        listed = await messages(client, sid)
        assert [(m["id"], text_of(m)) for m in listed[:2]] == [
            (failed["messageId"], "First try"),
            (ok["messageId"], "Second try"),
        ]
        fork = await client.call("session/fork", {"sessionId": sid, "messageId": ok["messageId"]})
        assert fork["input"] == "Second try"
        assert await messages(client, fork["sessionId"]) == listed[:1]
    finally:
        await client.close()


async def test_interrupt_notes_and_compaction_summaries_are_listed_with_their_kind(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    streaming = Reply.text("Never finished.", gate=gate)
    scripted_llm.script(
        streaming,
        Reply.text("Second answer." + LONG),
        Reply.text("Third answer."),
        Reply.text("The summary of it all."),
    )
    client = await start(server_env)
    try:
        sid = await create(client, workspace)
        running = asyncio.ensure_future(prompt(client, sid, "First question"))
        assert await asyncio.get_running_loop().run_in_executor(None, streaming.at_gate.wait, 20)
        await client.wait_for("message:text:chunk", lambda p: p["sessionId"] == sid)
        await client.call("session/interrupt", {"sessionId": sid})
        gate.set()
        interrupted = await running
        assert interrupted["stopReason"] == "interrupted"
        second = await prompt(client, sid, "Second question")
        listed = await messages(client, sid)
        assert [(m["role"], m.get("kind"), text_of(m)) for m in listed] == [
            ("user", "prompt", "First question"),
            ("user", "notice", "[Request interrupted by user]"),
            ("user", "prompt", "Second question"),
            ("assistant", None, "Second answer." + LONG),
        ], "the cut response never joined; three user messages merged for the model"
        assert [listed[0]["id"], listed[2]["id"]] == [
            interrupted["messageId"],
            second["messageId"],
        ]
        chunk_ids = {e.params["messageId"] for e in client.events("message:text:chunk", sid)}
        assert listed[3]["id"] in chunk_ids and len(chunk_ids) == 2

        err = await error_of(
            client, "session/fork", {"sessionId": sid, "messageId": listed[1]["id"]}
        )
        assert err["code"] == -32602 and "notice" in err["message"]

        await prompt(client, sid, "Third question")
        listed = await messages(client, sid)
        compacted = await client.call("session/compact", {"sessionId": sid})
        assert compacted["strategy"] == "summary"
        after = await messages(client, sid)
        assert after[0]["kind"] == "summary" and "The summary of it all." in text_of(after[0])
        assert after[0]["id"] not in {m["id"] for m in listed}
        assert after[1:] == listed[-1:], "the kept tail keeps its ids"
        err = await error_of(
            client, "session/messages", {"sessionId": sid, "cursor": listed[0]["id"]}
        )
        assert err["code"] == -32602 and "start again" in err["message"]
        err = await error_of(
            client, "session/fork", {"sessionId": sid, "messageId": after[0]["id"]}
        )
        assert err["code"] == -32602 and "summary" in err["message"]
    finally:
        await client.close()


async def test_bad_params_are_refused_clearly_and_the_process_keeps_serving(
    server_env, scripted_llm: ScriptedLLM, workspace
):
    scripted_llm.script(Reply.text("An answer."), Reply.text("Still here."))
    client = await start(server_env)
    try:
        sid = await create(client, workspace)
        await prompt(client, sid, "A question")
        user, assistant = await messages(client, sid)

        err = await error_of(client, "session/messages", {"sessionId": "no-such-session"})
        assert err["code"] == -32010 and "no-such-session" in err["message"]
        err = await error_of(client, "session/fork", {"sessionId": "no-such-session"})
        assert err["code"] == -32010
        err = await error_of(client, "session/messages", {"sessionId": "../etc/passwd"})
        assert err["code"] == -32010
        err = await error_of(
            client, "session/fork", {"sessionId": sid, "messageId": "m_000000000000"}
        )
        assert err["code"] == -32602 and "m_000000000000" in err["message"]
        err = await error_of(
            client, "session/fork", {"sessionId": sid, "messageId": assistant["id"]}
        )
        assert err["code"] == -32602 and "assistant message" in err["message"]
        err = await error_of(client, "session/messages", {"sessionId": sid, "cursor": "nope"})
        assert err["code"] == -32602 and "cursor" in err["message"]
        err = await error_of(client, "session/messages", {"sessionId": sid, "limit": 0})
        assert err["code"] == -32602
        err = await error_of(client, "session/messages", {"sessionId": sid, "limit": 1001})
        assert err["code"] == -32602
        err = await error_of(client, "session/fork", {"messageId": user["id"]})
        assert err["code"] == -32602

        assert (await prompt(client, sid, "Another"))["stopReason"] == "end_turn"
        assert [text_of(m) for m in await messages(client, sid)] == [
            "A question", "An answer.", "Another", "Still here.",
        ]  # fmt: skip
        sessions = (await client.call("session/list", {}))["sessions"]
        assert [s["sessionId"] for s in sessions] == [sid], "a refused fork made no session"
    finally:
        await client.close()
