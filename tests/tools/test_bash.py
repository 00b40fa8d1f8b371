import asyncio
import re
import time
from pathlib import Path

import anyio
import pytest

from sema_rpc.tools.base import PermissionAsk, ToolContext
from sema_rpc.tools.bash import BashTool, effective_timeout_ms

from ._helpers import args_of, pid_alive, run

tool = BashTool()


async def wait_dead(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        await anyio.sleep(0.05)
    return not pid_alive(pid)


async def test_output_cwd_and_stderr_merged(workspace: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, command="pwd; echo out; echo err >&2")
    assert not out.is_error
    assert out.content == f"{workspace}\nout\nerr"


async def test_exit_code_reported(ctx: ToolContext) -> None:
    out = await run(tool, ctx, command="echo partial; exit 3")
    assert out.content == "partial\n\nExit code: 3"
    out = await run(tool, ctx, command="true")
    assert out.content == "(no output)"


async def test_stdin_is_empty(ctx: ToolContext) -> None:
    out = await run(tool, ctx, command="cat; echo done")
    assert out.content == "done"


async def test_streams_updates_in_order(ctx: ToolContext) -> None:
    updates: list[tuple[float, str]] = []
    ctx.emit_update = lambda text: updates.append((time.monotonic(), text))
    started = time.monotonic()
    out = await run(tool, ctx, command="echo one; sleep 0.3; echo two; sleep 0.3; echo three")
    finished = time.monotonic()
    assert "".join(t for _, t in updates) == "one\ntwo\nthree\n"
    assert len(updates) >= 3
    assert updates[0][0] - started < finished - started - 0.4  # "one" arrived early
    assert out.content == "one\ntwo\nthree"


async def test_utf8_split_across_chunks(ctx: ToolContext) -> None:
    out = await run(tool, ctx, command=r"printf '\xc3'; sleep 0.1; printf '\xa9\n'")
    assert out.content == "é"


async def test_truncates_in_the_middle(ctx: ToolContext) -> None:
    command = (
        "head -c 20000 /dev/zero | tr '\\0' a; head -c 20000 /dev/zero | tr '\\0' b; echo; echo end"
    )
    out = await run(tool, ctx, command=command)
    assert out.content.startswith("a" * 15000 + "\n")
    assert out.content.endswith("b\nend")
    match = re.search(r"\.\.\. \[(\d+) characters truncated\] \.\.\.", out.content)
    assert match and int(match.group(1)) == 40005 - 30000
    assert len(out.content) < 30_100


async def test_timeout_kills_process_tree(ctx: ToolContext) -> None:
    started = time.monotonic()
    out = await run(tool, ctx, command="sleep 100 & echo $!; sleep 100", timeout=800)
    assert time.monotonic() - started < 5
    assert out.is_error and "timed out" in out.content
    pid = int(re.search(r"(\d+)\s*$", out.content).group(1))
    assert await wait_dead(pid)


async def test_timeout_escalates_to_sigkill(ctx: ToolContext) -> None:
    out = await run(
        tool,
        ctx,
        command="bash -c 'trap \"\" TERM; echo $$; sleep 100' & sleep 100",
        timeout=600,
    )
    assert out.is_error
    pid = int(re.search(r"(\d+)\s*$", out.content).group(1))
    assert await wait_dead(pid)


async def test_anyio_cancellation_kills_group_and_propagates(ctx: ToolContext) -> None:
    pids: list[int] = []
    ctx.emit_update = lambda text: pids.extend(int(p) for p in re.findall(r"\d+", text))
    args = args_of(tool, command="sleep 100 & echo $!; sleep 100")
    with anyio.move_on_after(0.5) as scope:
        await tool.call(args, ctx)
    assert scope.cancelled_caught  # the cancellation was not swallowed
    assert pids and await wait_dead(pids[0])


async def test_asyncio_task_cancel_kills_group(ctx: ToolContext) -> None:
    pids: list[int] = []
    started = asyncio.Event()

    def on_update(text: str) -> None:
        pids.extend(int(p) for p in re.findall(r"\d+", text))
        started.set()

    ctx.emit_update = on_update
    task = asyncio.create_task(tool.call(args_of(tool, command="sleep 100 & echo $!; wait"), ctx))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_dead(pids[0])


async def test_background_child_holding_pipe_is_killed(ctx: ToolContext) -> None:
    started = time.monotonic()
    out = await run(tool, ctx, command="sleep 100 & echo $!")
    assert time.monotonic() - started < 5
    pid = int(out.content.splitlines()[0])
    assert "background" in out.content
    assert await wait_dead(pid)


async def test_detached_background_process_survives(ctx: ToolContext, workspace: Path) -> None:
    out = await run(tool, ctx, command="sleep 30 > /dev/null 2>&1 & echo $!")
    pid = int(out.content)
    try:
        assert pid_alive(pid)
    finally:
        import os
        import signal

        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "command",
    [
        "curl https://example.com",
        "ls && wget http://x",
        "echo $(curl -s x)",
        "/usr/bin/nc -l 8080",
        "sudo ssh host",
        "bash -c 'scp a b:'",
        "find . | xargs -I {} curl {}",
    ],
)
async def test_network_commands_refused(ctx: ToolContext, command: str) -> None:
    refusal = await tool.validate_input(args_of(tool, command=command), ctx)
    assert refusal is not None and "network" in refusal


