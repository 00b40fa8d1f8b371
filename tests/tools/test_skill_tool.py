from __future__ import annotations

from pathlib import Path

from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.tools.base import ToolContext
from sema_rpc.tools.skill import SkillTool
from tests.engine import _context
from tests.engine._context import write

from ._helpers import args_of, run

sema_home = _context.sema_home  # fixture

tool = SkillTool()


def make_skill(workspace: Path) -> None:
    write(
        workspace / ".sema/skills/release/SKILL.md",
        "---\nname: release\ndescription: Ship a release\nallowed-tools: Bash\n---\n"
        "Bump the version to $ARGUMENTS, then tag it.\n",
    )
    write(
        workspace / ".sema/skills/review/SKILL.md",
        "---\nname: review\ndescription: Review a diff\n---\nRead the diff carefully.",
    )


async def test_body_with_arguments(workspace: Path, ctx: ToolContext, sema_home: Path) -> None:
    make_skill(workspace)
    out = await run(tool, ctx, skill="release", args="2.0.0")
    assert not out.is_error
    assert "Bump the version to 2.0.0, then tag it." in out.content
    assert str(workspace / ".sema/skills/release") in out.content
    assert "Bash" in out.content and out.summary == "Loaded skill release"
    out = await run(tool, ctx, skill="review", args="only src/")
    assert "Read the diff carefully.\n\nonly src/" in out.content
    out = await run(tool, ctx, skill="/review")
    assert "Read the diff carefully.\n</skill>" in out.content


async def test_unknown_skill(workspace: Path, ctx: ToolContext, sema_home: Path) -> None:
    make_skill(workspace)
    out = await run(tool, ctx, skill="deploy")
    assert out.is_error and "Unknown skill: deploy" in out.content
    assert "release, review" in out.content


def test_permission_and_always_rule(workspace: Path, ctx: ToolContext, sema_home: Path) -> None:
    make_skill(workspace)
    assert not tool.read_only
    ask = tool.permission(args_of(tool, skill="release"), ctx)
    assert ask is not None
    assert (ask.title, ask.content, ask.rule) == (
        "Skill: release",
        "Ship a release",
        "Skill(release)",
    )
    store = RuleStore(workspace)
    policy = PermissionPolicy(mode="default", store=store, client_can_answer=True)
    assert policy.decide(ask) == "ask"
    assert policy.rule_for_always(ask) == "Skill(release)"
    store.add("Skill(release)")
    assert policy.decide(ask) == "allow"
    other = tool.permission(args_of(tool, skill="review"), ctx)
    assert other is not None and policy.decide(other) == "ask"
