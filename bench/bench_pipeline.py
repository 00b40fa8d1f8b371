"""The input pipeline's cost: the time it adds to a prompt with 20 @references and 50
custom commands (issue 5's figure), and where that time goes.

    .venv/bin/python bench/bench_pipeline.py [--quick] [--runs N] [--inproc-runs N]

A temporary workspace (a git repository) holds 20 source files (200 lines each), 50
custom commands (in 5 folders of .sema/commands), project rules (AGENTS.md) and user
rules ($SEMA_ROOT/AGENT.md), and 5 skills. The measured input invokes one custom command
and carries 20 @references (10 whole files, 10 line ranges); the plain input is text of
the same length with neither.

(a) Over real pipes, as a user experiences it: a server subprocess with an Anthropic
    model pointed at the scripted model server. Each input goes to a fresh session, so
    both are a session's first query (rules reminders, the git snapshot). The two inputs
    are interleaved for N runs. Measured: `session/prompt` sent → the model request
    arriving at the scripted server (same process, same monotonic clock). The difference
    of the medians is the time the pipeline adds. Every request is checked to carry the
    20 files' contents (the right line ranges), the expanded command and the rules.
(b) In process: `InputPipeline.prepare` of a session created by the real `SemaEngine`
    (its first call, with the git snapshot and cold caches, then the median over runs
    for both inputs), and the per-step breakdown with the same functions called directly
    (seed 001 steps 6-9: expand the command → resolve the @references → load the rules →
    list and summarise the skills → build the system prompt and the reminders).

Figures never fail the script; a functional break (an error answer, a model request
without the referenced contents, a missing `file:reference`) exits 1. The last line is
a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import (
    Checks,
    Reply,
    RpcFailure,
    ScriptedLLM,
    WireClient,
    close_client,
    host_header,
    median,
    pct,
    print_table,
    round_sig,
    server_env,
    vm_hwm_kb,
)

from sema_rpc.core.project.custom_commands import expand, list_commands
from sema_rpc.core.project.rules import load_rules
from sema_rpc.core.project.skills import list_skills, skill_summaries
from sema_rpc.engine.prompt.references import resolve_references
from sema_rpc.engine.prompt.system_prompt import (
    build_system_prompt,
    first_query_reminders,
    git_status_summary,
)

MODEL = "anthropic/claude-bench"
N_FILES = 20
N_WHOLE = 10  # the first 10 references are whole files, the other 10 line ranges
RANGE = (10, 60)
N_COMMANDS = 50
N_SKILLS = 5
COMMAND = "/group2:cmd27"
EXPANDED = "Review these files for bugs and style (27): "
RULE = "- Use type hints everywhere."
PAST = 1_600_000_000
WIRE_RUNS = 15
INPROC_RUNS = 100

checks = Checks()


def ms(seconds: float) -> float:
    return seconds * 1000


# --------------------------------------------------------------------------- workspace


def module_path(i: int) -> str:
    return f"src/pkg{i % 4}/mod{i}.py"


def build_workspace(root: Path, sema_home: Path) -> None:
    for i in range(N_FILES):
        # Line 2n+1 is `def f{i}_{n}`, line 2n+2 its return: 200 lines.
        body = "".join(f"def f{i}_{n}(x):  # line {n}\n    return x + {n}\n" for n in range(100))
        (root / module_path(i)).parent.mkdir(parents=True, exist_ok=True)
        (root / module_path(i)).write_text(body)
    for i in range(N_COMMANDS):
        d = root / ".sema" / "commands" / f"group{i % 5}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"cmd{i}.md").write_text(
            f"---\ndescription: Command {i}\nargument-hint: <files>\n---\n"
            f"Review these files for bugs and style ({i}): $ARGUMENTS\n"
        )
    (root / "AGENTS.md").write_text("# Rules\n" + f"{RULE}\n" * 200)
    (sema_home / "AGENT.md").write_text("Answer concisely.\n")
    for i in range(N_SKILLS):
        d = root / ".sema" / "skills" / f"skill{i}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill{i}\ndescription: Does task {i}\nwhen-to-use: For task {i}\n---\n"
            + "Step.\n" * 50
        )
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    # Files that exist a while (the markdown cache distrusts mtimes from the last 200 ms).
    for base in (root, sema_home):
        for dirpath, dirnames, filenames in os.walk(base):
            for name in [*dirnames, *filenames]:
                os.utime(Path(dirpath) / name, (PAST, PAST))
        os.utime(base, (PAST, PAST))


def inputs() -> tuple[str, str]:
    """The measured input (a custom command + 20 @references) and a plain input of the
    same length (no `@`, no leading `/`)."""
    mentions = [
        f"@{module_path(i)}" + ("" if i < N_WHOLE else f":{RANGE[0]}-{RANGE[1]}")
        for i in range(N_FILES)
    ]
    refs = f"{COMMAND} " + " ".join(mentions)
    filler = "Please look over the modules in src for bugs and style issues, package by package. "
    plain = (filler * (len(refs) // len(filler) + 1))[: len(refs)].rstrip()
    return refs, plain


def content_problems(text: str, refs: bool) -> list[str]:
    """What is wrong with a user message's text (the input and its reminders)."""
    problems = []
    if RULE not in text:
        problems.append("no rules reminder (not a first query?)")
    if not refs:
        if "def f" in text:
            problems.append("file contents in the plain input")
        return problems
    if EXPANDED not in text:
        problems.append(f"{COMMAND} not expanded")
    for i in range(N_FILES):
        if i < N_WHOLE:  # the whole file: its first and last function
            present, absent = [f"def f{i}_0(x)", f"def f{i}_99(x)"], []
        else:  # lines 10-60: def f_5 is line 11, def f_29 line 59; f_4 line 9, f_30 line 61
            present = [f"def f{i}_5(x)", f"def f{i}_29(x)"]
            absent = [f"def f{i}_4(x)", f"def f{i}_30(x)"]
        if not all(m in text for m in present) or any(m in text for m in absent):
            problems.append(f"{module_path(i)}: content missing or wrong range")
    return problems


