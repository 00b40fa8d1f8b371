"""The input pipeline's cost: what preparing one user input adds before the model call.

    .venv/bin/python bench/bench_pipeline.py [--runs N]

A temporary workspace holds 20 source files (~200 lines each), 50 custom commands (in 5
folders), project and user rules, and 5 skills. One processed input is what the engine
does for each prompt (seed 001 steps 6-9):
  expand the custom command → resolve 20 @references (read like the Read tool) →
  load the rules → list the skills and summarise them → build the system prompt →
  the first-query reminders.
The git snapshot (`git status`, a subprocess) is timed separately: it is taken once per
session, not per input. Prints the median (and p90) time per processed input over N
runs with warm caches, the first (cold) run, and a JSON summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sema_rpc.engine.custom_commands import expand, list_commands  # noqa: E402
from sema_rpc.engine.references import resolve_references  # noqa: E402
from sema_rpc.engine.rules import load_rules  # noqa: E402
from sema_rpc.engine.skills import list_skills, skill_summaries  # noqa: E402
from sema_rpc.engine.system_prompt import (  # noqa: E402
    build_system_prompt,
    first_query_reminders,
    git_status_summary,
)

N_FILES = 20
N_COMMANDS = 50
N_SKILLS = 5
PAST = 1_600_000_000


def build_workspace(root: Path, sema_home: Path) -> None:
    for i in range(N_FILES):
        body = "".join(f"def f{i}_{n}(x):  # line {n}\n    return x + {n}\n" for n in range(100))
        (root / "src" / f"pkg{i % 4}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"pkg{i % 4}" / f"mod{i}.py").write_text(body)
    for i in range(N_COMMANDS):
        d = root / ".sema" / "commands" / f"group{i % 5}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"cmd{i}.md").write_text(
            f"---\ndescription: Command {i}\nargument-hint: <files>\n---\n"
            f"Review these files for bugs and style ({i}): $ARGUMENTS\n"
        )
    (root / "AGENTS.md").write_text("# Rules\n" + "- Use type hints everywhere.\n" * 200)
    (sema_home / "AGENT.md").write_text("Answer concisely.\n")
    for i in range(N_SKILLS):
        d = root / ".sema" / "skills" / f"skill{i}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: skill{i}\ndescription: Does task {i}\nwhen-to-use: For task {i}\n---\n"
            + "Step.\n" * 50
        )
    # Files that exist a while (the markdown cache distrusts mtimes from the last 200 ms).
    for base in (root, sema_home):
        for dirpath, dirnames, filenames in os.walk(base):
            for name in [*dirnames, *filenames]:
                os.utime(Path(dirpath) / name, (PAST, PAST))
        os.utime(base, (PAST, PAST))


STAGES = ("command", "references", "rules", "skills", "system prompt")


def process_input(
    text: str, root: Path, git_status: str | None, stages: dict[str, list[float]] | None = None
) -> int:
    """One input through the pipeline; returns the reminder characters added."""
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
            stages.setdefault(name, []).append((b - a) * 1000)
    assert len(refs.references) == N_FILES and not any("error" in r for r in refs.references)
    return sum(len(r) for r in reminders)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "ws").resolve()
        sema_home = Path(tmp, "sema-root")
        root.mkdir()
        sema_home.mkdir()
        os.environ["SEMA_ROOT"] = str(sema_home)
        build_workspace(root, sema_home)
        files = sorted(root.glob("src/*/*.py"))
        mentions = " ".join(f"@{p.relative_to(root)}" for p in files[:10])
        mentions += " " + " ".join(f"@{p.relative_to(root)}:10-60" for p in files[10:])
        text = f"/group2:cmd27 {mentions}"

        git_ms = None
        if shutil.which("git"):
            subprocess.run(["git", "init", "-q"], cwd=root, check=True)
            t = time.perf_counter()
            git_status = git_status_summary(root)
            git_ms = (time.perf_counter() - t) * 1000
        else:
            git_status = None

        t = time.perf_counter()
        reminder_chars = process_input(text, root, git_status)
        cold_ms = (time.perf_counter() - t) * 1000
        samples = []
        stages: dict[str, list[float]] = {}
        for _ in range(opts.runs):
            t = time.perf_counter()
            process_input(text, root, git_status, stages)
            samples.append((time.perf_counter() - t) * 1000)
        samples.sort()
        median = statistics.median(samples)
        p90 = samples[int(0.9 * (len(samples) - 1))]

        t = time.perf_counter()
        for _ in range(opts.runs):
            expand("/group4:cmd49 x", root)
        commands_us = (time.perf_counter() - t) / opts.runs * 1e6
        assert len(list_commands(root)) == N_COMMANDS

    print(
        f"input pipeline: {N_FILES} @references (10 whole files, 10 ranges), "
        f"{N_COMMANDS} custom commands, rules, {N_SKILLS} skills, system prompt"
    )
    print(f"  per processed input: median {median:.2f} ms, p90 {p90:.2f} ms ({opts.runs} runs)")
    print(
        "  median by stage: "
        + ", ".join(f"{name} {statistics.median(stages[name]):.3f} ms" for name in STAGES)
    )
    print(f"  first input (cold caches): {cold_ms:.2f} ms")
    print(f"  custom command lookup alone (50 commands, warm): {commands_us:.0f} µs")
    print(f"  reminders added to the message: {reminder_chars:,} characters")
    if git_ms is not None:
        print(f"  git status snapshot (once per session, not per input): {git_ms:.1f} ms")
    print(
        json.dumps(
            {
                "median_ms": round(median, 3),
                "p90_ms": round(p90, 3),
                "cold_ms": round(cold_ms, 3),
                "command_lookup_us": round(commands_us, 1),
                "git_status_ms": git_ms and round(git_ms, 1),
                "runs": opts.runs,
                "stages_ms": {n: round(statistics.median(stages[n]), 3) for n in STAGES},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
