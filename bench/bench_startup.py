"""Cold start and first token: `sema-rpc run` against the peers, and our own latencies.

Prints ONE table. Rows:

- the peers' comparison: the same scripted model server (`bench/agent_llm.py`) and the
  same one-shot headless runs for Claude Code, pi and Codex (when installed under
  `--peers`, default /tmp/peers: `npm install @anthropic-ai/claude-code
  @mariozechner/pi-coding-agent @openai/codex` there; "not installed" otherwise) and for
  `sema-rpc run --yes`. Scenarios: `hi` (one short answer), `reads8` (8 file reads, then
  200 text chunks), `stream20k` (20,000 text deltas). Medians of N runs of wall time,
  CPU (user + system of the process and its waited-for children, from `os.wait4`) and
  peak RSS (the largest single process, `ru_maxrss`); each peer's ratio is its median
  wall / ours (> 1: we are faster).
- our own latencies over the wire (tests/support/wire_client.py): spawn → `initialize`
  answered (median of fresh servers, Content-Length framing); the first prompt of a new
  server whose `session/create` came 1 s earlier vs a warm server's prompt, right after
  another and 1 s after the last (medians);
  a 20,000-delta stream's notifications/s measured at the client (best of 2); and the
  per-turn cost with 10 vs 10,000 messages of history (bench_history's engine measure).

Each `sema` figure is taken in both bytecode states, labelled: "no pyc" =
PYTHONDONTWRITEBYTECODE=1 with no cached bytecode for our own modules (every start
compiles them); "pyc" = the variable unset and everything compiled ahead (`compileall`)
into a temporary PYTHONPYCACHEPREFIX, as on a machine where pip compiled the install.
Nothing is written into the repository. The per-turn row runs in this process and does
not depend on the bytecode state.

Run: `.venv/bin/python bench/bench_startup.py` (`--quick`: fewer runs; `--only first
--servers N`: only the first / warm prompt row, N fresh servers per bytecode state).

`--imports` (what `make bench` runs): the import-time budget of the one-shot path
instead, then `hi` side by side with Codex and Claude Code when installed (`--pairs N`
runs each in turn, default 5: the median of the pairs' sema/peer wall ratios). `sema-rpc run --yes` answers `hi` from the scripted model server under
`python -X importtime`, N times ("pyc" state); per module the median self and
cumulative ms, the top modules by self time with the share of the whole, and the
modules that joined or left the path against `bench/one_shot_modules.txt` (the list as
of the last `--imports --write`, with each module's self ms then). A module that joins
the path is start-up time every `run` pays from then on: load it where it is used.
(`-X importtime` does not see a module loaded with `importlib.import_module`; the
tests in tests/e2e/test_startup_imports.py read `sys.modules` and do.)

`--initialize --against PYTHON` (`--pairs N`, default 15): spawn → `initialize` answered,
in each dialect (Content-Length, `--jsonl`, `--acp`), for `python -m sema_rpc` of this
interpreter (A) and of PYTHON (B: another checkout's venv, the baseline), fresh servers
in turn (A B, B A, …), from the start of the process to the last byte of the answer
read; medians of A, B and of the pairs' A/B ratios. The servers run in a temporary
folder (so `-m` imports each venv's own install, never this checkout by its cwd) with a
temporary HOME and SEMA_ROOT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
    REPO,
    Reply,
    ScriptedLLM,
    WireClient,
    close_client,
    host_header,
    print_table,
    server_env,
)

HERE = Path(__file__).resolve().parent
AGENTS = ("claude", "pi", "codex", "sema")
PEER_BINS = {"claude": "claude", "pi": "pi", "codex": "codex"}
PROMPT = "do the task"


# --------------------------------------------------------------------------- bytecode


class Bytecode:
    """The two bytecode states a `sema` figure is taken in (see the module docstring)."""

    def __init__(self, tmp: Path):
        self.prefix = tmp / "pycache"
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "sema_rpc", "clients/python/sema_client"],
            cwd=REPO,
            env={**_without_bytecode_vars(), "PYTHONPYCACHEPREFIX": str(self.prefix)},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        stray = [p for p in (REPO / "sema_rpc").rglob("__pycache__")]
        self.no_pyc_clean = not stray
        """False if the checkout has its own __pycache__ (then "no pyc" is not quite)."""

    def env(self, state: str) -> dict[str, str]:
        """Variables to set for a process in `state` ("pyc" / "no pyc"); the caller's
        PYTHONDONTWRITEBYTECODE / PYTHONPYCACHEPREFIX are replaced."""
        if state == "pyc":
            return {"PYTHONPYCACHEPREFIX": str(self.prefix)}
        return {"PYTHONDONTWRITEBYTECODE": "1"}


def _without_bytecode_vars(env: dict[str, str] | None = None) -> dict[str, str]:
    base = dict(os.environ if env is None else env)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base.pop("PYTHONPYCACHEPREFIX", None)
    return base


# --------------------------------------------------------------------------- peers


def measure(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict[str, Any]:
    """One run: wall s, CPU s (process + waited-for children), peak RSS MiB, exit code."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.005)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak": usage.ru_maxrss / 1024,
        "exit": proc.returncode,
    }