def user_text(body: Any) -> str:
    """The text blocks of the last message of an Anthropic request."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not messages:
        return ""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


# --------------------------------------------------------------------------- (a) wire


async def wire_prompt(
    client: WireClient, llm: ScriptedLLM, workspace: Path, text: str, refs: bool
) -> dict[str, Any]:
    """One input in a fresh session: prompt sent → model request arrived → answered."""
    sid = (await client.create_session(workspace, model=MODEL))["sessionId"]
    llm.script(Reply.text("ok"))
    mark, req_mark = len(client.received), len(llm.requests)
    t0 = time.monotonic()  # the request is written to the pipe inside call(), right after
    result = await client.call("session/prompt", {"sessionId": sid, "input": text}, timeout=60)
    answered = time.monotonic()
    await client.call("session/dispose", {"sessionId": sid})

    tag = "refs" if refs else "plain"
    requests = llm.requests[req_mark:]
    problems = []
    if result.get("stopReason") != "end_turn":
        problems.append(f"prompt ended {result}")
    if len(requests) != 1:
        problems.append(f"{len(requests)} model requests, expected 1")
    body = requests[0].body if requests else None
    problems += content_problems(user_text(body), refs)
    events = [
        r.params.get("references") or []
        for r in client.received[mark:]
        if r.method == "file:reference" and r.params.get("sessionId") == sid
    ]
    if refs:
        entries = [e for refs_ in events for e in refs_]
        if len(entries) != N_FILES or any(e.get("error") for e in entries):
            problems.append(f"file:reference: {len(entries)} entries, expected {N_FILES} read")
    elif events:
        problems.append("file:reference for the plain input")
    return {
        "tag": tag,
        "problems": problems,
        "to_request_ms": ms(requests[0].at - t0) if requests else float("nan"),
        "to_answer_ms": ms(answered - t0),
        "request_kb": len(json.dumps(body)) / 1024 if body is not None else 0.0,
    }


async def bench_wire(
    env: dict[str, str], llm: ScriptedLLM, workspace: Path, texts: dict[str, str], runs: int
) -> dict[str, Any]:
    client = WireClient(env=env, jsonl=True)
    samples: dict[str, list[dict[str, Any]]] = {"refs": [], "plain": []}
    failed: set[str] = set()

    def record(row: dict[str, Any], keep: bool) -> None:
        tag = row["tag"]
        if row["problems"] and tag not in failed:  # report the first failing run of each
            failed.add(tag)
            checks.fail(f"wire {tag}: " + "; ".join(row["problems"][:5]))
        if keep:
            samples[tag].append(row)

    try:
        await client.start()
        await client.initialize()
        for tag in ("refs", "plain"):  # warm-up: the SDK import, the connection, the caches
            record(await wire_prompt(client, llm, workspace, texts[tag], tag == "refs"), False)
        for k in range(runs):
            order = ("refs", "plain") if k % 2 == 0 else ("plain", "refs")
            for tag in order:  # interleaved, alternating which goes first
                record(await wire_prompt(client, llm, workspace, texts[tag], tag == "refs"), True)
        rss = vm_hwm_kb(client.proc.pid if client.proc else None)
    finally:
        await close_client(client)
    out: dict[str, Any] = {"rss_kb": rss}
    for tag, rows in samples.items():
        to_req = [r["to_request_ms"] for r in rows]
        out[tag] = {
            "median_ms": median(to_req),
            "p90_ms": pct(to_req, 90),
            "answer_ms": median([r["to_answer_ms"] for r in rows]),
            "request_kb": rows[0]["request_kb"] if rows else None,
        }
    out["added_ms"] = out["refs"]["median_ms"] - out["plain"]["median_ms"]
    out["added_paired_ms"] = median(
        [
            r["to_request_ms"] - p["to_request_ms"]
            for r, p in zip(samples["refs"], samples["plain"], strict=True)
        ]
    )
    return out


# --------------------------------------------------------------------------- (b) in process


class NullBridge:
    def notify(self, event: Any) -> None:
        pass

    async def ask(self, event: Any, result_type: Any) -> None:
        return None


async def bench_prepare(workspace: Path, texts: dict[str, str], runs: int) -> dict[str, Any]:
    """`InputPipeline.prepare` of a session created by the real SemaEngine."""
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.protocol import SessionCreateParams
    from sema_rpc.providers.registry import warm_up

    engine = SemaEngine(NullBridge())
    ready = await engine.create_session(SessionCreateParams(working_dir=str(workspace)))
    session = engine.sessions[ready.session_id]
    if session.profile is not None:  # a key in the environment: let the SDK import finish
        thread = warm_up(session.profile)
        if thread is not None:
            thread.join()
    pipeline = session.pipeline
    assert pipeline is not None

    async def prepare(tag: str) -> float:
        t = time.perf_counter()
        blocks, _setup = await pipeline.prepare(texts[tag])
        elapsed = ms(time.perf_counter() - t)
        text = "\n".join(getattr(b, "text", "") for b in blocks)
        problems = content_problems(text, tag == "refs")
        if problems and tag not in failed:
            failed.add(tag)
            checks.fail(f"prepare {tag}: " + "; ".join(problems[:5]))
        return elapsed

    failed: set[str] = set()
    first_ms = await prepare("refs")  # the git snapshot (once per session), cold caches
    samples: dict[str, list[float]] = {"refs": [], "plain": []}
    for k in range(runs):
        for tag in ("refs", "plain") if k % 2 == 0 else ("plain", "refs"):
            samples[tag].append(await prepare(tag))
    if session.store is not None:
        session.store.close()
    out: dict[str, Any] = {"first_ms": first_ms}
    for tag, values in samples.items():
        out[tag] = {"median_ms": median(values), "p90_ms": pct(values, 90)}
    out["added_ms"] = out["refs"]["median_ms"] - out["plain"]["median_ms"]
    return out


STAGES = ("command", "references", "rules", "skills", "system prompt")


def process_input(
    text: str, root: Path, git_status: str | None, stages: dict[str, list[float]] | None = None
) -> int:
    """One input through the pipeline's steps; returns the reminder characters added."""
    clock = time.perf_counter
    t0 = clock()
    expanded = expand(text, root) or text
    t1 = clock()
    refs = resolve_references(expanded, root, {})
    t2 = clock()
    rules = load_rules(root)
    t3 = clock()
    summary = skill_summaries(list_skills(root))
    t4 = clock()
    build_system_prompt(root, "Agent", skills_summary=summary, git_status=git_status)
    reminders = first_query_reminders(rules, todos_enabled=True) + refs.reminders
    t5 = clock()
    if stages is not None:
        for name, a, b in zip(STAGES, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5), strict=True):
            stages.setdefault(name, []).append(ms(b - a))
    assert len(refs.references) == N_FILES and not any("error" in r for r in refs.references)
    return sum(len(r) for r in reminders)