@pytest.mark.parametrize("command", ["echo curl is a word", "grep -r wget docs", "command -v curl"])
async def test_mentions_of_fetchers_are_fine(ctx: ToolContext, command: str) -> None:
    assert await tool.validate_input(args_of(tool, command=command), ctx) is None


async def test_cd_outside_refused(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "sub").mkdir()
    ok = ["cd sub && ls", "cd sub; cd ..", f"cd {workspace}/sub", "cd ."]
    bad = ["cd ..", "cd /tmp && ls", "cd sub && cd ../..", "cd", "cd ~root", "cd $HOME", "cd -"]
    for command in ok:
        assert await tool.validate_input(args_of(tool, command=command), ctx) is None, command
    for command in bad:
        refusal = await tool.validate_input(args_of(tool, command=command), ctx)
        assert refusal is not None and "cd" in refusal, command


async def test_permission_and_read_only(ctx: ToolContext) -> None:
    safe = args_of(tool, command="git status && ls -la | head")
    assert tool.permission(safe, ctx) is None
    assert tool.is_read_only(safe)
    risky = args_of(tool, command="git commit -m 'wip'")
    ask = tool.permission(risky, ctx)
    assert isinstance(ask, PermissionAsk)
    assert ask.title == "Bash: git commit -m 'wip'"
    assert ask.content == "git commit -m 'wip'"
    assert ask.rule == "Bash(git commit:*)"
    assert not tool.is_read_only(risky)
    assert BashTool.read_only is False


def test_timeout_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    assert effective_timeout_ms(None) == 60_000
    assert effective_timeout_ms(500_000) == 180_000
    monkeypatch.setenv("SEMA_BASH_MAX_TIMEOUT_MS", "1000")
    assert effective_timeout_ms(None) == 1000
    assert effective_timeout_ms(5000) == 1000
    monkeypatch.setenv("SEMA_BASH_MAX_TIMEOUT_MS", "junk")
    assert effective_timeout_ms(None) == 60_000


async def test_a_written_bare_repository_cannot_make_git_diff_run_a_program(
    workspace: Path, ctx: ToolContext
) -> None:
    """Files the model may write without asking (acceptEdits) that git would take for a
    bare repository: its `diff.external` must not run under the read-only `git diff`."""
    sub = workspace / "sub"
    for folder in ("objects", "refs"):
        (sub / folder).mkdir(parents=True)
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    marker = workspace / "pwned"
    (sub / "config").write_text(f'[diff]\n\texternal = "touch {marker}; true"\n')
    (sub / "x").write_text("a\n")
    (sub / "y").write_text("b\n")
    command = "cd sub && git diff --no-index x y"
    assert tool.permission(args_of(tool, command=command), ctx) is None  # read-only
    out = await run(tool, ctx, command=command)
    assert "-a" in out.content and "+b" in out.content
    assert not marker.exists()


async def test_the_server_keys_are_not_in_the_environment(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-for-the-model-123")
    monkeypatch.setenv("OPENAI_API_KEY", "not-for-the-model-456")
    out = await run(tool, ctx, command="env")
    assert "not-for-the-model" not in out.content and "PATH=" in out.content
