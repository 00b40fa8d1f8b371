"""`sema-rpc --acp` driven by a real headless ACP client: the npm `acpx` CLI (installed
with the Node it needs into a cache outside the repository by
tests/support/setup_acpx.sh), each command a fresh `acpx` process that spawns the agent
over real pipes, against the scripted model server."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_client import REPO
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.asyncio


@pytest.fixture(scope="module")
def acpx_bin() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm is missing: acpx cannot be installed")
    # A cache that survives between runs (the suite's HOME is a new temporary folder),
    # as the VS Code e2e set-up keeps its own; nothing of sema's goes there.
    cache = os.environ.get("SEMA_ACPX_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache")
        / "sema-acpx"
    )
    setup = subprocess.run(
        [str(REPO / "tests" / "support" / "setup_acpx.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "SEMA_ACPX_CACHE": cache},
    )
    assert setup.returncode == 0, setup.stderr[-2000:]
    return Path(setup.stdout.strip()) / "bin"


class Acpx:
    """`acpx --agent "sema-rpc --acp"` in one workspace, with a marker in the environment
    of every process it starts (so the test can see them all gone)."""

    def __init__(self, bin_dir: Path, env: dict[str, str], workspace: Path):
        self.marker = f"sema-acpx-test-{uuid.uuid4().hex}"
        self.env = {
            **os.environ,
            **env,
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "SEMA_TEST_MARKER": self.marker,
        }
        self.base = [
            str(bin_dir / "acpx"),
            "--agent",
            f"{sys.executable} -m sema_rpc --acp",
            "--cwd",
            str(workspace),
            "--ttl",
            "5",  # the queue owner outlives one command: the next one uses it
            "--format",
            "json",
            "--timeout",
            "60",
        ]
        self.workspace = workspace

    def command(self, *args: str, options: tuple[str, ...] = ()) -> list[str]:
        return [*self.base[:1], *options, *self.base[1:], *args]

    async def run(
        self, *args: str, options: tuple[str, ...] = ()
    ) -> tuple[int, list[dict[str, Any]], str]:
        proc = await asyncio.create_subprocess_exec(
            *self.command(*args, options=options),
            env=self.env,
            cwd=str(self.workspace),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode is not None
        return proc.returncode, wire(out), err.decode(errors="replace")

    def processes(self) -> list[int]:
        """Live processes started for this test (acpx, its queue owner, the agent)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if self.marker.encode() in (entry / "environ").read_bytes():
                    stat = (entry / "stat").read_text()
                    if stat[stat.rfind(")") + 2] != "Z":
                        found.append(int(entry.name))
            except OSError:
                continue
        return found


def wire(out: bytes) -> list[dict[str, Any]]:
    messages = []
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("{"):
            messages.append(json.loads(line))
    return messages


def methods(messages: list[dict[str, Any]]) -> list[str]:
    return [m["method"] for m in messages if "method" in m and "id" in m]


def text_of(messages: list[dict[str, Any]]) -> str:
    return "".join(
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def stop_reasons(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["result"]["stopReason"]
        for m in messages
        if isinstance(m.get("result"), dict) and "stopReason" in m["result"]
    ]


async def test_acpx_prompt_permission_cancel_and_a_resumed_named_session(
    acpx_bin: Path, server_env, scripted_llm: ScriptedLLM, workspace
):
    gate = threading.Event()
    slow = Reply.text("a long answer that is cut short", chunks=6, gate=gate)
    scripted_llm.script(
        Reply.text("Hi from sema."),
        Reply.tools([("Write", {"file_path": str(workspace / "yes.txt"), "content": "y\n"})]),
        Reply.text("Wrote it."),
        Reply.tools([("Write", {"file_path": str(workspace / "no.txt"), "content": "n\n"})]),
        slow,
        Reply.text("Back again."),
    )
    acpx = Acpx(acpx_bin, server_env, workspace)
    try:
        code, out, err = await acpx.run("sessions", "new", "--name", "work")
        assert code == 0, err
        created = next(m for m in out if m.get("action") == "session_ensured")
        sid = created["acpxSessionId"]

        # one prompt, in a new agent process: the session acpx was handed is resumed
        code, out, err = await acpx.run("prompt", "-s", "work", "hello")
        assert code == 0, err
        assert "session/new" not in methods(out)
        assert {"session/load", "session/resume"} & set(methods(out))
        assert text_of(out) == "Hi from sema."
        assert stop_reasons(out) == ["end_turn"]

        # a permission: approved runs, denied does not
        code, out, err = await acpx.run("prompt", "-s", "work", "write", options=("--approve-all",))
        assert code == 0, (err, out)
        assert (workspace / "yes.txt").read_text() == "y\n"
        asked = [m for m in out if m.get("method") == "session/request_permission"]
        assert asked and asked[0]["params"]["toolCall"]["status"] == "pending"
        code, out, err = await acpx.run("prompt", "-s", "work", "write", options=("--deny-all",))
        assert not (workspace / "no.txt").exists()
        assert [m for m in out if m.get("method") == "session/request_permission"]

        # a cancel, from a second acpx while the first waits on the model
        running = asyncio.ensure_future(acpx.run("prompt", "-s", "work", "talk at length"))
        assert await asyncio.to_thread(slow.at_gate.wait, 60)
        code, _out, err = await acpx.run("cancel", "-s", "work")
        assert code == 0, err
        code, out, err = await asyncio.wait_for(running, 60)
        gate.set()
        assert stop_reasons(out) == ["cancelled"], err

        # the named session, resumed once every agent process has gone
        for _ in range(200):
            if not acpx.processes():
                break
            await asyncio.sleep(0.1)
        assert acpx.processes() == [], "the queue owner and the agent ended"
        code, out, err = await acpx.run("prompt", "-s", "work", "are you back?")
        assert code == 0, err
        assert text_of(out) == "Back again."
        sent = json.dumps(scripted_llm.requests[-1].body)
        assert "hello" in sent and "Hi from sema." in sent, "the conversation was resumed"
        sessions_on_disk = list((Path(server_env["SEMA_ROOT"]) / "history").glob("*.jsonl"))
        assert [p.stem for p in sessions_on_disk] == [sid], "one session throughout"
    finally:
        gate.set()
        for _ in range(200):
            if not acpx.processes():
                break
            await asyncio.sleep(0.1)
        leftover = acpx.processes()
        for pid in leftover:
            os.kill(pid, 9)
        assert leftover == [], "every process acpx and the agent started ended"
