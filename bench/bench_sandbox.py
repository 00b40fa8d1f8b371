"""The OS sandbox: consent requests asked, and the time it adds to a command.

1. Consent: one scripted session of 30 typical commands (tests, builds, greps, git, a
   formatter) run through a real server over the wire, per permission mode; an editor
   that allows every request counts them. Rows: the server without the sandbox (a
   baseline checkout given with `--before DIR`, and this one with `sandbox: off`) and
   with it (`workspace-write`, the default). Under the sandbox, a command whose result
   says the sandbox refused it is retried with `outside_sandbox: true` (as a model told
   so would): that retry is a request of its own and is counted.
2. Set-up time: the same command (`/bin/bash -c true`) started plainly and through the
   sandbox's spawn path (`python -I -S` applying the policy, then exec), alternated pair
   by pair; median, p99 and the paired ratio, per sandbox mode.

    .venv/bin/python bench/bench_sandbox.py [--before /path/to/baseline] [--pairs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    Checks,
    Reply,
    ScriptedLLM,
    WireClient,
    host_header,
    pct,
    print_table,
    round_sig,
    server_env,
)
from sema_client import SemaClient

from sema_rpc import sandbox

RUFF = str(Path(sys.executable).parent / "ruff")
COMMANDS = [
    "git status",
    "git diff",
    "git log --oneline -5",
    "ls -la",
    "grep -rn TODO src",
    "cat Makefile",
    "find . -name '*.py' -not -path './.git/*'",
    "wc -l src/app.py src/hello.c",
    f"{sys.executable} -m pytest -q -p no:cacheprovider tests",
    f"{sys.executable} -m pytest -q tests",
    "make",
    "make test",
    "mkdir -p build && gcc -o build/hello src/hello.c",
    "./build/hello",
    f"{RUFF} format src",
    f"{RUFF} check src",
    "sed -i 's/TODO/DONE/' src/app.py",
    "echo note >> notes.txt",
    "git add -A",
    "git commit -qm 'bench commit'",
    "git checkout -qb feature",
    "npm test --silent",
    "head -5 README.md",
    f"{sys.executable} src/app.py",
    "touch src/new.py",
    "cp src/app.py build/",
    "rm -rf build",
    "git diff --stat HEAD",
    "grep -c def src/app.py",
    "make clean",
]
assert len(COMMANDS) == 30


def make_workspace(root: Path) -> Path:
    ws = root / "project"
    (ws / "src").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "src" / "app.py").write_text("# TODO: more\ndef main():\n    print('hi')\n\n\nmain()\n")
    (ws / "src" / "hello.c").write_text(
        '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n'
    )
    (ws / "tests" / "test_app.py").write_text("def test_ok():\n    assert True\n")
    (ws / "README.md").write_text("# Project\n\nA bench project.\n")
    (ws / "package.json").write_text('{"name": "p", "scripts": {"test": "node -e 1"}}\n')
    (ws / "Makefile").write_text(
        "all: out/app.txt\n\nout/app.txt: src/app.py\n\tmkdir -p out && cp src/app.py out/app.txt\n\n"
        "test:\n\t$(PY) -m pytest -q -p no:cacheprovider tests\n\nclean:\n\trm -rf out\n".replace(
            "$(PY)", sys.executable
        )
    )
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-C", str(ws)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    return ws


class ServerAt(WireClient):
    """A WireClient whose server is another checkout's (`python -m sema_rpc` run there)."""

    python: str = sys.executable
    cwd: str = ""

    async def start(self) -> ServerAt:
        self.client = await SemaClient.spawn(
            [self.python, "-m", "sema_rpc", "--jsonl"],
            env={**self.env, "PYTHONUNBUFFERED": "1"},
            cwd=self.cwd,
            jsonl=True,
            new_session=False,
            stderr_callback=self.stderr.extend,
        )
        self.proc = self.client.process
        self.client.on_message(self._dispatch)
        from sema_client import DEFERRED

        from sema_rpc.protocol import SERVER_REQUESTS

        for method in SERVER_REQUESTS:
            self.client.on_request(method, lambda _params: DEFERRED)
        return self