def agent_command(
    name: str, port: int, peers: Path, homes: Path, sema_env: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """argv and environment of one headless run of `name` against 127.0.0.1:port."""
    home = homes / name
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    bin_dir = peers / "node_modules" / ".bin"
    if name == "claude":
        env.update(
            HOME=str(home), IS_SANDBOX="1", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
            ANTHROPIC_API_KEY="sk-fake", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_TELEMETRY="1",
        )  # fmt: skip
        argv = [str(bin_dir / "claude"), "-p", PROMPT, "--output-format", "stream-json",
                "--verbose", "--include-partial-messages", "--dangerously-skip-permissions",
                "--model", "claude-sonnet-4-5"]  # fmt: skip
    elif name == "pi":
        agent_dir = home / ".pi" / "agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        models = {"providers": {"fake": {
            "baseUrl": f"http://127.0.0.1:{port}", "api": "anthropic-messages", "apiKey": "sk-fake",
            "models": [{"id": "fake-model", "contextWindow": 200000, "maxTokens": 32000}],
        }}}  # fmt: skip
        (agent_dir / "models.json").write_text(json.dumps(models))
        env.update(HOME=str(home))
        argv = [str(bin_dir / "pi"), "--mode", "json", "-p", "--no-session", "--provider",
                "fake", "--model", "fake-model", PROMPT]  # fmt: skip
    elif name == "codex":
        (home / "config.toml").write_text(
            'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            'env_key = "FAKE_API_KEY"\nwire_api = "responses"\n'
        )
        env.update(CODEX_HOME=str(home), FAKE_API_KEY="sk-fake")
        argv = [str(bin_dir / "codex"), "exec", "--json", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", PROMPT]  # fmt: skip
    else:
        env = _without_bytecode_vars(env)
        env.update(sema_env)
        env.update(
            HOME=str(home), SEMA_ROOT=str(home / "sema-root"),
            ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}", ANTHROPIC_API_KEY="sk-fake",
        )  # fmt: skip
        argv = [sys.executable, "-m", "sema_rpc", "run", "--yes", "--model",
                "anthropic/fake-model", PROMPT]  # fmt: skip
    return argv, env


def start_llm(ws: Path, name: str, args: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    port_file = ws / f"port.{name}"
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "agent_llm.py"), "--port-file", str(port_file), *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(100):
        if port_file.exists():
            return proc, int(port_file.read_text())
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the scripted model server did not start")


