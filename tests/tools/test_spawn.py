"""The one spawn function: commands under the guardian, real processes (the process table
is the oracle), and the sandbox hook failing closed."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from sema_rpc.core.processes import SpawnError, spawn, supervisor

pytestmark = pytest.mark.asyncio


def _stat(pid: int) -> list[bytes]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rfind(b")") + 2 :].split()


async def _output(proc) -> bytes:
    chunks = [chunk async for chunk in proc.stdout]
    await proc.wait()
    await proc.aclose()
    return b"".join(chunks)


async def test_a_command_runs_in_its_own_session_with_its_cwd_and_env(tmp_path: Path) -> None:
    proc = await spawn(
        [
            "/bin/sh",
            "-c",
            'echo $$ $(cut -d" " -f6 /proc/$$/stat); pwd; echo "$GREETING"; echo err >&2; exit 3',
        ],
        cwd=tmp_path,
        env={"GREETING": "hello", "PATH": os.defpath},
    )
    first, rest = (await _output(proc)).split(b"\n", 1)
    assert first == f"{proc.pid} {proc.pid}".encode(), "it leads its own session"
    assert rest == f"{tmp_path}\nhello\nerr\n".encode()
    assert proc.returncode == 3


async def test_a_signal_death_is_reported_as_a_negative_status(tmp_path: Path) -> None:
    proc = await spawn(["/bin/sh", "-c", "kill -TERM $$"], cwd=tmp_path, env={})
    await _output(proc)
    assert proc.returncode == -signal.SIGTERM


async def test_an_orphan_is_reparented_to_the_guardian_not_init(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    proc = await spawn(
        ["/bin/sh", "-c", f"setsid sleep 30 >/dev/null 2>&1 & echo $! > {pid_file}"],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
    )
    await _output(proc)
    orphan = int(pid_file.read_text())
    try:
        guardian = supervisor()._guardian
        assert guardian is not None
        for _ in range(100):  # the shell has exited; reparenting is immediate, reading may lag
            if int(_stat(orphan)[1]) == guardian.pid:
                break
            await asyncio.sleep(0.02)
        assert int(_stat(orphan)[1]) == guardian.pid
    finally:
        os.kill(orphan, signal.SIGKILL)


async def test_a_missing_program_is_a_clear_error_and_nothing_runs(tmp_path: Path) -> None:
    with pytest.raises(SpawnError, match="no-such-program"):
        await spawn(["no-such-program"], cwd=tmp_path, env={"PATH": str(tmp_path)})


async def test_a_sandbox_policy_that_cannot_be_applied_fails_closed(tmp_path: Path) -> None:
    """Contract: with a policy, `sema_rpc.sandbox.apply_in_child` runs in the child before
    exec; when it cannot confine (here: a mode it does not know) the command does not run
    at all, and the error says why."""
    witness = tmp_path / "ran"
    with pytest.raises(SpawnError, match=r"sandbox could not be applied.*unknown sandbox mode"):
        await spawn(
            ["/bin/sh", "-c", f"touch {witness}"],
            cwd=tmp_path,
            env={},
            sandbox_policy={"mode": "no-such-mode", "workspace": str(tmp_path)},
        )
    assert not witness.exists()


async def test_a_command_starts_with_default_signal_dispositions(tmp_path: Path) -> None:
    """Nothing the guardian ignores is ignored in a command (SIG_IGN survives exec)."""
    proc = await spawn(["/bin/sh", "-c", "grep SigIgn /proc/$$/status"], cwd=tmp_path, env={})
    ignored = int((await _output(proc)).split()[1], 16)
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} is ignored in the command"


async def test_a_sandboxed_command_runs_from_a_server_started_anywhere(tmp_path: Path) -> None:
    """The guardian (`python -I -S`, no site hooks) finds the sandbox even when this
    package is importable only through an install's import hook, not from the server's
    current directory: a server started outside the checkout confines and runs commands."""
    import subprocess
    import sys

    from sema_rpc import sandbox

    if not sandbox.status()[0]:
        pytest.skip(f"no OS sandbox here: {sandbox.status()[1]}")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = (
        "import asyncio, os, sys\n"
        "from sema_rpc import sandbox\n"
        "from sema_rpc.core.processes import spawn\n"
        "async def main():\n"
        "    ws = sys.argv[1]\n"
        "    policy = dict(sandbox.policy('workspace-write', ws, ws))\n"
        "    proc = await spawn(['/bin/sh', '-c', 'echo in > inside; echo out > ../outside'],\n"
        "                       cwd=ws, env=dict(os.environ), sandbox_policy=policy)\n"
        "    out = b''.join([c async for c in proc.stdout])\n"
        "    print(await proc.wait(), out.decode(errors='replace'))\n"
        "asyncio.run(main())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(workspace)],
        cwd=tmp_path,  # not the checkout: `sema_rpc` is not importable from here
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "could not" not in done.stdout.lower(), done.stdout
    assert (workspace / "inside").read_text() == "in\n", "the command ran"
    assert not (tmp_path / "outside").exists(), "confined: no write outside the workspace"
