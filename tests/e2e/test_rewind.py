"""Checkpoints over real pipes: `turn:diff` at the end of a turn that changed files, and
`session/rewind` (code, conversation, both; redo; conflicts; force) after Write, Edit and
a Bash `sed -i`, also across a restart."""

from __future__ import annotations

import asyncio
import json
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.wire_helpers import MODEL, texts
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

pytestmark = pytest.mark.asyncio


async def start(env: dict[str, str], workspace: Path, sid: str) -> WireClient:
    client = await WireClient(env=env).start()
    await client.initialize()
    await client.create_session(workspace, sessionId=sid, model=MODEL, permissionMode="bypass")
    return client


async def prompt(client: WireClient, sid: str, text: str) -> dict[str, Any]:
    result = await client.call("session/prompt", {"sessionId": sid, "input": text})
    assert result["stopReason"] == "end_turn", result
    return result


async def rewind(client: WireClient, sid: str, **params: Any) -> dict[str, Any]:
    return await client.call("session/rewind", {"sessionId": sid, **params})


def diffs_of(client: WireClient, sid: str, message_id: str) -> list[dict[str, Any]]:
    return [
        e.message["params"]
        for e in client.events("turn:diff", sid)
        if e.message["params"]["messageId"] == message_id
    ]


def sent_texts(scripted_llm: ScriptedLLM) -> list[list[str]]:
    """The text blocks of every message of the last model request."""
    return [texts(m) for m in scripted_llm.requests[-1].body["messages"]]


async def three_turns(client: WireClient, scripted_llm: ScriptedLLM, sid: str) -> list[str]:
    """Write notes.txt, Edit it, `sed -i` it: one turn each; their prompts' ids."""
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "one\nkeep\n"})]),
        Reply.text("Created."),
        Reply.tools(
            [("Edit", {"file_path": "notes.txt", "old_string": "one", "new_string": "two"})]
        ),
        Reply.text("Edited."),
        Reply.tools([("Bash", {"command": "sed -i 's/two/three/' notes.txt"})]),
        Reply.text("Replaced."),
    )
    ids = []
    for text in ("Create notes", "Make it two", "Make it three"):
        ids.append((await prompt(client, sid, text))["messageId"])
    return ids


