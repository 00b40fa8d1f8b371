"""Subagent definitions for the Task tool.

Built in:
- `Explore`: the quick model, read-only tools (Read, Glob, Grep), a search-focused prompt;
- `Plan`: the session's model, read-only tools, a planning prompt.

User definitions, project first (a definition wins over a built-in of the same name):
- `<working dir>/.sema/agents/*.md` (source `project`)
- `$SEMA_ROOT/agents/*.md`           (source `user`)

with frontmatter `name` (default: the file name), `description` (required: the main
agent chooses by it), `tools` (comma list; omitted or `*` = every tool the main agent
has) and `model` (`inherit` (default) | `quick` | `main` | a model spec); the body is the
subagent's system prompt.

A subagent never gets `SUBAGENT_EXCLUDED` tools: no nesting (Task), no talking to the
user (AskUserQuestion, ExitPlanMode), no touching the session's todo list (TodoWrite).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sema_rpc.core.config import sema_root
from sema_rpc.core.project.markdown_files import MarkdownFile, scan

if TYPE_CHECKING:
    from sema_rpc.core.config import ModelProfile

log = logging.getLogger(__name__)

READ_ONLY_TOOL_NAMES: frozenset[str] = frozenset({"Read", "Glob", "Grep"})
SUBAGENT_EXCLUDED: frozenset[str] = frozenset(
    {"Task", "AskUserQuestion", "ExitPlanMode", "TodoWrite"}
)

SUBAGENT_FOOTER = """You are a subagent started by the main agent with the Task tool. You work \
alone: you cannot ask the user anything. When you are done, answer with a final message: it is \
the only thing the main agent receives, so make it complete and self-contained (paths as \
path:line, the facts found, what you could not find)."""

EXPLORE_PROMPT = """You are a fast code-search specialist. Your job: find the files, symbols and \
code paths relevant to the request, and report them precisely.

- Use Glob to find files by name pattern, Grep to search contents (regular expressions), and \
Read to read the files that matter. Issue several independent searches in one response: they \
run in parallel.
- You are read-only: you cannot edit files or run commands.
- Match the thoroughness the request asks for ("quick", "medium", "very thorough"); by default \
stop once the answer is clear.
- Report paths relative to the working directory with line numbers, and quote only the lines \
that matter."""

PLAN_PROMPT = """You are a software architect. Your job: study the code relevant to the \
request and design an implementation plan; you do not implement it.

- Explore with Glob, Grep and Read; you are read-only.
- Follow the existing conventions and architecture; prefer the smallest change that solves the \
problem well.
- Your answer is a plan: the approach and why, the files to change and what changes in each, \
the order of the steps, the risks and edge cases, and how to verify the result (tests)."""


class AgentDef:
    __slots__ = ("description", "model", "name", "path", "source", "system_prompt", "tools")

    def __init__(
        self,
        name: str,
        description: str,
        system_prompt: str,
        tools: tuple[str, ...] | None = None,
        model: str = "inherit",
        source: Literal["builtin", "project", "user"] = "builtin",
        path: Path | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.system_prompt = system_prompt
        self.tools = tools
        """Tool names; None = every tool the main agent has (minus SUBAGENT_EXCLUDED)."""
        self.model = model
        """`inherit` | `quick` | `main` | a model spec (`provider/model-id` or a profile)."""
        self.source: Literal["builtin", "project", "user"] = source
        self.path = path

    @property
    def read_only(self) -> bool:
        """True when every tool it may use is read-only (Plan mode lets it run)."""
        return self.tools is not None and set(self.tools) <= READ_ONLY_TOOL_NAMES

    def full_prompt(self) -> str:
        """The subagent's system prompt section (the engine adds the environment)."""
        return f"{self.system_prompt.strip()}\n\n{SUBAGENT_FOOTER}"


BUILTIN_AGENTS: tuple[AgentDef, ...] = (
    AgentDef(
        name="Explore",
        description=(
            "Fast, read-only agent for exploring a codebase: finding files by pattern, searching "
            "code for keywords, answering questions about how the code works. Say how thorough "
            'to be ("quick", "medium" or "very thorough").'
        ),
        system_prompt=EXPLORE_PROMPT,
        tools=("Read", "Glob", "Grep"),
        model="quick",
    ),
    AgentDef(
        name="Plan",
        description=(
            "Read-only software architect: studies the relevant code and returns a step-by-step "
            "implementation plan, the files to change, and the trade-offs."
        ),
        system_prompt=PLAN_PROMPT,
        tools=("Read", "Glob", "Grep"),
        model="inherit",
    ),
)


