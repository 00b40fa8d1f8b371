from __future__ import annotations

import datetime
import shutil
import subprocess
from pathlib import Path

import pytest

from sema_rpc.core.project.skills import list_skills, skill_summaries
from sema_rpc.engine.prompt.system_prompt import (
    build_system_prompt,
    format_git_status,
    git_status_summary,
    plan_mode_reminder,
)
from tests.engine import _context
from tests.engine._context import write

sema_home = _context.sema_home  # fixture
ws = _context.ws  # fixture


def test_defaults_still_work(ws: Path) -> None:
    text = build_system_prompt(ws, "Agent")
    assert f"Working directory: {ws}" in text and "Today's date:" in text
    assert "Plan mode is active" not in text
    assert "Plan mode is active" in build_system_prompt(ws, "Plan")


def test_new_inputs(ws: Path, sema_home: Path) -> None:
    write(ws / ".sema/skills/x/SKILL.md", "---\nname: x\ndescription: Does X\n---\nbody")
    text = build_system_prompt(
        ws,
        "Plan",
        skills_summary=skill_summaries(list_skills(ws)),
        git_status="Current branch: main. Changed files: 2.",
        platform_name="linux",
        today=datetime.date(2025, 1, 2),
    )
    assert "Platform: linux" in text and "Today's date: 2025-01-02" in text
    assert "Current branch: main. Changed files: 2." in text
    assert "- x: Does X" in text
    assert text.index("- x: Does X") < text.index("Plan mode is active")


def test_format_git_status() -> None:
    assert format_git_status(["## main...origin/main [ahead 1]", " M a.py", "?? b.py"]) == (
        "Current branch: main (ahead 1 of origin/main). Changed files: 2 (1 untracked)."
    )
    assert format_git_status(["## dev...origin/dev"]) == (
        "Current branch: dev (tracking origin/dev). Changed files: 0."
    )
    assert format_git_status(["## No commits yet on master", "?? x"]) == (
        "Current branch: master (no commits yet). Changed files: 1 (1 untracked)."
    )
    assert format_git_status(["## HEAD (no branch)"]).startswith("Current branch: detached HEAD.")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_status_of_a_real_repository(ws: Path) -> None:
    assert git_status_summary(ws) is None  # not a repository
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null", "HOME": str(ws)}
    subprocess.run(["git", "init", "-q", "-b", "trunk"], cwd=ws, check=True, env=env)
    write(ws / "a.py", "x = 1\n")
    write(ws / "b.py", "y = 2\n")
    assert git_status_summary(ws) == (
        "Current branch: trunk (no commits yet). Changed files: 2 (2 untracked)."
    )


def test_git_status_never_raises(tmp_path: Path) -> None:
    assert git_status_summary(tmp_path / "does-not-exist") is None


def test_plan_mode_reminder() -> None:
    text = plan_mode_reminder()
    assert text.startswith("<system-reminder>") and "ExitPlanMode" in text
