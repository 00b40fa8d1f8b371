"""Confinement over the wire: what a tool reads through symlinks, Bash writes into `.git/`,
and secrets in tool output and provider errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.sandbox import status as sandbox_status
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient

MODEL = "anthropic/claude-test"
SECRET = "TOP-SECRET-outside-the-workspace"


class Editor:
    """Answers every permission request with a reject carrying feedback (the turn goes on)
    and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> Any:
        assert method == "tool:permission:request"
        self.asked.append(params)
        return {"decision": "reject", "feedback": "not that"}


async def open_session(
    env: dict[str, str], workspace: Path, editor: Editor | None, **params: Any
) -> tuple[WireClient, str]:
    client = await WireClient(env=env, on_server_request=editor).start()
    await client.initialize(permissions=editor is not None)
    ready = await client.create_session(workspace, model=MODEL, **params)
    return client, ready["sessionId"]


def results_seen_by_model(llm: ScriptedLLM) -> list[str]:
    """Every tool result text in the last request the model received, in order."""
    seen: list[str] = []
    for message in llm.requests[-1].body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                inner = block["content"]
                seen.append(
                    inner if isinstance(inner, str) else "".join(c.get("text", "") for c in inner)
                )
    return seen


@pytest.fixture
def linked(workspace: Path, tmp_path: Path) -> Path:
    """The workspace with a file symlink and a folder symlink leading outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (workspace / "notes-link.txt").symlink_to(outside / "secret.txt")
    (workspace / "docs-link").symlink_to(outside, target_is_directory=True)
    (workspace / "inside.txt").write_text("nothing to see\n")
    return workspace


def _env_with_rg(server_env: dict[str, str], backend: str) -> dict[str, str]:
    env = {**server_env, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    if backend == "python":
        env["SEMA_GREP_BACKEND"] = "python"
    return env


@pytest.mark.parametrize("backend", ["ripgrep", "python"])
@pytest.mark.parametrize("mode", ["default", "bypass"])
async def test_grep_does_not_read_through_symlinks_leading_out(
    server_env, scripted_llm: ScriptedLLM, linked: Path, backend: str, mode: str
):
    env = _env_with_rg(server_env, backend)
    editor = Editor()
    client, sid = await open_session(env, linked, editor, permissionMode=mode)
    scripted_llm.script(
        Reply.tools([("Grep", {"pattern": "TOP-SECRET", "output_mode": "content"})]),
        Reply.tools([("Grep", {"pattern": "TOP-SECRET", "glob": "*.txt"})]),
        Reply.tools([("Grep", {"pattern": "TOP-SECRET", "path": "notes-link.txt"})]),
        Reply.text("done"),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "search"})
    await client.close()
    assert result["stopReason"] == "end_turn"
    walked, globbed, named = results_seen_by_model(scripted_llm)
    assert walked == "No matches found" and globbed == "No matches found"
    # Naming the link searches its target, which is outside: asked every time, in every mode.
    [asked] = editor.asked
    assert asked["toolName"] == "Grep" and "outside the workspace" in asked["title"]
    assert "not that" in named
    notified = json.dumps([r.message for r in client.received])
    assert SECRET not in notified and SECRET not in str([r.body for r in scripted_llm.requests])


LINK_FOLLOWING = [
    "grep -R TOP-SECRET .",
    "grep --dereference-recursive TOP-SECRET",
    "find -L . -name secret.txt",
    "find . -follow -name secret.txt",
    "rg -L TOP-SECRET",
    "du -aL .",
    "ls -lL .",
    "diff -r . ../outside",
    "cat *.txt",
    "head -n 5 docs-*/*",
    "grep -r TOP-SECRET *",
    "cat docs-link/secret.txt",
]


async def test_bash_commands_that_follow_links_out_are_asked(
    server_env, scripted_llm: ScriptedLLM, linked: Path
):
    editor = Editor()
    client, sid = await open_session(server_env, linked, editor)
    scripted_llm.script(
        *[Reply.tools([("Bash", {"command": c})]) for c in LINK_FOLLOWING],
        # Still read-only, never asked: links met while walking are not followed.
        Reply.tools([("Bash", {"command": "grep -rn TOP-SECRET ."})]),
        Reply.tools([("Bash", {"command": "find . -name '*.txt'"})]),
        Reply.tools([("Bash", {"command": "cat inside.txt src/*.py"})]),
        Reply.text("done"),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "look"})
    await client.close()
    assert result["stopReason"] == "end_turn"
    assert [a["input"]["command"] for a in editor.asked] == LINK_FOLLOWING
    grep_r, find, cat = results_seen_by_model(scripted_llm)[-3:]
    assert "(no output)" in grep_r or "Exit code: 1" in grep_r
    assert "inside.txt" in find and "secret.txt" not in find
    assert "nothing to see" in cat and "VALUE_0" in cat
    assert SECRET not in str([r.body for r in scripted_llm.requests])


async def test_plan_mode_refuses_link_following_commands(
    server_env, scripted_llm: ScriptedLLM, linked: Path
):
    editor = Editor()
    client, sid = await open_session(server_env, linked, editor, mode="Plan")
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "grep -R TOP-SECRET ."})]),
        Reply.tools([("Bash", {"command": "find -L . -type f"})]),
        Reply.text("done"),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "look"})
    await client.close()
    assert result["stopReason"] == "end_turn"
    assert editor.asked == []
    results = results_seen_by_model(scripted_llm)
    assert len(results) == 2, results  # the last request carries both commands' results
    assert all("not available in Plan mode" in r for r in results), results
    assert SECRET not in str([r.body for r in scripted_llm.requests])


GIT_WRITES = [
    "sort -o .git/config .git/config",
    "sed -i 's/bare = false/bare = false/' .git/config",
    "git diff --output=.git/hooks/pre-commit",
    "echo '[core] fsmonitor = touch pwned' >> .GIT/config",
    "cd .git && sed -i 's/x/y/' config",
    "sed -i 's/x/y/' .g?t/config",
    "git config core.fsmonitor 'touch pwned'",
]


async def test_bypass_asks_for_bash_writes_inside_dot_git(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = workspace / ".git" / "config"
    before = config.read_bytes()
    editor = Editor()
    client, sid = await open_session(
        server_env, workspace, editor, permissionMode="bypass", sandbox="off"
    )
    scripted_llm.script(
        *[Reply.tools([("Bash", {"command": c})]) for c in GIT_WRITES],
        # bypass still runs the rest without asking, git's own commands included
        Reply.tools([("Bash", {"command": "touch fine.txt && git add fine.txt"})]),
        Reply.tools([("Bash", {"command": "cat .git/HEAD"})]),
        Reply.text("done"),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    assert result["stopReason"] == "end_turn"
    assert [a["input"]["command"] for a in editor.asked] == GIT_WRITES
    for asked in editor.asked:
        assert "allow_always" not in asked["options"] and asked.get("alwaysRule") is None
    assert config.read_bytes() == before
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / "fine.txt").exists()
    assert "ref: refs/heads/" in results_seen_by_model(scripted_llm)[-1]

    # Without a client to ask, such a command is refused, not run.
    client2, sid2 = await open_session(
        server_env, workspace, None, permissionMode="bypass", sandbox="off"
    )
    scripted_llm.script(Reply.tools([("Bash", {"command": GIT_WRITES[0]})]), Reply.text("ok"))
    await client2.call("session/prompt", {"sessionId": sid2, "input": "go"})
    await client.close()
    await client2.close()
    assert config.read_bytes() == before
    assert "no one can be asked" in results_seen_by_model(scripted_llm)[-1]


@pytest.mark.skipif(not sandbox_status()[0], reason=f"no OS sandbox here: {sandbox_status()[1]}")
async def test_bypass_in_the_sandbox_runs_them_and_the_kernel_refuses(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    config = workspace / ".git" / "config"
    before = config.read_bytes()
    editor = Editor()
    client, sid = await open_session(server_env, workspace, editor, permissionMode="bypass")
    scripted_llm.script(
        *[Reply.tools([("Bash", {"command": c})]) for c in GIT_WRITES],
        Reply.tools([("Bash", {"command": "touch fine.txt"})]),
        Reply.text("done"),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    assert result["stopReason"] == "end_turn"
    assert editor.asked == [], "bypass: nothing asked, everything confined"
    assert config.read_bytes() == before
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / "fine.txt").exists()
    seen = results_seen_by_model(scripted_llm)
    assert "Read-only file system" in seen[0] and "[sandbox]" in seen[0]


ENV_KEY = "sk-ant-test-key-000000"  # the server's ANTHROPIC_API_KEY (server_env)
PROFILE_KEY = "profile-secret-abcdef123456"


async def test_secrets_in_tool_output_and_provider_errors_are_redacted(
    server_env, scripted_llm: ScriptedLLM, workspace: Path
):
    assert server_env["ANTHROPIC_API_KEY"] == ENV_KEY
    root = Path(server_env["SEMA_ROOT"])
    (root / "models.json").write_text(
        json.dumps(
            {
                "profiles": {
                    "mine": {
                        "provider": "anthropic",
                        "modelName": "claude-test",
                        "baseURL": scripted_llm.url,
                        "apiKey": PROFILE_KEY,
                    }
                }
            }
        )
    )
    (workspace / ".env").write_text(f"ANTHROPIC_API_KEY={ENV_KEY}\nMINE={PROFILE_KEY}\n")
    (workspace / "show.sh").write_text('read -r line < .env; echo "the key is ${line#*=}"\n')
    client = await WireClient(env=server_env).start()
    await client.initialize()
    ready = await client.create_session(workspace, model="mine", permissionMode="bypass")
    sid = ready["sessionId"]
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "cat .env"})]),
        # the output arrives in two pieces, cut inside the key
        Reply.tools([("Bash", {"command": "head -c 25 .env; sleep 0.3; tail -c +26 .env"})]),
        Reply.tools([("Bash", {"command": "bash show.sh"})]),
        Reply.tools([("Read", {"file_path": ".env"})]),
        Reply.tools([("Grep", {"pattern": "MINE", "output_mode": "content"})]),
        Reply.text("done"),
    )
    result = await client.call("session/prompt", {"sessionId": sid, "input": "show me"})
    assert result["stopReason"] == "end_turn"
    results = results_seen_by_model(scripted_llm)
    assert len(results) == 5 and all("[REDACTED]" in r for r in results), results
    assert "the key is [REDACTED]" in results[2]
    updates = "".join(
        r.params["delta"]
        for r in client.events("tool:execution:update", sid)
        if r.params["toolCallId"]
        == client.events("tool:execution:start", sid)[1].params["toolCallId"]
    )
    assert "ANTHROPIC_API_KEY=[REDACTED]" in updates

    # A provider error that echoes the key it was sent.
    scripted_llm.script(
        Reply.error(
            401,
            message=f"invalid x-api-key: {PROFILE_KEY}",
            error_type="authentication_error",
            retry_after_ms=None,
        )
    )
    failed = await client.call("session/prompt", {"sessionId": sid, "input": "again"})
    await client.close()
    assert failed["stopReason"] == "error"
    assert "invalid x-api-key: [REDACTED]" in failed["error"]["message"]
    [error] = client.events("session:error", sid)
    assert "[REDACTED]" in error.params["error"]["message"]

    history = (root / "history" / f"{sid}.jsonl").read_text()
    assert "[REDACTED]" in history
    seen_by_client = client.stdout.decode()
    for key in (ENV_KEY, PROFILE_KEY):
        assert key not in history
        assert key not in seen_by_client
        assert key not in str([r.body for r in scripted_llm.requests])