def agent_dirs(working_dir: Path) -> list[tuple[Path, Literal["project", "user"]]]:
    return [
        (Path(working_dir) / ".sema" / "agents", "project"),
        (sema_root() / "agents", "user"),
    ]


_warned: set[str] = set()


def _agent(file: MarkdownFile, source: Literal["project", "user"]) -> AgentDef | None:
    name = file.meta.get("name", "").strip() or file.path.stem
    description = file.meta.get("description", "").strip()
    if not description:
        if str(file.path) not in _warned:
            _warned.add(str(file.path))
            log.warning("skipping agent %s: frontmatter lacks a description", file.path)
        return None
    raw_tools = file.meta.get("tools", "").strip()
    tools = None
    if raw_tools and raw_tools != "*":
        tools = tuple(t.strip() for t in raw_tools.split(",") if t.strip()) or None
    return AgentDef(
        name=name,
        description=description,
        system_prompt=file.body.strip() or f"You are the {name} agent. {description}",
        tools=tools,
        model=file.meta.get("model", "").strip() or "inherit",
        source=source,
        path=file.path,
    )


def list_agents(working_dir: Path) -> list[AgentDef]:
    """Built-ins first (unless overridden), then project and user definitions; cached."""
    custom: dict[str, AgentDef] = {}
    for root, source in agent_dirs(working_dir):
        for file in scan(root, max_depth=0):
            agent = _agent(file, source)
            if agent is not None and agent.name not in custom:
                custom[agent.name] = agent
    agents = [custom.pop(a.name, a) for a in BUILTIN_AGENTS]
    return agents + sorted(custom.values(), key=lambda a: a.name)


def find_agent(working_dir: Path, name: str) -> AgentDef | None:
    return next((a for a in list_agents(working_dir) if a.name == name), None)


def subagent_tool_names(agent: AgentDef, available: list[str]) -> list[str]:
    """The tools (in `available` order) a subagent of this definition gets.

    `available` is what the main agent has this turn (already filtered by useTools, Plan
    mode and MCP). Unknown names in the definition are ignored.
    """
    wanted = None if agent.tools is None else set(agent.tools)
    return [n for n in available if n not in SUBAGENT_EXCLUDED and (wanted is None or n in wanted)]


def resolve_agent_model(agent: AgentDef, session_profile: ModelProfile) -> ModelProfile:
    """The model a subagent runs on.

    `inherit`/`main` → the session's model; `quick` → the `quick` pointer of models.json
    when one is configured, else the session's model; anything else is a model spec, the
    session's model when it does not resolve.
    """
    from sema_rpc.core.config import ConfigError, load_models, resolve_model

    if agent.model in ("inherit", "main", ""):
        return session_profile
    try:
        if agent.model == "quick":
            if "quick" not in load_models().pointers:
                return session_profile
            return resolve_model(None, pointer="quick") or session_profile
        return resolve_model(agent.model) or session_profile
    except ConfigError as exc:
        log.warning(
            "agent %s: model %r unusable (%s); using the session's", agent.name, agent.model, exc
        )
        return session_profile


def task_tool_description(agents: list[AgentDef]) -> str:
    """The Task tool's description, listing the agents the model can start."""
    lines = [
        "Starts a subagent that works on a task on its own and returns its final answer.",
        "- The subagent has its own history: give it a complete, self-contained `prompt` (what "
        "to do, what to return); it cannot see this conversation or ask the user.",
        "- `description` is a short (3-5 word) label; `subagent_type` names the agent.",
        "- Independent searches are cheaper in Explore than in your own context. Subagents "
        "cannot start subagents.",
        "",
        "Available agents (subagent_type: description [tools]):",
    ]
    for agent in agents:
        tools = ", ".join(agent.tools) if agent.tools is not None else "all tools"
        lines.append(f"- {agent.name}: {agent.description} [{tools}]")
    return "\n".join(lines)
