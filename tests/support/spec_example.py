"""The "Example exchange" of protocol/README.md, captured from the current build.

    python -m tests.support.spec_example            # print the captured blocks
    python -m tests.support.spec_example --write    # rewrite them in protocol/README.md (`make spec`)

Each block follows a marker line `<!-- captured: NAME -->` in the README; everything else
in the section is prose written by hand. A block is a real `sema-rpc --jsonl` subprocess
driven over its pipes (HOME and SEMA_ROOT in a temporary directory): `main` plays the
bundled `replay/demo` recording, `permission` uses the scripted model server, `errors`
sends malformed input. The lines are then made readable and stable: session ids, message
ids, temporary paths and the package's install path are replaced by fixed stand-ins, long
strings and lists are cut with `…`, and a run of text chunks keeps its first two (a line
`   … N more message:text:chunk` stands for the rest). Every shown message is still valid
JSON. tests/e2e/test_spec_example.py fails when the README and the build disagree.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
README = REPO / "protocol" / "README.md"
DATA_DIR = REPO / "sema_rpc" / "data"
PROJECT = "/home/me/project"
SESSION_STANDINS = ["9f2c…", "7a1d…", "c04e…"]
MAX_STRING = 72
MAX_LIST = 3
KEEP_CHUNKS = 2

Line = tuple[str, Any]  # ("→" | "←", message) or ("…", marker text)


class _Server:
    """`python -m sema_rpc --jsonl` over pipes; every line in and out is kept in order."""

    def __init__(self, env: dict[str, str], cwd: Path):
        self.env, self.cwd = env, cwd
        self.lines: list[tuple[str, bytes]] = []
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> _Server:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sema_rpc", "--jsonl",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=self.env, cwd=self.cwd,
        )  # fmt: skip
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()

    async def send(self, raw: bytes | dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        data = raw if isinstance(raw, bytes) else json.dumps(raw, separators=(",", ":")).encode()
        self.lines.append(("→", data))
        self.proc.stdin.write(data + b"\n")
        await self.proc.stdin.drain()

    async def read(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        if not line:
            raise RuntimeError("sema-rpc closed its output")
        self.lines.append(("←", line.rstrip(b"\n")))
        return json.loads(line)  # type: ignore[no-any-return]

    async def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message = await self.read()
            if done(message):
                return message

    async def call(self, msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await self.until(lambda m: m.get("id") == msg_id and "method" not in m)


def _env(root: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    (root / "home").mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "SEMA_")) and k not in ("HOME",)
    }
    env.update(HOME=str(root / "home"), SEMA_ROOT=str(root / "sema-root"))
    env.update(extra or {})
    return env


def _initialize(client: str) -> dict[str, Any]:
    return {
        "protocolVersion": 1,
        "clientInfo": {"name": client},
        "capabilities": {"permissions": True},
    }


async def _main_block(root: Path) -> tuple[list[tuple[str, bytes]], Path]:
    workspace = root / "project"
    shutil.copytree(DATA_DIR / "demo-workspace", workspace)
    async with _Server(_env(root), root) as server:
        await server.call(1, "initialize", _initialize("my-editor"))
        params = {"workingDir": str(workspace), "model": "replay/demo"}
        ready = await server.call(2, "session/create", params)
        sid = ready["result"]["sessionId"]
        await server.call(
            3, "session/prompt", {"sessionId": sid, "input": "What is in this project?"}
        )
        await server.call(4, "shutdown", {})
        await server.send({"jsonrpc": "2.0", "method": "exit"})
    return server.lines, workspace


async def _permission_block(root: Path) -> tuple[list[tuple[str, bytes]], Path]:
    from tests.support.scripted_llm import Reply, ScriptedLLM

    workspace = root / "project"
    workspace.mkdir()
    with ScriptedLLM() as llm:
        llm.script(
            Reply.tools([("Bash", {"command": "mkdir build"}, "toolu_01")], text="Creating it."),
            Reply.text("Done: `build/` exists.", chunks=2),
        )
        env = _env(root, {"ANTHROPIC_API_KEY": "sk-example", "ANTHROPIC_BASE_URL": llm.url})
        async with _Server(env, root) as server:
            await server.call(1, "initialize", _initialize("my-editor"))
            params = {"workingDir": str(workspace), "model": "anthropic/claude-sonnet-4-5"}
            ready = await server.call(2, "session/create", params)
            sid = ready["result"]["sessionId"]
            start = len(server.lines)
            await server.send(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "session/prompt",
                    "params": {"sessionId": sid, "input": "make a build folder"},
                }
            )
            request = await server.until(lambda m: m.get("method") == "tool:permission:request")
            await server.send(
                {"jsonrpc": "2.0", "id": request["id"], "result": {"decision": "allow_once"}}
            )
            await server.until(lambda m: m.get("method") == "tool:execution:complete")
            shown = [
                line
                for line in server.lines[start:]
                if line[0] == "→"
                or json.loads(line[1]).get("method")
                in ("tool:permission:request", "tool:execution:complete")
            ]
            await server.until(lambda m: m.get("id") == 3)
    return shown, workspace


async def _errors_block(root: Path) -> tuple[list[tuple[str, bytes]], Path]:
    async with _Server(_env(root), root) as server:
        await server.send(b"this is not json")
        await server.read()
        await server.call(2, "session/create", {"workingDir": "project"})
        await server.call(3, "session/prompt", {"sessionId": 5})
        await server.call(4, "session/interrupt", {"sessionId": "x"})
    return server.lines, root / "project"


BLOCKS = {"main": _main_block, "permission": _permission_block, "errors": _errors_block}


# ---- making the lines readable -------------------------------------------------------


def _shorten(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[: MAX_STRING - 1] + "…"
    if isinstance(value, list):
        items = [_shorten(v) for v in value[:MAX_LIST]]
        return [*items, "…"] if len(value) > MAX_LIST else items
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    return value


def _stand_ins(text: str, workspace: Path, sessions: dict[str, str]) -> str:
    for path in {str(workspace), str(workspace.resolve())}:
        text = text.replace(json.dumps(path)[1:-1], PROJECT)
    text = text.replace(json.dumps(str(DATA_DIR))[1:-1], "<sema_rpc>/data")

    def session(match: re.Match[str]) -> str:
        sid = match.group(0)
        if sid not in sessions:
            sessions[sid] = SESSION_STANDINS[len(sessions) % len(SESSION_STANDINS)]
        return sessions[sid]

    text = re.sub(r"\b[0-9a-f]{32}\b", session, text)

    def message(match: re.Match[str]) -> str:  # fresh in every run: numbered stand-ins
        mid = match.group(0)
        if mid not in sessions:
            sessions[mid] = f"m_{sum(k.startswith('m_') for k in sessions) + 1:02d}…"
        return sessions[mid]

    return re.sub(r"\bm_[0-9a-f]{12}\b", message, text)


def _in_call_order(messages: list[Line]) -> list[Line]:
    """Concurrent read-only tools finish in any order: a run of consecutive
    `tool:execution:complete` is shown in the order the calls started (one of the orders
    the wire can show), with the run's seq numbers kept ascending."""
    started: list[str] = []
    out: list[Line] = []
    i = 0
    while i < len(messages):
        message = messages[i][1]
        method = message.get("method") if isinstance(message, dict) else None
        if method == "tool:execution:start":
            started.append(message["params"]["toolCallId"])
        if method != "tool:execution:complete":
            out.append(messages[i])
            i += 1
            continue
        run = []
        while i < len(messages) and isinstance(messages[i][1], dict):
            if messages[i][1].get("method") != "tool:execution:complete":
                break
            run.append(messages[i][1])
            i += 1
        seqs = sorted(m["params"]["seq"] for m in run)
        order = {tid: n for n, tid in enumerate(started)}
        run.sort(key=lambda m: order.get(m["params"]["toolCallId"], len(order)))
        for m, seq in zip(run, seqs, strict=True):
            m["params"]["seq"] = seq
            out.append(("←", m))
    return out