def peers_comparison(
    tmp: Path, peers: Path, bytecode: Bytecode, runs: dict[str, int]
) -> list[list[Any]]:
    ws = tmp / "ws"
    ws.mkdir()
    for i in range(1, 9):
        (ws / f"f{i}.txt").write_text("".join(f"line {i} {n}\n" for n in range(1, 2001)))
    files = ",".join(str(p) for p in sorted(ws.glob("f*.txt")))
    scenarios = {
        "hi": ["--chunks", "1"],
        "reads8": ["--files", files, "--chunks", "200"],
        "stream20k": ["--chunks", "20000", "--chunk", "tok "],
    }
    installed = {a: (peers / "node_modules" / ".bin" / b).exists() for a, b in PEER_BINS.items()}
    columns = [a for a in AGENTS if a != "sema"]
    rows: list[list[Any]] = []
    for scenario, llm_args in scenarios.items():
        llm, port = start_llm(ws, scenario, llm_args)
        try:
            n = runs[scenario]
            figures: dict[str, dict[str, Any] | None] = {}
            for agent in columns:
                if not installed[agent]:
                    figures[agent] = None
                    continue
                figures[agent] = median_of(agent, port, peers, tmp, ws, n, {})
            ours = {
                state: median_of("sema", port, peers, tmp, ws, n, bytecode.env(state))
                for state in ("no pyc", "pyc")
            }
            cells: list[Any] = [f"{scenario}: wall / cpu / peak"]
            for agent in columns:
                f = figures[agent]
                cells.append("not installed" if f is None else _cell(f, ours))
            cells += [_cell(ours["no pyc"], None), _cell(ours["pyc"], None)]
            rows.append(cells)
        finally:
            llm.kill()
            llm.wait()
    return rows


def median_of(
    agent: str, port: int, peers: Path, tmp: Path, ws: Path, n: int, sema_env: dict[str, str]
) -> dict[str, Any]:
    argv, env = agent_command(agent, port, peers, tmp / "homes", sema_env)
    measure(argv, env, ws, 600)  # warm-up: page cache, first-run files, bytecode
    samples = [measure(argv, env, ws, 600) for _ in range(n)]
    exits = sorted({s["exit"] for s in samples})
    return {
        "wall": statistics.median(s["wall"] for s in samples),
        "cpu": statistics.median(s["cpu"] for s in samples),
        "peak": statistics.median(s["peak"] for s in samples),
        "exit": exits,
    }


def _cell(f: dict[str, Any], ours: dict[str, dict[str, Any]] | None) -> str:
    """wall / CPU / peak [exit codes] [(peer wall / ours: no pyc, pyc)]."""
    text = f"{f['wall']:.2f} / {f['cpu']:.2f} s / {f['peak']:.0f} MiB"
    if f["exit"] != [0]:
        text += f" exit {','.join(map(str, f['exit']))}"
    if ours is not None:
        ratios = [f["wall"] / ours[s]["wall"] for s in ("no pyc", "pyc")]
        text += " ({:.2f}× / {:.2f}×)".format(*ratios)
    return text


# --------------------------------------------------------------------------- our own