async def test_rewind_code_conversation_and_both_after_write_edit_and_sed_then_redo(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    sid = "rewind-all-kinds"
    notes = workspace / "notes.txt"
    client = await start(server_env, workspace, sid)
    try:
        m1, m2, m3 = await three_turns(client, scripted_llm, sid)
        assert notes.read_text() == "three\nkeep\n"

        # turn:diff, one per turn that changed a file, with the turn's prompt id.
        [d1], [d2], [d3] = (diffs_of(client, sid, m) for m in (m1, m2, m3))
        assert d1["files"] == [
            {
                "path": "notes.txt",
                "status": "added",
                "additions": 2,
                "deletions": 0,
                "diff": "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+keep\n",
            }
        ]
        assert d2["files"][0]["status"] == "modified"
        assert "-one\n+two\n" in d2["diff"]
        assert [f["path"] for f in d3["files"]] == ["notes.txt"], "the sed turn's change is seen"
        assert "-two\n+three\n" in d3["files"][0]["diff"]
        assert (d3["files"][0]["additions"], d3["files"][0]["deletions"]) == (1, 1)
        assert not d3.get("truncated")

        # code only: the sed is undone, the conversation stays.
        r = await rewind(client, sid, messageId=m3, restore="code")
        assert r["rewound"] is True and r["restore"] == "code"
        assert r["restoredFiles"] == ["notes.txt"] and r["conflicts"] == []
        assert r["input"] == "Make it three"
        assert r["messageCount"] == 9, "3 prompts + 6 assistant messages, all still there"
        assert notes.read_text() == "two\nkeep\n"
        r = await rewind(client, sid, redo=True)
        assert r["rewound"] is True and r["restoredFiles"] == ["notes.txt"]
        assert notes.read_text() == "three\nkeep\n"

        # both: back to just before "Make it two" — the Edit and the sed are undone.
        r = await rewind(client, sid, messageId=m2)
        assert r["rewound"] is True and r["restore"] == "both"
        assert r["input"] == "Make it two"
        assert r["messageCount"] == 3
        assert notes.read_text() == "one\nkeep\n"
        scripted_llm.script(Reply.text("Fine."))
        # redo, then the conversation alone: the files keep the redone content.
        r = await rewind(client, sid, redo=True)
        assert r["messageCount"] == 9 and notes.read_text() == "three\nkeep\n"
        r = await rewind(client, sid, messageId=m2, restore="conversation")
        assert r["rewound"] is True and r["restoredFiles"] == []
        assert notes.read_text() == "three\nkeep\n"

        await prompt(client, sid, "What now?")
        sent = sent_texts(scripted_llm)
        assert sent[0][0] == "Create notes"
        assert sent[-1] == ["What now?"]
        assert "Make it two" not in json.dumps(sent), "the rewound prompts are gone"
        assert len(sent) == 5, "prompt, Write, result, answer, new prompt"
        # A prompt makes the rewind final.
        with pytest.raises(RpcFailure) as failure:
            await rewind(client, sid, redo=True)
        assert failure.value.code == -32602 and "nothing to redo" in failure.value.error["message"]

        # Back to before the Write: the file it created goes (its later changes, the
        # redone ones included, are all undone at once).
        r = await rewind(client, sid, messageId=m1)
        assert r["rewound"] is True and r["restoredFiles"] == ["notes.txt"]
        assert r["messageCount"] == 0 and r["input"] == "Create notes"
        assert not notes.exists()
    finally:
        await client.close()


async def test_a_file_the_user_changed_since_is_a_conflict_unless_forced(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    sid = "rewind-conflict"
    readme = workspace / "README.md"
    client = await start(server_env, workspace, sid)
    try:
        scripted_llm.script(
            Reply.tools([("Read", {"file_path": "README.md"})]),
            Reply.tools(
                [("Edit", {"file_path": "README.md", "old_string": "tiny", "new_string": "big"})]
            ),
            Reply.text("Done."),
        )
        m1 = (await prompt(client, sid, "Say big"))["messageId"]
        assert readme.read_text() == "# Demo\n\nA big project.\n"
        readme.write_text("# Demo\n\nA big project, edited by hand.\n")  # the user, after

        r = await rewind(client, sid, messageId=m1)
        assert r["rewound"] is False
        assert r["conflicts"] == [{"path": "README.md", "reason": "modified"}]
        assert r["restoredFiles"] == []
        assert readme.read_text() == "# Demo\n\nA big project, edited by hand.\n", "untouched"
        assert r["messageCount"] == 4, "the conversation is untouched too"

        r = await rewind(client, sid, messageId=m1, force=True)
        assert r["rewound"] is True and r["restoredFiles"] == ["README.md"]
        assert r["conflicts"] == [{"path": "README.md", "reason": "modified"}]
        assert readme.read_text() == "# Demo\n\nA tiny project.\n"
        assert r["messageCount"] == 0
        # redo puts the user's version back (what the rewind overwrote).
        r = await rewind(client, sid, redo=True)
        assert r["rewound"] is True
        assert readme.read_text() == "# Demo\n\nA big project, edited by hand.\n"
    finally:
        await client.close()


async def test_a_command_that_changes_a_file_it_does_not_name_cannot_be_restored(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    """What a command created is deleted; what it changed without naming it (and the
    session never read) was not captured: a conflict even with force."""
    sid = "rewind-not-captured"
    client = await start(server_env, workspace, sid)
    command = "echo made > made.txt && python3 -c \"open('src/' + 'mod1.py', 'a').write('#')\""
    try:
        scripted_llm.script(Reply.tools([("Bash", {"command": command})]), Reply.text("Ran."))
        m1 = (await prompt(client, sid, "Run it"))["messageId"]
        assert (workspace / "made.txt").exists()
        [d] = diffs_of(client, sid, m1)
        assert {f["path"]: f["status"] for f in d["files"]} == {
            "made.txt": "added",
            "src/mod1.py": "modified",
        }
        assert "not captured" in d["files"][1]["diff"]

        r = await rewind(client, sid, messageId=m1, restore="code")
        assert r["rewound"] is False
        assert r["conflicts"] == [{"path": "src/mod1.py", "reason": "notCaptured"}]
        assert (workspace / "made.txt").exists()
        r = await rewind(client, sid, messageId=m1, restore="code", force=True)
        assert r["rewound"] is True and r["restoredFiles"] == ["made.txt"]
        assert not (workspace / "made.txt").exists()
        assert (workspace / "src/mod1.py").read_text().endswith("#")
    finally:
        await client.close()


async def test_rewind_then_resume_after_a_restart_shows_the_rewound_conversation(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    sid = "rewind-resume"
    notes = workspace / "notes.txt"
    client = await start(server_env, workspace, sid)
    try:
        _m1, m2, _m3 = await three_turns(client, scripted_llm, sid)
        r = await rewind(client, sid, messageId=m2)
        assert r["rewound"] is True and notes.read_text() == "one\nkeep\n"
    finally:
        await client.close()

    client = await start(server_env, workspace, sid)
    try:
        # The rewind can still be redone after the restart (files and messages).
        r = await rewind(client, sid, redo=True)
        assert r["rewound"] is True and r["messageCount"] == 9
        assert notes.read_text() == "three\nkeep\n"
        r = await rewind(client, sid, messageId=m2)
        assert r["rewound"] is True and notes.read_text() == "one\nkeep\n"
    finally:
        await client.close()

    client = await start(server_env, workspace, sid)
    try:
        listed = (await client.call("session/messages", {"sessionId": sid}))["messages"]
        assert [m["content"][0]["text"] for m in listed if m["role"] == "user"] == [
            "Create notes"
        ], "resumed: the rewound conversation"
        assert len(listed) == 3
        scripted_llm.script(Reply.text("Back."))
        await prompt(client, sid, "Where were we?")
        sent = sent_texts(scripted_llm)
        assert len(sent) == 5 and sent[0][0] == "Create notes" and sent[-1] == ["Where were we?"]
        assert "Make it" not in json.dumps(sent)
    finally:
        await client.close()

    root = Path(server_env["SEMA_ROOT"]) / "checkpoints" / sid
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "blobs").stat().st_mode) == 0o700
    files = [root / "index.jsonl", *(root / "blobs").iterdir()]
    assert len(files) >= 4, "the index and the contents one, one/two, two/three... were kept"
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    kept = {p.read_bytes() for p in (root / "blobs").iterdir()}
    assert {b"one\nkeep\n", b"two\nkeep\n", b"three\nkeep\n"} <= kept


async def test_turn_diff_is_capped(server_env, scripted_llm: ScriptedLLM, workspace: Path):
    sid = "rewind-diff-cap"
    client = await start(server_env, workspace, sid)
    big = "".join(f"line {n} of a long generated file\n" for n in range(4000))
    try:
        scripted_llm.script(
            Reply.tools([("Write", {"file_path": "big.txt", "content": big})]), Reply.text("Ok.")
        )
        m1 = (await prompt(client, sid, "Write a big file"))["messageId"]
        [d] = diffs_of(client, sid, m1)
        assert d["truncated"] is True
        [f] = d["files"]
        assert f["additions"] == 4000, "the counts are the whole file's"
        assert len(f["diff"]) <= 64 * 1024 and f["diff"].startswith("--- /dev/null")
    finally:
        await client.close()


async def test_bad_rewind_params_get_clear_errors(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    sid = "rewind-bad"
    client = await start(server_env, workspace, sid)
    try:
        scripted_llm.script(Reply.text("Hi."))
        m1 = (await prompt(client, sid, "Hello"))["messageId"]
        assistant = next(
            e.message["params"]["messageId"] for e in client.events("message:complete", sid)
        )
        cases: list[tuple[dict[str, Any], int, str]] = [
            ({"sessionId": sid}, -32602, "messageId is required"),
            ({"sessionId": sid, "messageId": m1, "redo": True}, -32602, "not both"),
            ({"sessionId": sid, "messageId": m1, "restore": "all"}, -32602, "restore"),
            ({"sessionId": sid, "messageId": "m_000000000000"}, -32602, "no prompt with that id"),
            ({"sessionId": sid, "messageId": assistant}, -32602, "not a user prompt"),
            ({"sessionId": sid, "redo": True}, -32602, "nothing to redo"),
            ({"sessionId": "no-such-session", "messageId": m1}, -32010, "unknown session"),
        ]
        for params, code, words in cases:
            with pytest.raises(RpcFailure) as failure:
                await client.call("session/rewind", params)
            assert failure.value.code == code, params
            assert words in json.dumps(failure.value.error), failure.value.error

        # While a turn runs: refused, and nothing changes.
        gate = threading.Event()
        slow = Reply.text("Slow answer.", chunks=4, gate=gate)
        scripted_llm.script(slow)
        running = asyncio.ensure_future(
            client.call("session/prompt", {"sessionId": sid, "input": "Take your time"})
        )
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, slow.at_gate.wait, 10)
        with pytest.raises(RpcFailure) as failure:
            await rewind(client, sid, messageId=m1)
        assert failure.value.code == -32016 and "turn is running" in failure.value.error["message"]
        gate.set()
        assert (await running)["stopReason"] == "end_turn"
        r = await rewind(client, sid, messageId=m1)
        assert r["rewound"] is True and r["messageCount"] == 0
    finally:
        await client.close()


async def test_a_capped_scan_never_deletes_what_it_did_not_see(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    """Past SEMA_CHECKPOINT_SCAN_LIMIT files the scan stops (one log line says so): a named
    file is still kept and restored, but a file the scan before the command could not
    have listed is not taken for one the command created (a rewind must not delete it)."""
    sid = "rewind-capped"
    env = {**server_env, "SEMA_CHECKPOINT_SCAN_LIMIT": "3", "SEMA_LOG_LEVEL": "WARNING"}
    command = "sed -i 's/VALUE_7/SEVEN/' src/mod7.py && echo new > new.txt"
    client = await start(env, workspace, sid)
    try:
        scripted_llm.script(
            Reply.tools([("Bash", {"command": command})]),
            Reply.text("Ran."),
            Reply.tools([("Bash", {"command": "echo again > again.txt"})]),
            Reply.text("Ran again."),
        )
        m1 = (await prompt(client, sid, "Run it"))["messageId"]
        await prompt(client, sid, "Run another")
        assert (workspace / "src/mod7.py").read_text().startswith("SEVEN = 7\n")
        r = await rewind(client, sid, messageId=m1, restore="code")
        assert r["rewound"] is False
        assert {"path": "new.txt", "reason": "notCaptured"} in r["conflicts"]
        r = await rewind(client, sid, messageId=m1, restore="code", force=True)
        assert r["rewound"] is True and "src/mod7.py" in r["restoredFiles"]
        assert (workspace / "src/mod7.py").read_text().startswith("VALUE_7 = 7\n")
        assert (workspace / "new.txt").exists() and (workspace / "again.txt").exists()
        stderr = bytes(client.stderr).decode()
        assert stderr.count("the scan stops there") == 1, stderr[-2000:]
    finally:
        await client.close()


async def test_a_command_after_cd_is_rewound_too(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    sid = "rewind-after-cd"
    mod3 = workspace / "src" / "mod3.py"
    before = mod3.read_text()
    client = await start(server_env, workspace, sid)
    try:
        scripted_llm.script(
            Reply.tools([("Bash", {"command": "cd src && sed -i 's/VALUE_3/THREE/' mod3.py"})]),
            Reply.text("Done."),
        )
        m1 = (await prompt(client, sid, "Rename it"))["messageId"]
        assert mod3.read_text().startswith("THREE = 3\n")
        r = await rewind(client, sid, messageId=m1, restore="code")
        assert r["rewound"] is True and r["conflicts"] == []
        assert r["restoredFiles"] == ["src/mod3.py"] and mod3.read_text() == before
    finally:
        await client.close()
