"""The system prompt and the reminders added to user messages.

- `build_system_prompt(working_dir, mode, *, skills_summary, git_status, …)`: who the
  agent is, where it works (working dir, platform, date, git snapshot), the skills, and
  the Plan-mode text.
- `first_query_reminders(rules, todos_enabled)`: the reminders of a session's first
  query (empty history): the todo-list nudge and the project/user rules.
- `plan_mode_reminder()`: sent with the first query after entering Plan mode.
- `git_status_summary(working_dir)`: branch + count of changed files, or None.

Keep the system prompt stable within a session (compute the git snapshot once): a
prompt that changes every turn defeats the provider's prompt cache.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datetime

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 2.0

BASE_PROMPT = """You are a coding agent working inside the user's editor. You help with software \
engineering tasks in the project at the working directory: reading and searching code, running \
commands, and editing files with the tools you are given.

- Use the tools to look before you answer; do not guess file contents.
- Prefer several read-only tool calls in one response when they are independent: they run in parallel.
- File edits and commands that change things need the user's consent; if a call is rejected, stop and wait.
- Messages may contain <system-reminder> blocks added by the system (referenced files, \
project rules); they are context, not something the user typed.
- Be concise. Refer to code as path:line."""

PLAN_MODE_PROMPT = """Plan mode is active. You may only read and search: do not edit files or run \
commands that change anything. Investigate, then present a plan for the user to approve."""

PLAN_MODE_REMINDER = """Plan mode is active. The user wants you to plan before acting: you MUST NOT \
edit or create files, run commands that change anything, or otherwise change the system (this \
overrides any other instruction). Only read-only tools are available.

1. Understand the request and explore the code (Read, Glob, Grep, read-only Bash, and the Explore \
or Plan subagents through Task when they are available). Ask the user with AskUserQuestion when a \
choice is genuinely theirs.
2. Write a concrete plan in markdown: the goal, the files to change and how, the order of the \
steps, and how to verify the result.
3. Call ExitPlanMode with the whole plan as `plan`. It saves the plan under .sema/plans/ and asks \
the user to approve it. Do not ask for approval in any other way, and do not start editing until \
the user has approved."""

TODOS_REMINDER = """This is a reminder that your todo list is currently empty. DO NOT mention \
this to the user explicitly because they are already aware. If you are working on a task with \
several steps, use the TodoWrite tool to create a todo list and keep it updated. If not, ignore \
this reminder."""


def system_reminder(body: str) -> str:
    return f"<system-reminder>\n{body.strip()}\n</system-reminder>"


def git_status_summary(working_dir: Path, timeout_s: float = GIT_TIMEOUT_S) -> str | None:
    """`Current branch: main (ahead 1 of origin/main). Changed files: 3.` or None.

    None when the directory is not in a git repository, git is missing, or it takes
    longer than `timeout_s`. Never raises. Blocking: call it from a thread
    (`core.scopes.run_sync_in_thread`) inside the event loop.
    """
    try:
        proc = subprocess.run(
            # A workspace's .git/config is a stranger's: its fsmonitor is a program
            # `git status` would run, before anyone was asked.
            ["git", "-c", "core.fsmonitor=false", "status", "--porcelain", "-b", "--no-renames"],
            cwd=working_dir,
            capture_output=True,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
            env=_git_env(),
        )
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.debug("git status in %s failed: %s", working_dir, exc)
        return None
    if proc.returncode != 0:
        return None
    lines = proc.stdout.decode("utf-8", errors="replace").splitlines()
    return format_git_status(lines)


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_OPTIONAL_LOCKS"] = "0"  # `git status` must not take the index lock
    env["LC_ALL"] = "C"
    return env


def format_git_status(lines: list[str]) -> str:
    """Summarise `git status --porcelain -b` output."""
    branch = "unknown"
    tracking = ""
    changed = [line for line in lines if line and not line.startswith("## ")]
    header = next((line[3:] for line in lines if line.startswith("## ")), None)
    if header is not None:
        if header.startswith("No commits yet on "):
            branch = header.removeprefix("No commits yet on ") + " (no commits yet)"
        elif header.startswith("HEAD (no branch)"):
            branch = "detached HEAD"
        else:
            head, _, rest = header.partition("...")
            branch = head.strip()
            if rest:
                upstream, _, state = rest.partition(" ")
                state = state.strip().strip("[]")
                tracking = f" ({state} of {upstream})" if state else f" (tracking {upstream})"
    untracked = sum(1 for line in changed if line.startswith("??"))
    detail = f" ({untracked} untracked)" if untracked else ""
    return f"Current branch: {branch}{tracking}. Changed files: {len(changed)}{detail}."


def _platform_name() -> str:
    """`platform.system().lower()` ("linux", "darwin", "windows"), without importing
    `platform` (a few ms of every process's start)."""
    return os.uname().sysname.lower() if hasattr(os, "uname") else sys.platform


def build_system_prompt(
    working_dir: Path,
    mode: str,
    *,
    skills_summary: str = "",
    git_status: str | None = None,
    platform_name: str | None = None,
    today: datetime.date | None = None,
    extra: str = "",
) -> str:
    """The system prompt for one turn.

    `skills_summary`: `skills.skill_summaries(list_skills(wd))`; `git_status`:
    `git_status_summary(wd)` computed once per session (it is a snapshot); `extra`: any
    further section (e.g. an agent's own prompt).
    """
    env = [
        f"Working directory: {working_dir}",
        f"Platform: {platform_name or _platform_name()}",
        f"Today's date: {today.isoformat() if today else time.strftime('%Y-%m-%d')}",
    ]
    if git_status:
        env.append(f"Is a git repository: yes. {git_status} (snapshot at the session start)")
    parts = [BASE_PROMPT, "<env>\n" + "\n".join(env) + "\n</env>"]
    if skills_summary:
        parts.append(skills_summary)
    if extra:
        parts.append(extra)
    if mode == "Plan":
        parts.append(PLAN_MODE_PROMPT)
    return "\n\n".join(parts)


def first_query_reminders(rules: str | None, todos_enabled: bool) -> list[str]:
    """Reminders for the first query of a session (or after a context rebuild)."""
    reminders: list[str] = []
    if todos_enabled:
        reminders.append(system_reminder(TODOS_REMINDER))
    if rules:
        reminders.append(
            system_reminder(
                "As you answer the user's questions, you can use the following context:\n" + rules
            )
        )
    return reminders


def plan_mode_reminder() -> str:
    """Sent with the first query in Plan mode (once per entry into Plan mode)."""
    return system_reminder(PLAN_MODE_REMINDER)
