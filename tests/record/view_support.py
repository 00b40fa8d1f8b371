"""A real session to render: recorded with `--record` against the scripted model server,
with thinking, a read-only tool, a Bash call that needs consent (its output carries a
`<script>`), a mode change and a second prompt. Returns the run folder and the history
file the server wrote for the same session."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import REPO, WireClient

INJECTED = "<script>window.__pwned = 1</script>"
ANSWER = "The README says it is a tiny project."
THINKING = "The user wants an overview; read the README first."


async def record_session(
    server_env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path
) -> tuple[Path, Path]:
    record_root = tmp_path / "records"
    scripted_llm.script(
        Reply.turn(
            thinking=THINKING,
            text="Checking the files.",
            tools=[
                ("Read", {"file_path": "README.md"}),
                ("Bash", {"command": f"touch marker && sleep 0.2 && echo '{INJECTED}'"}),
            ],
        ),
        Reply.text(ANSWER, chunks=5),
        Reply.text("Planning now.", chunks=2),
    )

    def allow(method: str, params: dict) -> dict:
        return {"decision": "allow_once"}

    async with WireClient(
        env=server_env, extra_args=["--record", str(record_root)], on_server_request=allow
    ) as client:
        await client.initialize(permissions=True)
        ready = await client.create_session(workspace, model="anthropic/claude-test")
        sid = ready["sessionId"]
        result = await client.call("session/prompt", {"sessionId": sid, "input": "What is this?"})
        assert result["stopReason"] == "end_turn"
        await client.call("mode/update", {"sessionId": sid, "mode": "Plan"})
        result = await client.call("session/prompt", {"sessionId": sid, "input": "Plan it."})
        assert result["stopReason"] == "end_turn"
    [run_dir] = list(record_root.iterdir())
    history = Path(server_env["SEMA_ROOT"]) / "history" / f"{sid}.jsonl"
    assert history.is_file()
    return run_dir, history


async def run_view(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`sema-rpc view ARGS` as a user runs it: exit code and stderr."""
    import asyncio
    import os

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sema_rpc",
        "view",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(REPO),
        env={**os.environ, **(env or {})},
    )
    _, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, err.decode()
