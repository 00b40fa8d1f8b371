"""The suite's forked servers (`tests/support/server_forks.py`) behave as exec'd ones.

A forked server skips the interpreter's start and the imports the preloader did; these
tests hold it to what a test observes of an exec'd `python -m sema_rpc`: the same answers
and output, exit codes and signals, its own environment and working directory, and no
code path of the server that depends on a module being loaded taken differently.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server_forks import (
    PRELOAD,
    REPO,
    ForkedProcess,
    Preloader,
    run_server,
    spawn_server,
)


@pytest.fixture(autouse=True)
def forked_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests compare the two kinds: `SEMA_TEST_SERVERS=exec` must not make both exec'd."""
    monkeypatch.delenv("SEMA_TEST_SERVERS", raising=False)


_LOOKUP = re.compile(
    r"""sys\.modules\.get\(\s*["']([\w.]+)["']|["']([\w.]+)["']\s+in\s+sys\.modules"""
)


def test_the_preloader_loads_no_module_the_server_asks_about():
    """The server takes some paths only when a module is already loaded (`sys.modules`):
    a preloaded one would send every forked server down the other path."""
    asked = set()
    for source in (REPO / "sema_rpc").rglob("*.py"):
        for match in _LOOKUP.finditer(source.read_text()):
            asked.add(match.group(1) or match.group(2))
    assert {"sema_rpc.core.processes", "sema_rpc.providers.registry", "tempfile"} <= asked
    asked.discard("pydantic.plugin._loader")  # the server's own stand-in, put there first
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, json, sys\n"
            f"for name in {list(PRELOAD)!r}: importlib.import_module(name)\n"
            "print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    preloaded = set(json.loads(loaded.stdout))
    assert not asked & preloaded, "preloaded, yet the server checks whether it is loaded"
    for package in ("anyio", "pydantic", "pydantic_core", "mcp", "anthropic", "openai"):
        assert package not in preloaded


EXCHANGE = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
    {"jsonrpc": "2.0", "id": 2, "method": "model/list", "params": {}},
    {"jsonrpc": "2.0", "id": 3, "method": "no/such/method", "params": {}},
    {"jsonrpc": "2.0", "id": 4, "method": "shutdown"},
]


async def _answers(process: object) -> tuple[list[dict[str, object]], int]:
    stdin, stdout = process.stdin, process.stdout  # type: ignore[attr-defined]
    for message in EXCHANGE:
        stdin.write((json.dumps(message) + "\n").encode())
    await stdin.drain()
    answers = []
    while len(answers) < 4:
        line = await asyncio.wait_for(stdout.readline(), 20)
        assert line, "the server closed its stdout early"
        message = json.loads(line)
        if "id" in message:
            answers.append(message)
    stdin.close()
    code = await asyncio.wait_for(process.wait(), 20)  # type: ignore[attr-defined]
    return answers, code


async def test_a_forked_server_answers_as_an_exec_d_one(server_env: dict[str, str]):
    env = {**os.environ, **server_env, "PYTHONUNBUFFERED": "1"}
    forked = await spawn_server(["--jsonl"], env=env, limit=1 << 20)
    execd = await spawn_server(["--jsonl"], env=env, limit=1 << 20, fresh_interpreter=True)
    assert isinstance(forked, ForkedProcess) and not isinstance(execd, ForkedProcess)
    assert forked.pid != os.getpid() and forked.pid != execd.pid
    forked_answers, forked_code = await _answers(forked)
    execd_answers, execd_code = await _answers(execd)
    assert forked_answers == execd_answers
    assert forked_code == execd_code == 0
    assert forked.returncode == 0


def test_a_forked_server_has_the_environment_and_folder_it_was_given(
    server_env: dict[str, str], tmp_path: Path
):
    """`sema-rpc run` in a folder of the test's: its SEMA_ROOT is the test's (the session
    is stored there) and a relative `--cwd` resolves against the folder it was given."""
    (tmp_path / "project").mkdir()
    done = run_server(
        ["run", "--model", "replay/demo", "--cwd", "project", "--format", "text", "hi"],
        env={**os.environ, **server_env},
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert list(Path(server_env["SEMA_ROOT"]).rglob("*.jsonl")), "history under its SEMA_ROOT"


async def _serving(process: object) -> None:
    """Returns once the server's event loop answers (its signal handlers are in place)."""
    stdin, stdout = process.stdin, process.stdout  # type: ignore[attr-defined]
    for message in EXCHANGE[:2]:
        stdin.write((json.dumps(message) + "\n").encode())
    await stdin.drain()
    while json.loads(await asyncio.wait_for(stdout.readline(), 20)).get("id") != 2:
        pass


async def test_a_forked_server_stops_on_sigint_like_an_exec_d_one(server_env: dict[str, str]):
    env = {**os.environ, **server_env, "PYTHONUNBUFFERED": "1"}
    codes = []
    for fresh in (False, True):
        process = await spawn_server(["--jsonl"], env=env, limit=1 << 20, fresh_interpreter=fresh)
        await _serving(process)
        process.send_signal(signal.SIGINT)
        codes.append(await asyncio.wait_for(process.wait(), 20))
    assert codes[0] == codes[1] == 128 + signal.SIGINT


async def test_a_forked_server_dies_of_a_signal_like_an_exec_d_one(server_env: dict[str, str]):
    env = {**os.environ, **server_env, "PYTHONUNBUFFERED": "1"}
    for fresh in (False, True):
        process = await spawn_server(["--jsonl"], env=env, limit=1 << 20, fresh_interpreter=fresh)
        process.kill()
        assert await asyncio.wait_for(process.wait(), 20) == -signal.SIGKILL
        assert process.returncode == -signal.SIGKILL


async def test_a_preloader_that_dies_fails_what_waits_on_it_instead_of_hanging(
    server_env: dict[str, str],
):
    preloader = Preloader({**os.environ, "PYTHONUNBUFFERED": "1"})
    env = {**os.environ, **server_env, "PYTHONUNBUFFERED": "1"}
    try:
        server = await preloader.spawn(
            ["--jsonl"], env=env, cwd=REPO, new_session=False, limit=1 << 20, pipe_stderr=True
        )
        preloader._process.kill()
        with pytest.raises(RuntimeError, match="preloader is gone"):
            await asyncio.wait_for(server.wait(), 20)
        with pytest.raises(RuntimeError, match="preloader is gone"):
            await preloader.spawn(
                ["--jsonl"], env=env, cwd=REPO, new_session=False, limit=1 << 20, pipe_stderr=True
            )
        server.kill()  # the orphan, reparented when its preloader died
    finally:
        preloader.close()
