"""SemaEngine's input pipeline: what one user input becomes
before the loop sees it.

- tools for this turn: built-in + agent tools (Task, Skill, AskUserQuestion, ExitPlanMode)
  + the session's MCP tools, filtered by `useTools`; Plan mode offers only what it admits
  (the runner refuses the rest even when called by name);
- a custom command (`/name args`) expands to its body;
- `@path` references become system reminders and a `file:reference` event;
- the system prompt: working dir, platform, date, git snapshot, skills, Plan-mode text;
- reminders: rules and todos on a session's first query, the Plan reminder on the first
  query after entering Plan mode.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sema_rpc.core.messages import ContentBlock, TextBlock
from sema_rpc.core.project.rules import load_rules
from sema_rpc.core.project.skills import list_skills, skill_summaries
from sema_rpc.core.scopes import run_sync_in_thread
from sema_rpc.core.stream import ToolSpec
from sema_rpc.engine.prompt.inputs import is_resource
from sema_rpc.engine.prompt.system_prompt import (
    build_system_prompt,
    first_query_reminders,
    git_status_summary,
    plan_mode_reminder,
)
from sema_rpc.tools.base import FileSnapshot, Tool

if TYPE_CHECKING:
    from sema_rpc.core.messages import Message
    from sema_rpc.engine.events import EventBus
    from sema_rpc.engine.loop.tokens import TokenTracker
    from sema_rpc.engine.store.checkpoints import CheckpointStore
    from sema_rpc.engine.store.history_writer import HistoryStore
    from sema_rpc.protocol import Mode, ToolListItem

log = logging.getLogger(__name__)


class TurnSetup:
    # TurnSetup and InputPipeline are plain classes: a dataclass costs its creation on
    # every start, and neither is compared or copied.
    __slots__ = ("accepted", "offered", "specs", "system_prompt")

    def __init__(
        self,
        offered: list[Tool],
        accepted: dict[str, Tool],
        specs: list[ToolSpec],
        system_prompt: str,
    ) -> None:
        self.offered = offered
        """Tools the model is offered this turn (their specs are sent)."""
        self.accepted = accepted
        """Tools the runner accepts by name: like `offered`, but in Plan mode also the
        write tools, so that calling one by name is refused as a Plan-mode violation
        rather than reported as unknown."""
        self.specs = specs
        self.system_prompt = system_prompt


class PipelineSession(Protocol):
    """What the pipeline reads of its session (`engine/session/session.py`'s `Session` is one).

    A protocol rather than the class, so that the session (which owns its pipeline) and
    the pipeline do not import each other."""

    @property
    def working_dir(self) -> Path: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def store(self) -> HistoryStore: ...
    @property
    def checkpoints(self) -> CheckpointStore: ...
    @property
    def tokens(self) -> TokenTracker: ...
    @property
    def use_tools(self) -> list[str] | None: ...
    @property
    def history(self) -> list[Message]: ...
    @property
    def read_files(self) -> dict[str, FileSnapshot]: ...
    @property
    def bus(self) -> EventBus: ...
    @property
    def client_system_prompt(self) -> tuple[str, str] | None: ...


class InputPipeline:
    def __init__(self, session: PipelineSession) -> None:
        self.session = session
        self.mcp_tools: Sequence[Tool] = ()
        self.git_status: str | None = None
        self._git_checked = False
        self._git_task: asyncio.Future[str | None] | None = None
        self._warming: asyncio.Task[None] | None = None
        self.plan_reminded = False

    def warm_up(self) -> None:
        """Once the session has its model (after `session/create`): do the first turn's
        one-time work in a background task on the loop, so the first prompt costs what a
        later one does — the history file (created on the writer thread), the git
        snapshot, the checkpoint index (on a thread), the tools' cards, the skills and
        rules scan. Nothing here is sent anywhere; a failure only means the first prompt
        does the work itself (and reports what goes wrong there)."""
        if self._warming is None:
            self._warming = asyncio.get_running_loop().create_task(self._warm())

    async def _warm(self) -> None:
        await asyncio.sleep(0)  # session/create's answer goes out first
        self.session.store.open_ahead()  # on the writer thread
        try:
            await self.git_snapshot()
            await asyncio.to_thread(self.session.checkpoints.load)  # a resumed session's index
            await asyncio.sleep(0)  # a prompt that came meanwhile is read
            import sema_rpc.engine.loop.compaction
            import sema_rpc.engine.loop.conversation
            import sema_rpc.engine.loop.run_tools  # noqa: F401

            # The tools' cards (generated schemas). Their modules load at a tool's first
            # call, a few ms for the one called, as in a one-shot: loading all of them
            # here cost every session ~45 ms of CPU whether or not it ever called one.
            setup = self.turn_setup()
            await asyncio.sleep(0)
            # The prompt's fixed part, counted once per distinct content: the first turn
            # finds it counted (same git snapshot, same tools).
            self.session.tokens.set_overhead(setup.system_prompt, setup.specs)
            await asyncio.sleep(0)
            load_rules(self.session.working_dir)
            # The wire's models are plain classes (protocol_plain/): nothing to build.
        except Exception:
            log.debug("first-turn warm-up failed", exc_info=True)

    async def git_snapshot(self) -> None:
        """Once per session (shared by the warm-up, a resume's token count and the first
        prompt): a system prompt that changed every turn would defeat the provider's
        prompt cache."""
        if self._git_task is None:
            self._git_task = asyncio.ensure_future(
                run_sync_in_thread(git_status_summary, self.session.working_dir)
            )
        self.git_status = await asyncio.shield(self._git_task)
        self._git_checked = True

    def turn_setup(self) -> TurnSetup:
        from sema_rpc.tools.registry import agent_tools, builtin_tools

        s = self.session
        plan = s.mode == "Plan"
        skills = list_skills(s.working_dir)
        wanted = None if s.use_tools is None else set(s.use_tools)
        mcp = [t for t in self.mcp_tools if wanted is None or t.name in wanted]
        extras = agent_tools(s.working_dir, s.use_tools, plan, has_skills=bool(skills))
        offered = [*builtin_tools(s.use_tools, plan_mode=plan), *extras]
        if not plan:  # MCP tools are never read-only: Plan mode does not offer them
            offered += mcp
        accepted = {
            t.name: t for t in [*builtin_tools(s.use_tools, plan_mode=False), *extras, *mcp]
        }
        specs = [ToolSpec(t.name, t.description, t.input_schema()) for t in offered]
        system = build_system_prompt(
            s.working_dir,
            s.mode,
            skills_summary=skill_summaries(skills),
            git_status=self.git_status,
        )
        if s.client_system_prompt is not None:
            how, text = s.client_system_prompt
            system = text if how == "override" else f"{system}\n\n{text}"
        return TurnSetup(offered, accepted, specs, system)

    async def prepare(
        self, user_input: str | list[ContentBlock]
    ) -> tuple[list[ContentBlock], TurnSetup]:
        s = self.session
        if not self._git_checked:
            await self.git_snapshot()
        setup = self.turn_setup()
        blocks = await self.input_blocks(user_input)
        if not s.history:
            blocks += self.first_query_blocks(setup)
        if s.mode == "Plan" and not self.plan_reminded:
            blocks.append(TextBlock(text=plan_mode_reminder()))
            self.plan_reminded = True
        return blocks, setup

    async def input_blocks(self, user_input: str | list[ContentBlock]) -> list[ContentBlock]:
        """One user input as content: its custom command expanded and its @references
        resolved (with their `file:reference`). A steer joining a running turn is just
        this; a prompt starting a turn adds its reminders.

        Content (inputs.to_content) keeps its order: a custom command in its first block
        expands there, @references of every typed text block are resolved (never of a
        resource's content), images pass through."""
        s = self.session
        content = [TextBlock(text=user_input)] if isinstance(user_input, str) else user_input
        blocks: list[ContentBlock] = []
        typed: list[str] = []
        for i, block in enumerate(content):
            if isinstance(block, TextBlock) and not is_resource(block):
                text = (_expand(block.text, s.working_dir) if i == 0 else None) or block.text
                typed.append(text)
                block = TextBlock(text=text)
            blocks.append(block)
        text = "\n".join(typed)
        if "@" not in text:  # no reference: the references module (and Read) stay unloaded
            return blocks
        from sema_rpc.engine.prompt.references import resolve_references_async

        refs = await resolve_references_async(text, s.working_dir, s.read_files)
        if refs.references:
            from sema_rpc.protocol import FileReferenceParams

            s.bus.emit(FileReferenceParams(references=refs.references))
        return [*blocks, *(TextBlock(text=r) for r in refs.reminders)]

    def first_query_blocks(self, setup: TurnSetup) -> list[ContentBlock]:
        rules = load_rules(self.session.working_dir)
        todos = any(t.name == "TodoWrite" for t in setup.offered)
        return [TextBlock(text=r) for r in first_query_reminders(rules, todos_enabled=todos)]

    def standing_reminders(self) -> list[ContentBlock]:
        """What a fresh context must carry again (after compaction): the first-query
        reminders, and the Plan-mode reminder in Plan mode."""
        blocks = self.first_query_blocks(self.turn_setup())
        if self.session.mode == "Plan":
            blocks.append(TextBlock(text=plan_mode_reminder()))
        return blocks

    def context_cleared(self) -> None:
        """`/clear`: the next query reminds as a session's first one does (the first-query
        blocks follow from the empty history; the Plan reminder from this)."""
        self.plan_reminded = False

    def mode_changed(self, mode: Mode) -> None:
        if mode == "Plan":
            self.plan_reminded = False  # entering Plan mode again reminds again

    def tool_list(self) -> list[ToolListItem]:
        from sema_rpc.protocol import ToolListItem
        from sema_rpc.tools.registry import agent_tools, builtin_tools

        s = self.session
        setup = self.turn_setup()
        offered = {t.name for t in setup.offered}
        everything: list[tuple[Tool, Literal["builtin", "skill", "mcp"]]] = [
            (t, "builtin") for t in builtin_tools(None)
        ]
        everything += [
            (t, "skill" if t.name == "Skill" else "builtin")
            for t in agent_tools(s.working_dir, None, s.mode == "Plan")
        ]
        everything += [(t, "mcp") for t in self.mcp_tools]
        return [
            ToolListItem(
                name=t.name,
                description=t.description,
                source=source,
                enabled=t.name in offered,
                read_only=bool(t.read_only),
            )
            for t, source in everything
        ]


def subagent_setup(
    working_dir: Path, tool_names: list[str], accepted: dict[str, Any], system_prompt: str
) -> TurnSetup:
    """The tools and prompt of a subagent: a subset of the turn's tools, never nested.

    Task is never offered to a subagent, but it is accepted by name so that a call the
    model makes anyway is refused with the reason (subagents cannot nest) rather than
    reported as an unknown tool."""
    tools = [accepted[name] for name in tool_names if name in accepted]
    specs = [ToolSpec(t.name, t.description, t.input_schema()) for t in tools]
    by_name = {t.name: t for t in tools}
    if "Task" in accepted:
        by_name.setdefault("Task", accepted["Task"])
    return TurnSetup(tools, by_name, specs, system_prompt)


def _expand(text: str, working_dir: Path) -> str | None:
    """The custom command `text` names, expanded; its module loads only for a `/`."""
    if not text.lstrip().startswith("/"):
        return None
    from sema_rpc.core.project.custom_commands import expand

    return expand(text, working_dir)