async def one_session(
    llm: ScriptedLLM,
    root: Path,
    permission_mode: str,
    sandbox_mode: str | None,
    before: Path | None,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        tmpdir = Path(tmp)
        ws = make_workspace(tmpdir)
        asked: list[str] = []

        def editor(method: str, params: dict[str, Any]) -> Any:
            asked.append(params.get("title", ""))
            return {"decision": "allow_once"}

        env = {
            **server_env(llm, tmpdir / "sema-root"),
            "HOME": str(tmpdir / "home"),
            "PATH": os.environ["PATH"],
            **{
                f"GIT_{who}_{what}": v
                for who in ("AUTHOR", "COMMITTER")
                for what, v in (("NAME", "b"), ("EMAIL", "b@b"))
            },
        }
        (tmpdir / "home").mkdir()
        if before is not None:
            client: WireClient = ServerAt(env=env, on_server_request=editor)
            client.python = str(before / ".venv" / "bin" / "python")  # type: ignore[attr-defined]
            client.cwd = str(before)  # type: ignore[attr-defined]
        else:
            client = WireClient(env=env, on_server_request=editor)
        await client.start()
        retried = 0
        try:
            await client.initialize(permissions=True)
            params: dict[str, Any] = {
                "model": "anthropic/claude-bench",
                "permissionMode": permission_mode,
            }
            if sandbox_mode is not None:
                params["sandbox"] = sandbox_mode
            ready = await client.create_session(ws, **params)
            sid = ready["sessionId"]
            for command in COMMANDS:
                llm.script(Reply.tools([("Bash", {"command": command})]), Reply.text("ok"))
                await client.call(
                    "session/prompt", {"sessionId": sid, "input": "run it"}, timeout=120
                )
                result = _last_tool_result(llm)
                if "[sandbox]" in result:
                    retried += 1
                    llm.script(
                        Reply.tools([("Bash", {"command": command, "outside_sandbox": True})]),
                        Reply.text("ok"),
                    )
                    await client.call(
                        "session/prompt", {"sessionId": sid, "input": "rerun"}, timeout=120
                    )
        finally:
            await client.close()
        committed = subprocess.run(
            ["git", "-C", str(ws), "log", "--oneline"], capture_output=True, text=True
        ).stdout.count("\n")
        return {"asked": len(asked), "retried": retried, "commits": committed}


def _last_tool_result(llm: ScriptedLLM) -> str:
    for message in reversed(llm.requests[-1].body["messages"]):
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                inner = block["content"]
                return (
                    inner if isinstance(inner, str) else "".join(c.get("text", "") for c in inner)
                )
    return ""


async def setup_times(pairs: int, root: Path) -> list[list[Any]]:
    """`/bin/bash -c true` started, run and reaped the way the Bash tool does it (through
    the process supervisor's guardian, which applies the policy in the child right before
    exec), with the policy and without, alternated: the sandbox's own cost per command."""
    from sema_rpc.core.processes import spawn

    ws = make_workspace(root / "timing")
    temp = root / "timing-tmp"
    temp.mkdir()
    plain = ["/bin/bash", "-c", "true"]
    env = dict(os.environ)

    async def once(policy: dict[str, Any] | None) -> float:
        start = time.perf_counter()
        proc = await spawn(plain, cwd=ws, env=env, sandbox_policy=policy)
        code = await proc.wait()
        await proc.aclose()
        assert code == 0, f"exit {code}"
        return (time.perf_counter() - start) * 1000

    await once(None)  # the guardian starts with the first command
    rows = []
    for mode in ("read-only", "workspace-write"):
        policy = dict(sandbox.policy(mode, ws, temp, hidden=[root / "sema-root"]))
        a: list[float] = []
        b: list[float] = []
        for i in range(pairs + 5):
            order = ((policy, a), (None, b)) if i % 2 == 0 else ((None, b), (policy, a))
            for chosen, out in order:
                took = await once(chosen)
                if i >= 5:  # warm-up
                    out.append(took)
        ratios = [x / y for x, y in zip(a, b, strict=True)]
        added = [x - y for x, y in zip(a, b, strict=True)]
        rows.append(
            [
                mode,
                statistics.median(b),
                statistics.median(a),
                statistics.median(added),
                pct(added, 99),
                statistics.median(ratios),
            ]
        )
    return rows


async def main(args: argparse.Namespace) -> int:
    checks = Checks()
    summary: dict[str, Any] = {"host": host_header()}
    available, why, abi = sandbox.status()
    print(f"sandbox: Landlock ABI {abi}" if available else f"sandbox: unavailable: {why}")
    if not available:
        return checks.finish(summary)
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        root = Path(tmp)
        rows = []
        variants: list[tuple[str, str | None, Path | None]] = []
        if args.before:
            variants.append(("before (baseline checkout)", None, Path(args.before)))
        variants += [("after, sandbox off", "off", None), ("after, workspace-write", None, None)]
        with ScriptedLLM() as llm:
            for label, mode, before in variants if not args.timing_only else []:
                row: list[Any] = [label]
                for permission_mode in ("default", "acceptEdits", "bypass"):
                    got = await one_session(llm, root, permission_mode, mode, before)
                    row.append(
                        f"{got['asked']} ({got['retried']} reruns)"
                        if mode is None and before is None
                        else got["asked"]
                    )
                    summary[f"{label}/{permission_mode}"] = got
                    checks.check(
                        got["commits"] >= 2, f"{label}/{permission_mode}: the commit was made"
                    )
                rows.append(row)
        if rows:
            print_table(
                f"consent requests asked in one session of {len(COMMANDS)} commands "
                "(editor allows all)",
                ["server", "default", "acceptEdits", "bypass"],
                rows,
            )
        timing = await setup_times(args.pairs, root)
        print_table(
            f"`/bin/bash -c true` plain vs in the sandbox, {args.pairs} alternated pairs (ms)",
            ["mode", "plain median", "sandboxed median", "added median", "added p99", "ratio"],
            timing,
        )
        for mode, plain, boxed, added, p99, ratio in timing:
            summary[f"setup/{mode}"] = {
                "plain_ms": round_sig(plain),
                "sandboxed_ms": round_sig(boxed),
                "added_median_ms": round_sig(added),
                "added_p99_ms": round_sig(p99),
                "ratio": round_sig(ratio),
            }
    return checks.finish(summary)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a baseline checkout with its .venv (no sandbox)")
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--timing-only", action="store_true", help="only the set-up time")
    shutil.which("gcc") or sys.exit("gcc is needed")
    sys.exit(asyncio.run(main(parser.parse_args())))
