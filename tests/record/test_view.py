"""`sema-rpc view`: a recording or a history as one self-contained HTML page (the page as
text; tests/record/test_view_browser.py opens it in Chromium)."""

from __future__ import annotations

import html
import json
import re
import stat
from pathlib import Path

from tests.record.view_support import ANSWER, INJECTED, THINKING, record_session, run_view


def _strip_tags(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


async def test_a_recording_and_the_history_of_the_same_session_render(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    run_dir, history = await record_session(server_env, scripted_llm, workspace, tmp_path)
    sid = history.stem

    out = tmp_path / "rec.html"
    code, err = await run_view(str(run_dir), "-o", str(out))
    assert code == 0, err
    page = out.read_text()
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    text = _strip_tags(page)
    assert ANSWER in text and "Checking the files." in text
    assert re.search(r"<details class=\"thinking\"><summary>Thinking[^<]*</summary><pre>", page)
    assert THINKING in text
    # the tool calls, with their durations; the Bash call's consent, decided by the user
    assert "Read README.md" in text and "A tiny project." in text
    [bash] = [i for i in page.split("<li ") if i.startswith('class="item tool"') and "touch" in i]
    duration = re.search(r'<span class="duration">(\d+) ms</span>', bash)
    assert duration and int(duration.group(1)) >= 200, "the Bash call slept 0.2 s"
    assert "Permission asked" in bash and "allow_once" in bash and "by the user (client)" in bash
    assert "Mode</span>→ Plan" in page
    # the prompt's own text and the answer's: each once, in the order they happened
    assert text.index("What is this?") < text.index(ANSWER) < text.index("Plan it.")
    # header and chart
    assert sid in text and "anthropic/claude-test" in text and str(workspace) in text
    assert "2 prompt(s)" in text and "2 tool call(s)" in text and "1 permission request(s)" in text
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in page and "<polyline" in page
    # self-contained: nothing to load, and a policy that would refuse it anyway
    assert not re.search(r"\s(?:src|href|srcset)\s*=|@import|url\(", page)
    assert "default-src 'none'" in page and "script-src 'sha256-" in page
    # what came from the session is text, never markup
    assert INJECTED not in page and html.escape(INJECTED) in page
    assert "sk-ant-test-key" not in page

    # the history of the same session, read by its file and by its id
    for source in (str(history), sid):
        out = tmp_path / "hist.html"
        code, err = await run_view(
            source, "-o", str(out), env={"SEMA_ROOT": server_env["SEMA_ROOT"]}
        )
        assert code == 0, (source, err)
        page = out.read_text()
        text = _strip_tags(page)
        assert f"history: {history}" in text
        assert ANSWER in text and THINKING in text and "Planning now." in text
        assert "What is this?" in text and "Plan it." in text
        assert "system reminder" in text, "the engine's additions are folded apart"
        assert re.search(r'<span class="duration">≈ \d+ ms</span>', page)
        assert INJECTED not in page and html.escape(INJECTED) in page
        assert "Mode</span>→ Plan" in page and "<polyline" in page


async def test_bad_input_is_a_clear_error_with_exit_code_2(tmp_path: Path):
    env = {"SEMA_ROOT": str(tmp_path / "root")}
    notes = tmp_path / "notes.txt"
    notes.write_text("just some text\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = {
        str(tmp_path / "missing.jsonl"): "no such file or session",
        "no-such-session": "no session with that id",
        str(notes): "neither a recording",
        str(empty): "neither a recording",
        str(folder): "without wire.jsonl",
    }
    for source, message in cases.items():
        out = tmp_path / "out.html"
        code, err = await run_view(source, "-o", str(out), env=env)
        assert code == 2, (source, err)
        assert message in err and err.startswith("sema-rpc view: "), err
        assert not out.exists()
    good = tmp_path / "h.jsonl"
    good.write_text('{"t":"meta","v":1,"n":0,"at":1,"sessionId":"h","workingDir":"/w"}\n')
    code, err = await run_view(str(good), "-o", str(tmp_path / "no-such-dir" / "x.html"))
    assert code == 2 and "cannot write" in err


def _history(path: Path, entries: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


async def test_secrets_never_reach_the_page(tmp_path: Path):
    """The logs' redaction: the keys the viewing process knows, and anything shaped like one."""
    known = "my-own-endpoint-token-42"
    source = _history(
        tmp_path / "s.jsonl",
        [
            {"t": "meta", "v": 1, "n": 0, "at": 100.0, "sessionId": "s", "workingDir": "/w"},
            {"t": "message", "n": 1, "at": 101.0, "role": "user",
             "content": [{"type": "text", "text": f"use {known} please"}]},
            {"t": "message", "n": 2, "at": 102.0, "role": "assistant",
             "content": [{"type": "tool_use", "id": "tu1", "name": "Bash",
                          "input": {"command": "cat .env"}}]},
            {"t": "message", "n": 3, "at": 103.0, "role": "user",
             "content": [{"type": "tool_result", "tool_use_id": "tu1",
                          "content": "KEY=sk-ant-api03-abcdefghijklmnop\nOTHER=" + known}]},
        ],
    )  # fmt: skip
    out = tmp_path / "s.html"
    code, err = await run_view(str(source), "-o", str(out), env={"ANTHROPIC_AUTH_TOKEN": known})
    assert code == 0, err
    page = out.read_text()
    assert known not in page and "sk-ant-api03" not in page
    assert page.count("[REDACTED]") == 3
    assert "cat .env" in page


async def test_events_of_newer_versions_render_and_unknown_ones_render_generically(
    tmp_path: Path,
):
    """Rewinds, forks, file diffs, model switches and cost totals when present; an event
    this version does not know is shown with its fields instead of failing the page."""
    sid = "sess-1"

    def out(t: float, method: str, **params: object) -> dict:
        params = {"sessionId": sid, "agentId": "main", "seq": 1, **params}
        return {"t": t, "dir": "out", "msg": {"jsonrpc": "2.0", "method": method, "params": params}}

    totals = {"inputTokens": 1200, "outputTokens": 300, "cacheReadTokens": 0,
              "cacheWriteTokens": 0}  # fmt: skip
    lines = [
        {"t": 0.0, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/create",
                                        "params": {"workingDir": "/w"}}},
        out(0.1, "session:ready", workingDir="/w", model="claude-a", mode="Agent",
            permissionMode="default", historyLoaded=False),
        {"t": 0.2, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                                        "params": {"sessionId": sid, "input": "hi"}}},
        out(0.3, "message:text:chunk", delta="Hel", messageId="m_1"),
        out(0.4, "message:text:chunk", delta="lo!", messageId="m_1"),
        out(0.5, "message:complete", content="Hello!", reasoning="", hasToolCalls=False,
            toolCalls=[], messageId="m_1"),
        out(0.6, "conversation:usage", usage={"useTokens": 1500, "maxTokens": 200000},
            turn={**totals, "costUsd": 0.01}, session={**totals, "costUsd": 0.01}),
        out(0.7, "turn:diff", messageId="m_0", files=[
            {"path": "a.py", "status": "modified", "additions": 2, "deletions": 1,
             "diff": "--- a/a.py\n+++ b/a.py\n-x\n+y\n+<b>z</b>"}], diff="--- a/a.py"),
        {"t": 0.8, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 2, "result": {
            "stopReason": "end_turn", "messageId": "m_0", "turn": {**totals, "costUsd": 0.0125}}}},
        out(0.9, "model:update", model="gpt-b", thinking=True),
        {"t": 1.0, "dir": "in", "msg": {"jsonrpc": "2.0", "id": 3, "method": "session/rewind",
                                        "params": {"sessionId": sid, "messageId": "m_0",
                                                   "restore": "both"}}},
        {"t": 1.1, "dir": "out", "msg": {"jsonrpc": "2.0", "id": 3, "result": {
            "rewound": True, "restore": "both", "restoredFiles": ["a.py"], "conflicts": [],
            "input": "hi", "messageCount": 0}}},
        out(1.2, "conversation:usage", usage={"useTokens": 400, "maxTokens": 200000},
            session={**totals, "costUsd": 0.025}),
        out(1.3, "galaxy:brain", level=9000, note="<i>new</i>"),
        out(1.35, "task:agent:start", taskId="task-1", subagentType="Explore",
            description="look around", prompt="Where?"),
        {"t": 1.36, "dir": "out", "msg": {"jsonrpc": "2.0", "method": "message:text:chunk",
                                          "params": {"sessionId": sid, "agentId": "task-1",
                                                     "seq": 2, "delta": "Sub answer"}}},
        {"t": 1.4, "dir": "in", "raw": "not json"},
    ]  # fmt: skip
    wire = tmp_path / "run" / "wire.jsonl"
    wire.parent.mkdir()
    wire.write_text("".join(json.dumps(line) + "\n" for line in lines))
    target = tmp_path / "page.html"
    code, err = await run_view(str(wire.parent), "-o", str(target))
    assert code == 0, err
    page = target.read_text()
    text = _strip_tags(page)
    assert "Hello!" in text and "id m_1" in text
    assert "stop: end_turn · cost $0.0125 · id m_0" in text
    assert "claude-a → gpt-b" in text and "Model switch→ gpt-b (thinking on)" in text
    assert "a.py (modified, +2 −1)" in text and "&lt;b&gt;z&lt;/b&gt;" in page
    assert "Rewindto before message m_0 (restore: both) — rewound, 1 file(s) restored" in text
    assert "cost $0.0250" in text and '<polyline class="cost"' in page
    assert "galaxy:brain" in text and '"level": 9000' in text and "<i>new</i>" not in page
    assert "Subagenttask-1 (Explore): look around" in text
    [sub] = [i for i in page.split("<li ") if "Sub answer" in i]
    assert sub.startswith('class="item answer sub"') and "agent task-1" in sub
    assert "1 unreadable line(s) skipped" not in text, "a raw wire line is not a broken file"

    history = _history(
        tmp_path / "h.jsonl",
        [
            {"t": "meta", "v": 1, "n": 0, "at": 100.0, "sessionId": "h", "workingDir": "/w"},
            {"t": "model", "n": 0, "at": 100.5, "model": "claude-a", "thinking": None},
            {"t": "message", "n": 1, "at": 101.0, "role": "user", "id": "m_a",
             "content": [{"type": "text", "text": "first"}]},
            {"t": "usage", "n": 1, "at": 101.5, "inputTokens": 10, "outputTokens": 5,
             "cacheReadTokens": 0, "cacheWriteTokens": 0, "costUsd": 0.5},
            {"t": "rewind", "n": 1, "at": 102.0, "messageId": "m_a", "restore": "both",
             "files": [{"path": "a.py", "found": "abc", "wrote": None}]},
            {"t": "redo", "n": 1, "at": 102.5},
            {"t": "model", "n": 1, "at": 103.0, "model": "gpt-b", "thinking": False},
            {"t": "usage", "n": 1, "at": 103.5, "inputTokens": 20, "outputTokens": 9,
             "cacheReadTokens": 0, "cacheWriteTokens": 0, "costUsd": 0.75},
            {"t": "hologram", "n": 1, "at": 104.0, "shape": "cube"},
            {"t": "message", "n": 2, "at": 104.2, "role": "user", "kind": "notice",
             "content": [{"type": "text", "text": "[Request interrupted by user]"}]},
            {"t": "message", "n": 3, "at": 104.5, "role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "big"}},
                {"type": "tool_use", "id": "tu2", "name": "Read", "input": {"file_path": "huge"}}]},
            {"t": "message", "n": 4, "at": 104.75, "role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "tu1",
                 "content": "".join(f"line {i}\n" for i in range(5000))},
                {"type": "tool_result", "tool_use_id": "tu2", "content": "y" * 300_000}]},
            {"t": "compact", "n": 1, "at": 105.0, "strategy": "summary", "trigger": "manual",
             "tokenBefore": 5000, "tokenCompact": 800,
             "messages": [{"role": "user", "content": [{"type": "text", "text": "Summary: x"}]}]},
        ],
    )  # fmt: skip
    code, err = await run_view(str(history), "-o", str(target))
    assert code == 0, err
    page = target.read_text()
    text = _strip_tags(page)
    assert "Rewindto before message m_a (restore: both), 1 file(s) written" in text
    # The model entry before the first message is the one the session was created on.
    assert "Redothe last rewind undone" in text and "claude-a → gpt-b" in text
    assert "Model switch→ gpt-b (thinking off)" in text and text.count("Model switch") == 1
    assert "20 input, 9 output, 0 cache read, 0 cache write; cost $0.7500" in text
    assert '<polyline class="cost"' in page
    # long results are folded (the conversation's own text is not); huge ones are cut
    assert "<summary>line 0 … (5,000 lines, 48,890 chars)</summary>" in page
    assert "… 100,000 more characters not shown" in text and "y" * 200_001 not in page
    assert '<span class="duration">≈ 250 ms</span>' in page
    assert "Noticeadded by the engine" in text and "[Request interrupted by user]" in text
    assert "hologram" in text and '"shape": "cube"' in text
    assert "manual: summary, 5,000 → 800 tokens" in text and "Summary: x" in text