def render(lines: list[tuple[str, bytes]], workspace: Path) -> str:
    sessions: dict[str, str] = {}
    messages: list[Line] = []
    for direction, raw in lines:
        text = _stand_ins(raw.decode("utf-8"), workspace, sessions)
        try:
            messages.append((direction, json.loads(text)))
        except json.JSONDecodeError:
            messages.append((direction, text))
    shown: list[Line] = []
    chunks = 0
    for direction, message in _in_call_order(messages):
        if isinstance(message, str):
            shown.append((direction, message))
            continue
        if isinstance(message, dict) and message.get("method") == "message:text:chunk":
            chunks += 1
            if chunks > KEEP_CHUNKS:
                continue
        elif chunks:
            if chunks > KEEP_CHUNKS:
                n = chunks - KEEP_CHUNKS
                shown.append(("…", f"{n} more message:text:chunk"))
            chunks = 0
        # Error messages are shown whole: they are what a client author looks for.
        shown.append((direction, message if "error" in message else _shorten(message)))
    out = []
    for direction, message in shown:
        if direction == "…":
            out.append(f"   … {message}")
        elif isinstance(message, str):
            out.append(f"{direction} {message}")
        else:
            body = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
            out.append(f"{direction} {body}")
    return "\n".join(out)


async def capture(name: str) -> str:
    with tempfile.TemporaryDirectory(prefix="sema-spec-") as tmp:
        lines, workspace = await BLOCKS[name](Path(tmp))
        return render(lines, workspace)


async def capture_all() -> dict[str, str]:
    return {name: await capture(name) for name in BLOCKS}


# ---- the README ----------------------------------------------------------------------

_BLOCK = re.compile(r"(^<!-- captured: (\w+) -->\n```\n)(.*?)(^```$)", re.S | re.M)


def readme_blocks(text: str) -> dict[str, str]:
    return {m.group(2): m.group(3).removesuffix("\n") for m in _BLOCK.finditer(text)}


def rewrite(text: str, blocks: dict[str, str]) -> str:
    def block(m: re.Match[str]) -> str:
        body = blocks[m.group(2)] + "\n" if m.group(2) in blocks else m.group(3)
        return m.group(1) + body + m.group(4)

    return _BLOCK.sub(block, text)


def main(argv: list[str]) -> int:
    blocks = asyncio.run(capture_all())
    if "--write" not in argv:
        for name, block in blocks.items():
            print(f"<!-- captured: {name} -->\n```\n{block}\n```\n")
        return 0
    text = README.read_text(encoding="utf-8")
    missing = sorted(set(blocks) - set(readme_blocks(text)))
    if missing:
        print(f"{README}: no `<!-- captured: NAME -->` block for {', '.join(missing)}")
        return 1
    README.write_text(rewrite(text, blocks), encoding="utf-8")
    print(f"rewrote {len(blocks)} captured blocks in {README.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