async def initialize_ms(env: dict[str, str], n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        client = WireClient(env=env, jsonl=False)
        try:
            await client.start()
            await client.initialize()
            samples.append((time.perf_counter() - t0) * 1000)
        finally:
            await close_client(client)
    return statistics.median(samples)


async def first_vs_warm(
    env: dict[str, str], llm: ScriptedLLM, workspace: Path, n: int
) -> tuple[float, float, float]:
    """(first prompt ms with session/create 1 s before it, a warm prompt ms right after
    another, a warm prompt ms 1 s after the last one): medians. The last pairs with the
    first: both come after a second in which the server did nothing (a process idle for
    a second pays for cold CPU caches whether or not its prompt is its first)."""
    first, warm, idle = [], [], []
    for _ in range(n):
        client = WireClient(env=env, jsonl=False)
        try:
            await client.start()
            await client.initialize()
            sid = (await client.create_session(workspace, model="anthropic/claude-bench"))[
                "sessionId"
            ]
            await asyncio.sleep(1.0)
            for sink in (first, warm, warm, idle):
                if sink is idle:
                    await asyncio.sleep(1.0)
                llm.script(Reply.text("hello there", chunks=2))
                t0 = time.perf_counter()
                result = await client.call(
                    "session/prompt", {"sessionId": sid, "input": "hi"}, timeout=60
                )
                sink.append((time.perf_counter() - t0) * 1000)
                if result.get("stopReason") != "end_turn":
                    raise RuntimeError(f"prompt ended {result}")
        finally:
            await close_client(client)
    return statistics.median(first), statistics.median(warm), statistics.median(idle)


async def notif_per_s(env: dict[str, str], llm: ScriptedLLM, workspace: Path) -> float:
    import bench_wire

    row = await bench_wire.stream(env, llm, workspace, "anthropic/claude-bench", jsonl=False)
    if bench_wire.checks.failures:
        raise RuntimeError("; ".join(bench_wire.checks.failures))
    return float(row["notif_per_s"])


async def per_turn(tmp: Path, turns: int) -> tuple[float, float]:
    """bench_history's engine-only turn (ms, median) at 10 and at 10,000 messages."""
    import bench_history

    root = tmp / "history-root"
    root.mkdir()
    saved = os.environ.get("SEMA_ROOT")
    os.environ["SEMA_ROOT"] = str(root)
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench-000000")
    try:
        workspace = bench_history.setup_root(root).resolve()
        bench_history.write_history("small", workspace, bench_history.SMALL)
        bench_history.write_history("big", workspace, bench_history.BIG)
        small = await bench_history.engine_turns(workspace, "small", turns)
        big = await bench_history.engine_turns(workspace, "big", turns)
    finally:
        if saved is None:
            os.environ.pop("SEMA_ROOT", None)
        else:
            os.environ["SEMA_ROOT"] = saved
    return small["turn_ms"], big["turn_ms"]


async def first_rows(tmp: Path, bytecode: Bytecode, servers: int) -> list[list[Any]]:
    """`--only first`: the first / warm prompt row alone. One server is run first and
    not counted, so that the scripted model server and the client are warm for all the
    counted ones (their own first-use costs are not the server's)."""
    figures: dict[str, tuple[float, float, float]] = {}
    workspace = tmp / "own-ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# bench\n")
    with ScriptedLLM() as llm:
        for state in ("no pyc", "pyc"):
            root = tmp / f"own-root-{state.replace(' ', '-')}"
            root.mkdir()
            env = {**server_env(llm, root), **bytecode.env(state)}
            saved = {k: os.environ.pop(k) for k in list(os.environ) if k in _BYTECODE_VARS}
            try:
                await first_vs_warm(env, llm, workspace, 1)  # warm-up, not counted
                figures[state] = await first_vs_warm(env, llm, workspace, servers)
            finally:
                os.environ.update(saved)
    return [
        [
            "first prompt, create 1 s before / warm prompt / warm 1 s after the last, ms "
            f"(median of {servers} servers)"
        ]
        + ["", "", ""]
        + ["{:.1f} / {:.1f} / {:.1f}".format(*figures[s]) for s in ("no pyc", "pyc")]
    ]


async def own_rows(tmp: Path, bytecode: Bytecode, quick: bool) -> list[list[Any]]:
    rows: list[list[Any]] = []
    figures: dict[str, dict[str, float]] = {}
    workspace = tmp / "own-ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# bench\n")
    with ScriptedLLM() as llm:
        for state in ("no pyc", "pyc"):
            root = tmp / f"own-root-{state.replace(' ', '-')}"
            root.mkdir()
            env = {**server_env(llm, root), **bytecode.env(state)}
            # WireClient adds os.environ under `env`: clear the caller's bytecode choice.
            saved = {k: os.environ.pop(k) for k in list(os.environ) if k in _BYTECODE_VARS}
            try:
                await initialize_ms(env, 1)  # warm-up (fills the pyc prefix for "pyc")
                init = await initialize_ms(env, 3 if quick else 9)
                first, warm, idle = await first_vs_warm(env, llm, workspace, 2 if quick else 5)
                rate = await notif_per_s(env, llm, workspace)
            finally:
                os.environ.update(saved)
            figures[state] = {
                "init": init,
                "first": first,
                "warm": warm,
                "idle": idle,
                "rate": rate,
            }
    states = ("no pyc", "pyc")
    blank = ["", "", ""]
    rows.append(
        ["spawn → initialize answered, ms (median; target ≤ 200)", *blank]
        + [f"{figures[s]['init']:.0f}" for s in states]
    )
    rows.append(
        [
            "first prompt, create 1 s before / warm / warm 1 s after the last, ms"
            " (target: first ≤ warm)",
            *blank,
        ]
        + [
            f"{figures[s]['first']:.0f} / {figures[s]['warm']:.0f} / {figures[s]['idle']:.0f}"
            for s in states
        ]
    )
    rows.append(
        ["20,000-delta stream, notifications/s at the client (target ≥ 50,000)", *blank]
        + [f"{figures[s]['rate']:,.0f}" for s in states]
    )
    small, big = await per_turn(tmp, 10 if quick else 30)
    turn = f"{small:.1f} / {big:.1f} (×{big / small:.2f})"
    rows.append(
        [
            "per-turn cost, 10 / 10,000 messages, ms (engine, in-process; target: flat)",
            *blank,
            turn,
            turn,
        ]
    )
    return rows


