"""`sema-rpc run` as a user runs it: a subprocess hosting the server in-process (the
default) or spawning it (`SEMA_RUN_SPAWN=1`); every test runs both ways."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.sandbox import status as sandbox_status
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.server_forks import run_server

REPO = Path(__file__).resolve().parents[2]
MODEL = "anthropic/claude-test"


@pytest.fixture(autouse=True, params=["in-process", "spawn"])
def run_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How `run` hosts its server; the subprocess inherits the choice from os.environ."""
    if request.param == "spawn":
        monkeypatch.setenv("SEMA_RUN_SPAWN", "1")
    else:
        monkeypatch.delenv("SEMA_RUN_SPAWN", raising=False)
    return str(request.param)


def run(
    *args: str,
    env: dict[str, str],
    stdin: str | None = None,
    timeout: float = 60,
    cwd: Path = REPO,
) -> subprocess.CompletedProcess[str]:
    """`python -m sema_rpc run *args` to completion, forked from the worker's preloaded
    server (`tests/support/server_forks.py`)."""
    return run_server(
        ["run", *args],
        input=stdin,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **env},
        cwd=cwd,
        timeout=timeout,
    )


def own_home(tmp_path: Path) -> dict[str, str]:
    """HOME and SEMA_ROOT of this test alone, and no key from the caller's environment."""
    home, root = tmp_path / "home", tmp_path / "sema-root"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "SEMA_ROOT": str(root),
        "ANTHROPIC_API_KEY": "",
        "ANTHROPIC_AUTH_TOKEN": "",
        "OPENAI_API_KEY": "",
    }


def jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_text_format_prompt_from_stdin_and_yes_lets_a_write_through(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "out.txt", "content": "42\n"})], text="Writing."),
        Reply.text("The answer is written.", chunks=4),
    )
    proc = run(
        "--format", "text", "--yes", "--model", MODEL, "--cwd", str(workspace), "-",
        env=server_env,
        stdin="write the answer\n",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "out.txt").read_text() == "42\n"
    assert proc.stdout == "Writing.\nThe answer is written.\n"
    assert "→ Write" in proc.stderr
    user = scripted_llm.requests[0].body["messages"][0]["content"]
    assert "write the answer" in json.dumps(user)


def test_jsonl_without_yes_refuses_the_write_and_a_provider_error_exits_1(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "out.txt", "content": "x"})]),
        Reply.error(400, message="scripted failure"),
    )
    proc = run("--model", MODEL, "--cwd", str(workspace), "write it", env=server_env)
    assert proc.returncode == 1, proc.stderr
    assert not (workspace / "out.txt").exists()
    messages = jsonl(proc.stdout)
    *events, answer = messages
    assert all(m["jsonrpc"] == "2.0" and "method" in m and "id" not in m for m in events)
    assert answer["result"]["stopReason"] == "error" and isinstance(answer["id"], int)
    methods = [m["method"] for m in events]
    assert methods[0] == "session:ready" and "session:error" in methods
    [error] = [m["params"] for m in events if m["method"] == "tool:execution:error"]
    assert "no one can be asked" in error["content"], "the refusal is a clear tool error"
    seqs = [m["params"]["seq"] for m in events]
    assert seqs == list(range(1, len(seqs) + 1)), "every notification, in wire order"