def bench_breakdown(root: Path, text: str, runs: int) -> dict[str, Any]:
    git_ms = None
    git_status = None
    if (root / ".git").is_dir():
        t = time.perf_counter()
        git_status = git_status_summary(root)
        git_ms = ms(time.perf_counter() - t)
    reminder_chars = process_input(text, root, git_status)
    samples = []
    stages: dict[str, list[float]] = {}
    for _ in range(runs):
        t = time.perf_counter()
        process_input(text, root, git_status, stages)
        samples.append(ms(time.perf_counter() - t))
    t = time.perf_counter()
    for _ in range(runs):
        expand("/group4:cmd49 x", root)
    commands_us = (time.perf_counter() - t) / runs * 1e6
    assert len(list_commands(root)) == N_COMMANDS
    return {
        "median_ms": median(samples),
        "p90_ms": pct(samples, 90),
        "stages_ms": {name: median(stages[name]) for name in STAGES},
        "command_lookup_us": commands_us,
        "reminder_chars": reminder_chars,
        "git_ms": git_ms,
    }


# --------------------------------------------------------------------------- main


async def main(runs: int, inproc_runs: int) -> int:
    summary: dict[str, Any] = {"bench": "pipeline", "host": host_header()}
    texts_tuple = inputs()
    texts = {"refs": texts_tuple[0], "plain": texts_tuple[1]}
    print(
        f"workspace: {N_FILES} files of 200 lines, {N_COMMANDS} custom commands in 5 folders, "
        f"project + user rules, {N_SKILLS} skills, a git repository"
    )
    print(
        f"inputs ({len(texts['refs'])} vs {len(texts['plain'])} characters): "
        f"'{texts['refs'][:60]}…' ({N_FILES} @references: {N_WHOLE} whole files, "
        f"{N_FILES - N_WHOLE} ranges {RANGE[0]}-{RANGE[1]}) vs '{texts['plain'][:40]}…'"
    )
    with (
        tempfile.TemporaryDirectory(prefix="sema-bench-pipeline-") as tmp,
        ScriptedLLM() as llm,
    ):
        workspace = Path(tmp, "ws").resolve()
        sema_home = Path(tmp, "sema-root")
        workspace.mkdir()
        sema_home.mkdir()
        os.environ["SEMA_ROOT"] = str(sema_home)  # for (b), in this process
        build_workspace(workspace, sema_home)
        env = server_env(llm, sema_home)

        # ---- (a)
        try:
            wire = await bench_wire(env, llm, workspace, texts, runs)
        except (RpcFailure, TimeoutError, OSError, AssertionError, KeyError) as exc:
            checks.section_failed("wire", exc)
            wire = None
        if wire:
            r, p = wire["refs"], wire["plain"]
            print_table(
                f"(a) over real pipes: session/prompt sent → model request at the scripted server "
                f"({runs} runs, interleaved; a fresh session per input, so both are first queries)",
                ["input", "median ms", "p90 ms", "→ answer ms", "request KB"],
                [
                    [
                        f"{COMMAND} + {N_FILES} @references",
                        r["median_ms"],
                        r["p90_ms"],
                        r["answer_ms"],
                        r["request_kb"],
                    ],
                    [
                        "plain, same length",
                        p["median_ms"],
                        p["p90_ms"],
                        p["answer_ms"],
                        p["request_kb"],
                    ],
                    ["difference", wire["added_ms"], None, r["answer_ms"] - p["answer_ms"], None],
                ],
            )
            print(
                f"  time added to a prompt by the input pipeline: {wire['added_ms']:.1f} ms "
                f"(median of the per-run differences: {wire['added_paired_ms']:.1f} ms)\n"
                "  it includes reading the 20 files, the file:reference notification to the client and\n"
                "  building and sending the larger request; the git snapshot and the rules are in both"
            )
            summary["wire"] = {
                "runs": runs,
                "session": "fresh (first query)",
                "refs_ms": round_sig(r["median_ms"]),
                "refs_p90_ms": round_sig(r["p90_ms"]),
                "plain_ms": round_sig(p["median_ms"]),
                "plain_p90_ms": round_sig(p["p90_ms"]),
                "added_ms": round_sig(wire["added_ms"]),
                "added_paired_ms": round_sig(wire["added_paired_ms"]),
                "refs_request_kb": round_sig(r["request_kb"]),
                "plain_request_kb": round_sig(p["request_kb"]),
                "peak_rss_mb": round_sig((wire["rss_kb"] or 0) / 1024),
            }

        # ---- (b)
        try:
            prep = await bench_prepare(workspace, texts, inproc_runs)
        except (OSError, AssertionError, KeyError, ValueError) as exc:
            checks.section_failed("prepare", exc)
            prep = None
        try:
            steps = bench_breakdown(workspace, texts["refs"], inproc_runs)
        except (OSError, AssertionError, KeyError) as exc:
            checks.section_failed("breakdown", exc)
            steps = None

    if prep:
        print_table(
            f"(b) in process: InputPipeline.prepare, first query ({inproc_runs} runs, interleaved)",
            ["input", "median ms", "p90 ms"],
            [
                [
                    f"{COMMAND} + {N_FILES} @references",
                    prep["refs"]["median_ms"],
                    prep["refs"]["p90_ms"],
                ],
                ["plain, same length", prep["plain"]["median_ms"], prep["plain"]["p90_ms"]],
                ["difference", prep["added_ms"], None],
            ],
        )
        print(
            f"  first prepare in this process (git snapshot, cold caches, lazy imports): "
            f"{prep['first_ms']:.1f} ms"
        )
        summary["prepare"] = {
            "runs": inproc_runs,
            "first_ms": round_sig(prep["first_ms"]),
            "refs_ms": round_sig(prep["refs"]["median_ms"]),
            "refs_p90_ms": round_sig(prep["refs"]["p90_ms"]),
            "plain_ms": round_sig(prep["plain"]["median_ms"]),
            "added_ms": round_sig(prep["added_ms"]),
        }
    if steps:
        print(
            f"\n    breakdown, the same steps called directly (median of {inproc_runs}): "
            f"{steps['median_ms']:.2f} ms, p90 {steps['p90_ms']:.2f} ms"
        )
        print(
            "    by step: "
            + ", ".join(f"{name} {v:.3f} ms" for name, v in steps["stages_ms"].items())
        )
        print(
            f"    custom command lookup alone ({N_COMMANDS} commands, warm): "
            f"{steps['command_lookup_us']:.0f} µs"
        )
        print(f"    reminders added to the message: {steps['reminder_chars']:,} characters")
        if steps["git_ms"] is not None:
            print(
                f"    git status snapshot (once per session, not per input): {steps['git_ms']:.1f} ms"
            )
        summary["breakdown"] = {
            "median_ms": round_sig(steps["median_ms"]),
            "stages_ms": {n: round_sig(v) for n, v in steps["stages_ms"].items()},
            "command_lookup_us": round_sig(steps["command_lookup_us"]),
            "git_status_ms": round_sig(steps["git_ms"]),
        }
    return checks.finish(summary)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a shorter smoke run")
    parser.add_argument("--runs", type=int, default=None, help=f"wire runs ({WIRE_RUNS})")
    parser.add_argument(
        "--inproc-runs", type=int, default=None, help=f"in-process runs ({INPROC_RUNS})"
    )
    opts = parser.parse_args()
    runs = opts.runs or (3 if opts.quick else WIRE_RUNS)
    inproc_runs = opts.inproc_runs or (10 if opts.quick else INPROC_RUNS)
    sys.exit(asyncio.run(main(runs, inproc_runs)))