_BYTECODE_VARS = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")


# --------------------------------------------------------------------------- imports

MODULES_FILE = HERE / "one_shot_modules.txt"


def _importtime(stderr: str) -> dict[str, tuple[int, int]]:
    """`-X importtime` lines → module: (self µs, cumulative µs). A module imported in a
    thread while another import runs can show a negative self time: counted as 0."""
    found: dict[str, tuple[int, int]] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, cumulative, name = line[len("import time:") :].split("|", 2)
        try:
            found[name.strip()] = (max(0, int(own)), int(cumulative))
        except ValueError:  # the header line
            continue
    return found


def paired_hi(
    ws: Path, port: int, peers: Path, homes: Path, sema: tuple[list[str], dict[str, str]],
    pairs: int,
) -> list[str]:  # fmt: skip
    """`hi` run by sema and by each installed peer in turn (sema, peer, sema, peer...),
    so that the machine's drift cancels out of each pair's ratio: per peer, the medians
    of both and the median of the pairs' sema/peer wall ratios (below 1: we are faster)."""
    lines = []
    argv, env = sema
    for name in ("codex", "claude"):
        if not (peers / "node_modules" / ".bin" / PEER_BINS[name]).exists():
            lines.append(f"  hi vs {name}: not installed under {peers}")
            continue
        peer_argv, peer_env = agent_command(name, port, peers, homes, {})
        peer_argv = ["hi" if a == PROMPT else a for a in peer_argv]
        ours: list[dict[str, Any]] = []
        theirs: list[dict[str, Any]] = []
        measure(argv, env, ws, 60)  # warm-up, not counted
        measure(peer_argv, peer_env, ws, 60)
        for _ in range(pairs):
            ours.append(measure(argv, env, ws, 60))
            theirs.append(measure(peer_argv, peer_env, ws, 60))
        ratios = [a["wall"] / b["wall"] for a, b in zip(ours, theirs, strict=True)]
        med = statistics.median
        lines.append(
            f"  hi vs {name} ({pairs} pairs): sema {med(r['wall'] for r in ours):.3f} s "
            f"{med(r['cpu'] for r in ours):.3f} s CPU {med(r['peak'] for r in ours):.0f} MiB, "
            f"{name} {med(r['wall'] for r in theirs):.3f} s "
            f"{med(r['cpu'] for r in theirs):.3f} s CPU {med(r['peak'] for r in theirs):.0f} MiB; "
            f"sema/{name} wall {med(ratios):.2f} (pairs {min(ratios):.2f}-{max(ratios):.2f})"
        )
    return lines