@pytest.mark.skipif(not sandbox_status()[0], reason=f"no OS sandbox here: {sandbox_status()[1]}")
def test_sandbox_flag_confines_commands_even_with_yes(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
):
    outside = tmp_path / "outside-run"
    outside.mkdir()
    command = f"touch made.txt; touch {outside}/escaped"
    for flag in ("read-only", "workspace-write", "off"):
        scripted_llm.script(Reply.tools([("Bash", {"command": command})]), Reply.text("done"))
        proc = run(
            "--yes", "--sandbox", flag, "--model", MODEL, "--cwd", str(workspace), "go",
            env=server_env,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        [ready] = [m["params"] for m in jsonl(proc.stdout) if m.get("method") == "session:ready"]
        assert ready["sandbox"]["mode"] == flag
        made, escaped = (workspace / "made.txt").exists(), (outside / "escaped").exists()
        assert (made, escaped) == {
            "read-only": (False, False),
            "workspace-write": (True, False),
            "off": (True, True),
        }[flag]
        (workspace / "made.txt").unlink(missing_ok=True)


def test_no_model_is_a_usage_error_naming_model(tmp_path: Path, workspace: Path):
    env = own_home(tmp_path)
    proc = run("--format", "text", "--cwd", str(workspace), "hi", env=env)
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert "no model" in line.lower() and "--model" in line
    assert "ANTHROPIC_API_KEY" in line and "models.json" in line

    proc = run("--cwd", str(workspace), "hi", env=env)
    assert proc.returncode == 2
    methods = [m.get("method") for m in jsonl(proc.stdout)]
    assert methods.count("config:no_models") == 1, methods


@pytest.mark.parametrize(
    ("model", "named"),
    [
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai/gpt-4.1", "OPENAI_API_KEY"),
        ("gpt-4.1", "OPENAI_API_KEY"),
        ("mistral/large", "unknown provider 'mistral'"),
        ("mystery", "models.json"),
        ("local", "models.json"),
    ],
)
def test_a_model_that_cannot_run_is_a_one_line_config_error(
    model: str, named: str, tmp_path: Path, workspace: Path
):
    """A missing key, an unknown provider or model: exit 2 and one line that says what
    to set, before any model request (not the SDK's text after one)."""
    env = own_home(tmp_path)
    Path(env["SEMA_ROOT"]).mkdir()
    models = {"profiles": {"local": {"provider": "openai", "modelName": "qwen3"}}}
    (Path(env["SEMA_ROOT"]) / "models.json").write_text(json.dumps(models))
    for fmt in ("text", "jsonl"):
        proc = run("--format", fmt, "--model", model, "--cwd", str(workspace), "hi", env=env)
        assert proc.returncode == 2, proc.stderr
        [line] = proc.stderr.splitlines()
        assert line.startswith("sema-rpc: ") and named in line
        assert "Traceback" not in line and "api_key" not in line
        assert proc.stdout == ""


def test_demo_command_prints_the_whole_event_stream(tmp_path: Path):
    proc = run(
        "--model", "replay/demo", "--format", "jsonl",
        "--cwd", "sema_rpc/data/demo-workspace", "What is in this project?",
        env=own_home(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(line.startswith('{"jsonrpc":"2.0",') for line in lines)
    *events, answer = [json.loads(line) for line in lines]
    methods = [m["method"] for m in events]
    assert methods[0] == "session:ready" and methods[-1] == "state:update"
    assert methods.count("tool:execution:complete") == 2
    assert answer["result"]["stopReason"] == "end_turn"


def test_the_demo_recording_runs_on_its_own_workspace_from_any_directory(tmp_path: Path):
    """Without --cwd, `replay/demo` works in the bundled demo workspace: the tools find
    the files the recording talks about, wherever the command is run."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = own_home(tmp_path)
    proc = run("--format", "text", "--model", "replay/demo", "What is in this project?",
               env=env, cwd=elsewhere)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "tasklist" in proc.stdout
    assert "→ Read README.md" in proc.stderr and "✗" not in proc.stderr, proc.stderr
    assert list(elsewhere.iterdir()) == []

    proc = run("--model", "replay/demo", "What is in this project?", env=env, cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    [ready] = [m["params"] for m in jsonl(proc.stdout) if m.get("method") == "session:ready"]
    assert ready["workingDir"] == str((REPO / "sema_rpc/data/demo-workspace").resolve())

    # --cwd still wins: the tools then look there.
    proc = run("--format", "text", "--model", "replay/demo", "--cwd", str(elsewhere), "go",
               env=env, cwd=REPO)  # fmt: skip
    assert "✗ Read README.md: File does not exist" in proc.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_prints_text_and_writes_nothing_into_home(tmp_path: Path):
    """`make demo` is readable text (the JSONL stream with FORMAT=jsonl) and keeps its
    session in a temporary SEMA_ROOT: neither HOME nor the user's SEMA_ROOT changes."""
    env = {**os.environ, **own_home(tmp_path), "PYTHONIOENCODING": "utf-8"}
    make = ["make", "-s", "--no-print-directory", "-o", ".venv/.installed",
            f"BIN={Path(sys.executable).parent}", "demo"]  # fmt: skip
    # Both formats at once: each run has its own temporary SEMA_ROOT.
    runs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=REPO) for cmd in (make, [*make, "FORMAT=jsonl"])]  # fmt: skip
    (text_out, text_err), (jsonl_out, jsonl_err) = (run.communicate(timeout=120) for run in runs)
    proc = subprocess.CompletedProcess(make, runs[0].returncode, text_out, text_err)
    assert proc.returncode == 0, proc.stderr
    assert "This is **tasklist**" in proc.stdout and '"jsonrpc"' not in proc.stdout
    assert "→ Glob **/*.py" in proc.stderr

    proc = subprocess.CompletedProcess(make, runs[1].returncode, jsonl_out, jsonl_err)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout.splitlines()[-1])
    assert answer["result"]["stopReason"] == "end_turn"
    assert list((tmp_path / "home").iterdir()) == []
    assert not (tmp_path / "sema-root").exists()


