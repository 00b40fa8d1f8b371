"""The OS sandbox over the wire: the session's mode in `session:ready`, changing it,
and the consent it changes (per permission mode), on the real kernel."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.sandbox import status as sandbox_status
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

MODEL = "anthropic/claude-test"
AVAILABLE, WHY, _ = sandbox_status()
needs_sandbox = pytest.mark.skipif(not AVAILABLE, reason=f"no OS sandbox here: {WHY}")


class Editor:
    def __init__(self, *decisions: dict[str, Any]):
        self.decisions = list(decisions)
        self.asked: list[dict[str, Any]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> Any:
        assert method == "tool:permission:request"
        self.asked.append(params)
        return self.decisions.pop(0) if self.decisions else {"decision": "reject"}


async def start(
    env: dict[str, str], workspace: Path, editor: Editor | None, **params: Any
) -> tuple[WireClient, dict[str, Any]]:
    client = await WireClient(env=env, on_server_request=editor).start()
    await client.initialize(permissions=editor is not None)
    return client, await client.create_session(workspace, model=MODEL, **params)


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


@needs_sandbox
async def test_ready_says_the_mode_and_set_sandbox_changes_it(server_env, repo: Path) -> None:
    client, ready = await start(server_env, repo, None)
    sid = ready["sessionId"]
    assert ready["sandbox"] == {"mode": "workspace-write", "network": False, "available": True}
    [event] = client.events("session:ready", sid)
    assert event.params["sandbox"]["mode"] == "workspace-write"

    state = await client.call("session/setSandbox", {"sessionId": sid, "mode": "read-only"})
    assert state == {"mode": "read-only", "network": False, "available": True}
    [update] = client.events("sandbox:update", sid)
    assert update.params["mode"] == "read-only" and update.params["available"] is True

    with pytest.raises(RpcFailure) as bad:
        await client.call("session/setSandbox", {"sessionId": sid, "mode": "everything"})
    assert bad.value.code == -32602
    off, _ = await start(server_env, repo, None, sandbox="off")
    await off.close()
    await client.close()


@needs_sandbox
async def test_consent_per_permission_mode(
    server_env, scripted_llm: ScriptedLLM, repo: Path
) -> None:
    """30-command sessions are in bench/; here one command of each kind per mode."""
    commands = ["grep -rn TODO .", "touch made.txt", "mkdir -p build && touch build/o"]
    for permission_mode, expected in [
        ("default", ["touch made.txt", "mkdir -p build && touch build/o"]),
        ("acceptEdits", []),
        ("bypass", []),
    ]:
        editor = Editor(*[{"decision": "allow_once"}] * 3)
        client, ready = await start(server_env, repo, editor, permissionMode=permission_mode)
        scripted_llm.script(
            *[Reply.tools([("Bash", {"command": c})]) for c in commands], Reply.text("ok")
        )
        await client.call("session/prompt", {"sessionId": ready["sessionId"], "input": "go"})
        await client.close()
        assert [a["input"]["command"] for a in editor.asked] == expected, permission_mode
        assert (repo / "made.txt").exists() and (repo / "build" / "o").exists()
        (repo / "made.txt").unlink()


@needs_sandbox
async def test_leaving_the_sandbox_always_asks_and_always_means_that_prefix(
    server_env, scripted_llm: ScriptedLLM, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    editor = Editor({"decision": "allow_always"})
    client, ready = await start(server_env, repo, editor, permissionMode="bypass")
    sid = ready["sessionId"]
    scripted_llm.script(
        Reply.tools([("Bash", {"command": f"touch {outside}/a"})]),
        Reply.tools([("Bash", {"command": f"touch {outside}/b", "outside_sandbox": True})]),
        Reply.tools([("Bash", {"command": f"touch {outside}/b", "outside_sandbox": True})]),
        Reply.tools([("Bash", {"command": f"rm -f {outside}/b", "outside_sandbox": True})]),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    assert not (outside / "a").exists(), "bypass stays inside workspace-write"
    first = scripted_llm.requests[1].body["messages"][-1]["content"][0]["content"]
    first = first if isinstance(first, str) else "".join(c.get("text", "") for c in first)
    assert f"touch: cannot touch '{outside}/a': Permission denied" in first
    assert "[sandbox]" in first and "outside_sandbox: true" in first
    # The request names exactly what runs unconfined; "always" stored that prefix only.
    [asked, *more] = editor.asked
    assert f"touch {outside}/b" in asked["title"] and "outside the sandbox" in asked["title"]
    assert asked["alwaysRule"].startswith("BashOutsideSandbox(")
    assert [a["input"]["command"] for a in more] == [f"rm -f {outside}/b"]
    assert (outside / "b").exists(), "the second run was covered, the rm was refused"
    project_settings = list((Path(server_env["SEMA_ROOT"]) / "projects").glob("*/settings.json"))
    [settings] = project_settings
    assert json.loads(settings.read_text())["permissions"]["allow"] == [asked["alwaysRule"]]


@needs_sandbox
async def test_sandbox_off_is_today(server_env, scripted_llm: ScriptedLLM, repo: Path, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    client, ready = await start(server_env, repo, None, permissionMode="bypass", sandbox="off")
    assert ready["sandbox"]["mode"] == "off"
    scripted_llm.script(
        Reply.tools([("Bash", {"command": f"touch {outside}/a"})]), Reply.text("ok")
    )
    await client.call("session/prompt", {"sessionId": ready["sessionId"], "input": "go"})
    await client.close()
    assert (outside / "a").exists()


@needs_sandbox
async def test_the_private_temp_dir_is_the_commands_tmpdir_and_goes_with_the_session(
    server_env, scripted_llm: ScriptedLLM, repo: Path
) -> None:
    client, ready = await start(server_env, repo, None, permissionMode="bypass")
    sid = ready["sessionId"]
    scripted_llm.script(
        Reply.tools(
            [("Bash", {"command": 'echo "$TMPDIR" && touch "$TMPDIR/x" && ls -ld "$TMPDIR"'})]
        ),
        Reply.text("ok"),
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    [done] = client.events("tool:execution:complete", sid)
    temp, listing = done.params["content"].splitlines()[:2]
    assert Path(temp, "x").exists() and listing.startswith("drwx------")
    await client.call("session/dispose", {"sessionId": sid})
    await client.close()
    assert not Path(temp).exists()


async def test_without_a_sandbox_ready_says_why_and_nothing_changes(
    server_env, scripted_llm: ScriptedLLM, repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    env = {**server_env, "SEMA_SANDBOX": "0"}
    editor = Editor({"decision": "allow_once"})
    client, ready = await start(env, repo, editor, permissionMode="acceptEdits")
    sid = ready["sessionId"]
    assert ready["sandbox"] == {
        "mode": "off",
        "network": False,
        "available": False,
        "reason": "turned off by SEMA_SANDBOX=0 in the server's environment",
    }
    with pytest.raises(RpcFailure) as refused:
        await client.call("session/setSandbox", {"sessionId": sid, "mode": "workspace-write"})
    assert refused.value.code == -32602 and "SEMA_SANDBOX=0" in str(refused.value)
    scripted_llm.script(
        Reply.tools([("Bash", {"command": f"touch {outside}/a"})]), Reply.text("ok")
    )
    await client.call("session/prompt", {"sessionId": sid, "input": "go"})
    await client.close()
    assert [a["input"]["command"] for a in editor.asked] == [f"touch {outside}/a"], (
        "acceptEdits asks for a command, as without a sandbox"
    )
    assert (outside / "a").exists()