def import_budget(
    tmp: Path, bytecode: Bytecode, runs: int, write: bool, peers: Path, pairs: int
) -> int:
    ws = tmp / "imports-ws"
    ws.mkdir()
    llm, port = start_llm(ws, "imports", ["--chunks", "1"])
    samples: list[dict[str, tuple[int, int]]] = []
    ratio_lines: list[str] = []
    try:
        argv, env = agent_command("sema", port, Path("/nonexistent"), tmp / "homes", {})
        env = {**_without_bytecode_vars(env), **bytecode.env("pyc")}
        plain = [*argv[:-1], "hi"]
        argv = [argv[0], "-X", "importtime", *argv[1:-1], "hi"]
        for i in range(runs + 1):
            proc = subprocess.run(argv, env=env, cwd=ws, capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr[-2000:])
                raise RuntimeError(f"sema-rpc run exited {proc.returncode}")
            if i:  # the first fills the pyc prefix
                samples.append(_importtime(proc.stderr))
        if pairs:
            ratio_lines = paired_hi(ws, port, peers, tmp / "homes", (plain, env), pairs)
    finally:
        llm.kill()
        llm.wait()
    names = sorted(set().union(*samples))
    own = {n: statistics.median(s.get(n, (0, 0))[0] for s in samples) / 1000 for n in names}
    cumulative = {n: statistics.median(s.get(n, (0, 0))[1] for s in samples) / 1000 for n in names}
    total = sum(own.values())
    recorded: dict[str, float] = {}
    if MODULES_FILE.exists():
        for line in MODULES_FILE.read_text().splitlines():
            if line and not line.startswith("#"):
                name, _, ms = line.partition(" ")
                recorded[name] = float(ms or 0)
    top = sorted(names, key=lambda n: -own[n])[:15]
    rows = [
        [n, f"{own[n]:.1f}", f"{cumulative[n]:.1f}", f"{100 * own[n] / total:.1f} %",
         f"{recorded[n]:.1f}" if n in recorded else "new"]
        for n in top
    ]  # fmt: skip
    print_table(
        f"one-shot path (`sema-rpc run --yes … hi`, pyc): {len(names)} modules, "
        f"{total:.0f} ms of import time (sum of self times, median of {runs} runs)",
        ["module (top 15 by self time)", "self ms", "cumulative ms", "share", "recorded ms"],
        rows,
    )
    ours = [n for n in names if n.startswith("sema_rpc")]
    print(
        f"  our modules: {len(ours)}, {sum(own[n] for n in ours):.0f} ms self; "
        f"pydantic*: {sum(v for n, v in own.items() if n.startswith('pydantic')):.0f} ms; "
        f"httpx2/httpcore2/h11/anyio: "
        f"{sum(v for n, v in own.items() if n.split('.')[0] in _HTTP_STACK):.0f} ms"
    )
    if recorded:
        joined = [n for n in names if n not in recorded]
        left = [n for n in recorded if n not in own]
        print(f"  joined the path since {MODULES_FILE.name}: {', '.join(joined) or 'none'}")
        print(f"  left the path: {', '.join(left) or 'none'}")
    if write:
        MODULES_FILE.write_text(
            "# The one-shot path's modules (`bench/bench_startup.py --imports --write`),\n"
            "# each with its median self import time in ms when recorded.\n"
            + "".join(f"{n} {own[n]:.1f}\n" for n in names)
        )
        print(f"  wrote {MODULES_FILE.relative_to(REPO)}")
    if ratio_lines:
        print("side by side, whole process (`hi`, same scripted model server, pyc):")
        print("\n".join(ratio_lines))
    print(
        json.dumps(
            {"bench": "startup-imports", "total_ms": round(total, 1), "modules": len(names),
             "top": {n: round(own[n], 1) for n in top}, "side_by_side": ratio_lines}
        )
    )  # fmt: skip
    return 0


_HTTP_STACK = ("httpx2", "httpcore2", "h11", "h2", "anyio", "sniffio", "idna", "certifi")


# --------------------------------------------------------------------------- initialize, paired

_INIT_BODY = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
_INIT_DIALECTS = {
    "content-length": ([], b"Content-Length: %d\r\n\r\n" % len(_INIT_BODY) + _INIT_BODY),
    "jsonl": (["--jsonl"], _INIT_BODY + b"\n"),
    "acp": (["--acp"], _INIT_BODY + b"\n"),
}


def _initialize_once(python: str, dialect: str, env: dict[str, str], cwd: Path) -> float:
    """ms from the spawn of `python -m sema_rpc` to its whole `initialize` answer read."""
    args, request = _INIT_DIALECTS[dialect]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "sema_rpc", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, cwd=cwd,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.flush()
    data = b""
    while not _whole_answer(data, jsonl=bool(args)):
        chunk = proc.stdout.read1(65536)
        if not chunk:
            raise RuntimeError(f"{python}: no answer to initialize ({dialect}): {data!r}")
        data += chunk
    elapsed = (time.perf_counter() - t0) * 1000
    proc.stdin.close()
    proc.wait(30)
    if b'"result"' not in data:
        raise RuntimeError(f"{python}: initialize ({dialect}) was not answered: {data!r}")
    return elapsed


def _whole_answer(data: bytes, *, jsonl: bool) -> bool:
    if jsonl:
        return data.endswith(b"\n")
    head, sep, body = data.partition(b"\r\n\r\n")
    return bool(sep) and len(body) >= int(head.split(b":")[1])