async def test_a_resumed_session_shows_its_earlier_conversation_folded(
    server_env, scripted_llm, workspace, tmp_path: Path
):
    from tests.support.scripted_llm import Reply
    from tests.support.wire_client import WireClient

    _, history = await record_session(server_env, scripted_llm, workspace, tmp_path)
    scripted_llm.script(Reply.text("Still here.", chunks=2))
    record_root = tmp_path / "records-2"
    async with WireClient(env=server_env, extra_args=["--record", str(record_root)]) as client:
        await client.initialize()
        ready = await client.create_session(
            workspace, sessionId=history.stem, model="anthropic/claude-test"
        )
        assert ready["historyLoaded"]
        await client.call("session/prompt", {"sessionId": history.stem, "input": "Again?"})
    [run_dir] = list(record_root.iterdir())
    target = tmp_path / "resumed.html"
    code, err = await run_view(str(run_dir), "-o", str(target))
    assert code == 0, err
    page = target.read_text()
    earlier, _, now = page.partition("</ol></details>")
    assert "Resumed: the conversation before this recording" in earlier
    assert "What is this?" in earlier and ANSWER in earlier and INJECTED not in page
    assert "Again?" in now and "Still here." in now and "What is this?" not in now
    assert "1 prompt(s)" in _strip_tags(page), "the header counts this recording's turns"