def test_help_says_what_yes_allows():
    proc = subprocess.run([sys.executable, "-m", "sema_rpc", "run", "--help"],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    text = " ".join(proc.stdout.split())
    assert "outside the workspace are allowed" not in text
    assert "paths outside the workspace stay refused" in text


def test_ctrl_c_interrupts_the_turn_and_exits_130(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    gate = threading.Event()
    reply = Reply.text("This answer never finishes.", chunks=6, gate=gate)
    scripted_llm.script(reply)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sema_rpc", "run", "--model", MODEL, "--cwd", str(workspace), "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **server_env},
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        seen = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            seen.append(json.loads(line))
            if seen[-1].get("method") == "message:text:chunk":
                break
        assert reply.at_gate.wait(10)
        proc.send_signal(signal.SIGINT)
        rest, stderr = proc.communicate(timeout=30)
    finally:
        gate.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    *events, answer = seen + jsonl(rest)
    assert answer["result"]["stopReason"] == "interrupted"
    assert "session:interrupted" in [m["method"] for m in events]


def _expected_answer(name: str) -> tuple[str, str]:
    """(text, thinking) of a shared cassette's final message, as the SDK assembled it."""
    from tests.providers.helpers import CASSETTES

    exp = json.loads((CASSETTES / "expected" / f"{name}.json").read_text())
    if "choices" in exp:  # Chat Completions
        msg = exp["choices"][0]["message"]
        return msg.get("content") or "", msg.get("reasoning_content") or ""
    if "output" in exp:  # Responses
        text = "".join(
            c.get("text", "") for o in exp["output"] if o["type"] == "message" for c in o["content"]
        )
        return text, ""
    text = "".join(b["text"] for b in exp["content"] if b["type"] == "text")
    return text, "".join(b.get("thinking", "") for b in exp["content"] if b["type"] == "thinking")


@pytest.mark.parametrize(
    "name",
    [
        "anthropic_text_1",
        "openai_chat_text_1",
        "openai_responses_text_1",
        "deepseek_chat_reasoning_1",
    ],
)
def test_a_shared_sse_cassette_is_a_replay_model(name: str, tmp_path: Path, workspace: Path):
    """`replay/<path>.sse`: one recorded real response, played through the SDK its stream
    names, reaches the client as the text the SDK assembled."""
    from tests.providers.helpers import CASSETTES

    cassette = CASSETTES / f"{name}.sse"
    proc = run(
        "--model", f"replay/{cassette}", "--cwd", str(workspace), "hello",
        env=own_home(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    *events, answer = jsonl(proc.stdout)
    assert answer["result"]["stopReason"] == "end_turn"
    text, thinking = _expected_answer(name)
    assert (
        "".join(m["params"]["delta"] for m in events if m["method"] == "message:text:chunk") == text
    )
    assert (
        "".join(m["params"]["delta"] for m in events if m["method"] == "message:thinking:chunk")
        == thinking
    )
    [complete] = [m["params"] for m in events if m["method"] == "message:complete"]
    assert complete["content"] == text


def test_run_record_writes_a_replayable_transcript_and_cassette(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
):
    import asyncio

    from sema_rpc.record.replay import replay
    from sema_rpc.record.transcript import load_transcript

    scripted_llm.script(
        Reply.tools([("Read", {"file_path": "README.md"})], text="Reading."),
        Reply.text("A tiny project.", chunks=2),
    )
    records = tmp_path / "records"
    proc = run(
        "--format", "text", "--model", MODEL, "--cwd", str(workspace),
        "--record", str(records), "what is this?",
        env=server_env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Reading.\nA tiny project.\n"
    scripted_llm.stop()

    [run_dir] = list(records.iterdir())
    [cassette] = list(run_dir.glob("cassette-*.jsonl"))
    exchanges = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [e["provider"] for e in exchanges] == ["anthropic", "anthropic"]
    assert all(e["body"].startswith("event: message_start") for e in exchanges)
    _, entries = load_transcript(run_dir)
    methods = [e.msg.get("method") for e in entries if e.msg and e.direction == "in"]
    assert methods == ["initialize", "session/create", "session/prompt"]
    result = asyncio.run(
        replay(run_dir, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, timeout_s=15)
    )
    assert result.ok, result.diff + result.stderr[-2000:]


def _start_gated_turn(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path
) -> tuple[subprocess.Popen[str], threading.Event, list[dict[str, Any]]]:
    """A `run` whose answer has started streaming and then waits (the model's gate)."""
    gate = threading.Event()
    reply = Reply.text("This answer never finishes.", chunks=6, gate=gate)
    scripted_llm.script(reply)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sema_rpc", "run", "--model", MODEL, "--cwd", str(workspace), "go"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **server_env},
        cwd=REPO,
    )
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        seen.append(json.loads(line))
        if seen[-1].get("method") == "message:text:chunk":
            break
    assert reply.at_gate.wait(10)
    return proc, gate, seen


def test_a_second_ctrl_c_quits_without_waiting_for_the_answer(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    proc, gate, seen = _start_gated_turn(server_env, scripted_llm, workspace)
    try:
        # Both signals before the loop can run the interrupt: the second one is a "quit".
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        rest, stderr = proc.communicate(timeout=30)
    finally:
        gate.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    # Whether the turn's answer made it out before the quit is a race; either way stdout
    # holds whole messages only, and the turn was asked to stop.
    for message in seen + jsonl(rest):
        assert message["jsonrpc"] == "2.0"
    assert "interrupting" in stderr
    assert "Traceback" not in stderr


def test_stdout_carries_only_the_output_stray_prints_and_logs_go_to_stderr(
    server_env, scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
):
    """A library on the server's side that prints, and the server's own debug logging,
    never reach the user's stdout: it stays one JSON message per line."""
    hook = tmp_path / "hook"
    hook.mkdir()
    # A stray print() the first time the engine is imported (on the server's side, at
    # session/create), from an import hook: nothing of ours is patched.
    (hook / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Stray:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'sema_rpc.engine.engine':\n"
        "            print('STRAY PRINT from a library')\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Stray())\n"
    )
    scripted_llm.script(Reply.text("Quiet answer.", chunks=3))
    env = {**server_env, "PYTHONPATH": os.pathsep.join([str(hook), str(REPO)])}
    proc = run(
        "--model", MODEL, "--cwd", str(workspace), "--log-level", "DEBUG", "hi", env=env
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    messages = jsonl(proc.stdout)  # every line parses
    assert messages[-1]["result"]["stopReason"] == "end_turn"
    assert "STRAY PRINT" not in proc.stdout and "STRAY PRINT from a library" in proc.stderr
    assert "DEBUG" in proc.stderr or "debug" in proc.stderr.lower()


def _imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if "import time:" in line
    }


def test_the_mcp_sdk_is_imported_only_for_a_session_with_an_mcp_server(tmp_path: Path):
    # MCP is part of every install; a run without an MCP server does not pay its import.
    env = {**own_home(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    args = ("--model", "replay/demo", "--format", "text", "What is in this project?")
    plain = run(*args, env=env)
    assert plain.returncode == 0, plain.stderr
    imported = _imported(plain.stderr)
    assert "sema_rpc.runner" in imported  # the log is this run's
    assert not {m for m in imported if m.split(".")[0] in ("mcp", "mcp_types")}

    root = Path(env["SEMA_ROOT"])
    root.mkdir(exist_ok=True)
    tiny = REPO / "tests" / "mcp" / "servers" / "tiny_server.py"  # an MCP server without the SDK
    server = {"command": sys.executable, "args": [str(tiny)]}
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"tiny": server}}))
    with_server = run(*args, env=env)
    assert with_server.returncode == 0, with_server.stderr
    assert "mcp" in _imported(with_server.stderr)


@pytest.mark.parametrize("output_format", ["jsonl", "text"])
def test_a_long_stream_with_big_messages_prints_every_delta_in_wire_order(
    output_format: str, server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    # Many deltas (thinking and text, non-ASCII, newlines) around a tool result far larger
    # than one pipe read: every message reaches the output whole, once, in the order sent.
    (workspace / "big.txt").write_text("".join(f"row {i} " + "x" * 60 + "\n" for i in range(1500)))
    answer = "".join(f"dé{i}\n" if i % 7 == 0 else f"w{i} " for i in range(3000)) + "end"
    scripted_llm.script(
        Reply.thinking("hmm " * 200, chunks=200, then=Reply.tools([("Read", {"file_path": "big.txt"})], text="Reading.")),
        Reply.text(answer, chunks=3000),
    )  # fmt: skip
    proc = run(
        "--format", output_format, "--yes", "--model", MODEL, "--cwd", str(workspace), "go",
        env=server_env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    if output_format == "text":
        assert proc.stdout == "Reading.\n" + answer + "\n"
        assert "→ Read" in proc.stderr
        return
    *events, result = jsonl(proc.stdout)
    assert result["result"]["stopReason"] == "end_turn"
    seqs = [m["params"]["seq"] for m in events]
    assert seqs == list(range(1, len(seqs) + 1)), "every notification once, in wire order"
    text = [m["params"]["delta"] for m in events if m["method"] == "message:text:chunk"]
    assert "".join(text) == "Reading." + answer
    thinking = [m["params"]["delta"] for m in events if m["method"] == "message:thinking:chunk"]
    assert "".join(thinking) == "hmm " * 200
    [done] = [m["params"] for m in events if m["method"] == "tool:execution:complete"]
    assert len(json.dumps(done)) > 1 << 16 and "row 1499 " in done["content"]