def initialize_pairs(against: str, pairs: int) -> int:
    """`--initialize`: see the module docstring."""
    ours = sys.executable
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-init-") as tmp_name:
        tmp = Path(tmp_name)
        env = {**os.environ, "HOME": str(tmp), "SEMA_ROOT": str(tmp / "root")}
        env.pop("PYTHONPATH", None)
        for dialect in _INIT_DIALECTS:
            _initialize_once(ours, dialect, env, tmp)  # warm-up: bytecode, page cache
            _initialize_once(against, dialect, env, tmp)
            a: list[float] = []
            b: list[float] = []
            for i in range(pairs):
                order = [(ours, a), (against, b)]
                for python, into in order if i % 2 == 0 else reversed(order):
                    into.append(_initialize_once(python, dialect, env, tmp))
            ratios = [x / y for x, y in zip(a, b, strict=True)]
            rows.append(
                [dialect, statistics.median(a), min(a), statistics.median(b), min(b),
                 round(statistics.median(ratios), 3)]
            )  # fmt: skip
    print_table(
        f"spawn → initialize answered, ms ({pairs} pairs; A = {ours}, B = {against})",
        ["dialect", "A median", "A min", "B median", "B min", "A/B median"],
        rows,
    )
    print(json.dumps({"bench": "initialize", "pairs": pairs, "rows": rows}))
    return 0


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--peers", type=Path, default=Path("/tmp/peers"))
    parser.add_argument("--skip-peers", action="store_true", help="our own latencies only")
    parser.add_argument(
        "--only", choices=["first"], help="one row only: first = the first / warm prompt"
    )
    parser.add_argument(
        "--servers", type=int, default=15, help="with --only first: fresh servers per state"
    )
    parser.add_argument(
        "--imports", action="store_true", help="the one-shot path's import-time budget only"
    )
    parser.add_argument("--runs", type=int, default=7, help="with --imports: runs")
    parser.add_argument(
        "--pairs",
        type=int,
        default=None,
        help="with --imports: `hi` pairs against each installed peer (0: none; default 5); "
        "with --initialize: pairs per dialect (default 15)",
    )
    parser.add_argument(
        "--write", action="store_true", help=f"with --imports: rewrite {MODULES_FILE.name}"
    )
    parser.add_argument(
        "--initialize",
        action="store_true",
        help="spawn → initialize answered in each dialect, paired against --against",
    )
    parser.add_argument(
        "--against", default=None, help="with --initialize: the python of the baseline (B)"
    )
    args = parser.parse_args()
    if args.initialize:
        if args.against is None:
            parser.error("--initialize needs --against PYTHON")
        return initialize_pairs(args.against, 15 if args.pairs is None else args.pairs)
    if args.imports:
        with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp_name:
            return import_budget(
                Path(tmp_name),
                Bytecode(Path(tmp_name)),
                args.runs,
                args.write,
                args.peers,
                5 if args.pairs is None else args.pairs,
            )
    host = host_header()
    runs = (
        {"hi": 3, "reads8": 2, "stream20k": 1}
        if args.quick
        else {"hi": 5, "reads8": 5, "stream20k": 3}
    )
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp_name:
        tmp = Path(tmp_name)
        bytecode = Bytecode(tmp)
        if not bytecode.no_pyc_clean:
            print("note: sema_rpc/ holds __pycache__ directories: 'no pyc' is partly cached")
        rows: list[list[Any]] = []
        if args.only == "first":
            rows += asyncio.run(first_rows(tmp, bytecode, args.servers))
        else:
            if not args.skip_peers:
                rows += peers_comparison(tmp, args.peers, bytecode, runs)
            rows += asyncio.run(own_rows(tmp, bytecode, args.quick))
        shutil.rmtree(tmp / "homes", ignore_errors=True)
    print_table(
        "cold start and first token (wall / CPU / peak RSS, medians; (a× / b×) = the peer's "
        "wall / sema's, no pyc / pyc: above 1 we are faster)",
        ["figure", "Claude Code", "pi", "Codex", "sema no pyc", "sema pyc"],
        rows,
    )
    what = f"{args.servers} servers a state" if args.only == "first" else f"runs: {runs}"
    print(
        f"\n{what}; {time.time() - started:.0f} s; load at start "
        f"{host.get('load', '?')}, at end {os.getloadavg()[0]:.1f}"
    )
    print(json.dumps({"bench": "startup", "rows": rows}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
