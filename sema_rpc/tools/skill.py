"""Skill: load a skill's instructions (`.sema/skills/<name>/SKILL.md`) into the conversation.

The tool result is the skill's body (with `args` substituted for `$ARGUMENTS`, or
appended), so the model follows it. Consent is asked per skill; "allow always" stores
`Skill(<name>)`.
"""

from __future__ import annotations

from sema_rpc.core.project.custom_commands import substitute_arguments
from sema_rpc.core.project.skills import Skill, find_skill, list_skills

from .base import PermissionAsk, Tool, ToolContext, ToolError, ToolOutput
from .input_plain import SkillInput


class SkillTool(Tool):
    name = "Skill"
    description = (
        "Loads a skill: task-specific instructions listed under Skills in the system prompt.\n"
        "- Call it when the user's task matches a skill's description, before doing the task; "
        "then follow the instructions it returns.\n"
        "- `skill` is the skill's name; `args` passes optional arguments to it.\n"
        "- Do not load a skill that is already loaded in this conversation."
    )
    Input = SkillInput

    def allowed_in_plan_mode(self, args: SkillInput) -> bool:
        return True  # loading instructions changes nothing; the tools they call are checked

    def title(self, args: SkillInput) -> str:
        return f"Skill: {args.skill}"

    def _skill(self, args: SkillInput, ctx: ToolContext) -> Skill | None:
        return find_skill(ctx.working_dir, args.skill.strip().lstrip("/"))

    async def validate_input(self, args: SkillInput, ctx: ToolContext) -> str | None:
        if self._skill(args, ctx) is not None:
            return None
        known = ", ".join(s.name for s in list_skills(ctx.working_dir)) or "none"
        return f"Unknown skill: {args.skill}. Available skills: {known}"

    def permission(self, args: SkillInput, ctx: ToolContext) -> PermissionAsk | None:
        skill = self._skill(args, ctx)
        name = skill.name if skill is not None else args.skill
        return PermissionAsk(
            title=f"Skill: {name}",
            content=skill.description if skill is not None else "",
            rule=f"Skill({name})",
        )

    async def call(self, args: SkillInput, ctx: ToolContext) -> ToolOutput:
        skill = self._skill(args, ctx)
        if skill is None:  # removed since validation
            raise ToolError(f"Unknown skill: {args.skill}")
        body = substitute_arguments(skill.body, (args.args or "").strip())
        content = (
            f'<skill name="{skill.name}">\n'
            f"Base directory of this skill (relative paths in it start here): {skill.base_dir}\n\n"
            f"{body}\n</skill>"
        )
        if skill.allowed_tools:
            content += (
                f"\n\nThis skill is meant to use these tools: {', '.join(skill.allowed_tools)}."
            )
        return ToolOutput(content=content, summary=f"Loaded skill {skill.name}")
