"""ExitPlanMode: save the plan, ask the user to approve it, and tell the loop what follows.

The tool (not the model) writes the plan to `<working dir>/.sema/plans/<timestamp>-<slug>.md`,
then awaits `ctx.services.plan_exit(plan_path, plan_text, call_id)`, which the engine provides and
which asks the client (`plan:exit:request`) and returns `{"decision":
"startEditing" | "clearContextAndStart" | "keepPlanning", "feedback": str | None}` (a dict
or an object with those attributes), or None when the client cannot answer.

Approval returns `ToolOutput.control = RebuildContext(new_mode="Agent", rebuild_message=…)`
for the loop — `rebuild_message` is None for startEditing (keep the history) and the text
of the new first user message for clearContextAndStart. keepPlanning and "cannot ask"
return none: Plan mode stays on.
"""

from __future__ import annotations

import datetime
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from sema_rpc.core.policy.paths import display_path
from sema_rpc.core.scopes import run_sync_in_thread

from .base import RebuildContext, Tool, ToolContext, ToolOutput
from .input_plain import ExitPlanModeInput

PLAN_DIR = Path(".sema") / "plans"
PLAN_EXIT_OPTIONS = ["startEditing", "clearContextAndStart", "keepPlanning"]
DECISIONS = frozenset(PLAN_EXIT_OPTIONS)
MAX_SLUG = 48


def plan_slug(plan: str) -> str:
    """A file-name slug from the plan's first heading or line: `add-retry-to-the-client`."""
    first = next((line for line in plan.splitlines() if line.strip()), "")
    ascii_text = unicodedata.normalize("NFKD", first).encode("ascii", "ignore").decode()
    words = re.sub(r"[^a-z0-9]+", " ", ascii_text.lstrip("#").strip().lower()).split()
    if words and words[0] == "plan" and len(words) > 1:
        words = words[1:]
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > MAX_SLUG:
            break
        slug = candidate
    return slug or "plan"


def save_plan(working_dir: Path, plan: str, now: datetime.datetime | None = None) -> Path:
    """Write the plan to a new file under `.sema/plans/`; never overwrites one."""
    directory = Path(working_dir) / PLAN_DIR
    directory.mkdir(parents=True, exist_ok=True)
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{plan_slug(plan)}"
    text = plan if plan.endswith("\n") else plan + "\n"
    for n in range(1, 1000):
        path = directory / (f"{base}.md" if n == 1 else f"{base}-{n}.md")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return path
    raise OSError(f"cannot create a plan file in {directory}")


def _decision(answer: Any) -> tuple[str | None, str | None]:
    if answer is None:
        return None, None
    if isinstance(answer, dict):
        decision, feedback = answer.get("decision"), answer.get("feedback")
    else:
        decision, feedback = getattr(answer, "decision", None), getattr(answer, "feedback", None)
    if decision not in DECISIONS:
        return None, None
    feedback = feedback.strip() if isinstance(feedback, str) and feedback.strip() else None
    return decision, feedback


class ExitPlanModeTool(Tool):
    name = "ExitPlanMode"
    description = (
        "Presents your plan to the user for approval and, when approved, leaves Plan mode.\n"
        "- Use it in Plan mode once the plan is complete: after exploring the code, not before.\n"
        "- `plan` is the whole plan in markdown (concise but complete: the steps, the files to "
        "change, how to verify). It is saved under .sema/plans/ for you; do not write it "
        "yourself.\n"
        "- Do not ask for approval any other way. If the user wants changes, revise the plan "
        "and call this tool again."
    )
    Input = ExitPlanModeInput

    def allowed_in_plan_mode(self, args: ExitPlanModeInput) -> bool:
        return True

    def title(self, args: ExitPlanModeInput) -> str:
        return "Exit plan mode"

    async def validate_input(self, args: ExitPlanModeInput, ctx: ToolContext) -> str | None:
        if not ctx.plan_mode:
            return "Plan mode is not active: there is no plan to approve. Go ahead with the task."
        if not args.plan.strip():
            return "The plan is empty."
        return None

    async def call(self, args: ExitPlanModeInput, ctx: ToolContext) -> ToolOutput:
        plan = args.plan.strip()
        path = await run_sync_in_thread(save_plan, ctx.working_dir, plan)
        shown = display_path(path, ctx.working_dir)
        ask = ctx.services.plan_exit
        answer = await ask(str(path), plan, ctx.tool_call_id) if ask is not None else None
        decision, feedback = _decision(answer)
        said = f"\nThe user said: {feedback}" if feedback else ""

        if decision is None:
            return ToolOutput(
                content=(
                    f"The plan was saved to {shown}, but the user could not be asked to approve "
                    "it (this client does not answer plan approvals). Plan mode stays on: end "
                    "your turn by presenting the plan; the user can approve it by switching to "
                    "Agent mode."
                ),
                summary=f"Plan saved to {shown}; approval not available",
            )
        if decision == "keepPlanning":
            return ToolOutput(
                content=(
                    "The user did not approve the plan yet and wants to keep planning. Plan mode "
                    f"stays on.{said}\nRevise the plan (the previous version is saved at {shown}) "
                    "and call ExitPlanMode again with the whole revised plan."
                ),
                summary="Keep planning",
            )
        if decision == "startEditing":
            return ToolOutput(
                content=(
                    "The user approved the plan. Plan mode is off: you can now edit files and run "
                    f"commands. The plan is saved at {shown}.{said}\nStart with the first step "
                    "(create a todo list first if the plan has several steps)."
                ),
                summary=f"Plan approved ({shown})",
                control=RebuildContext(new_mode="Agent"),
            )
        note = f"\n\nThe user added: {feedback}" if feedback else ""
        rebuild_message = f"Implement the following plan (saved at {shown}):\n\n{plan}{note}"
        return ToolOutput(
            content=(
                "The user approved the plan and chose to start from a fresh context: the "
                "conversation restarts from the plan."
            ),
            summary=f"Plan approved; restarting from {shown}",
            control=RebuildContext(new_mode="Agent", rebuild_message=rebuild_message),
        )
