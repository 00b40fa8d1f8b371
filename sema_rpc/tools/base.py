"""The contract every tool implements.

A tool is a class with an `Input` model: for the built-in tools the plain form
(tools/input_plain.py) of a pydantic declaration (tools/input_models.py), so that
offering the tools and running a call with plainly valid arguments load no pydantic; for
any other tool (MCP, a test's) a pydantic `ToolInput` (tools/input.py). The engine
(engine/loop/run_tools.py) validates the model's arguments against `Input`, calls
`validate_input`, asks for permission when `permission()` returns a `PermissionAsk`, then
awaits `call`. A tool reports
failures by returning `ToolOutput(is_error=True, ...)` or raising `ToolError`; any
other exception is caught by the engine and becomes an error result too, so a
broken tool can never end a turn.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from sema_rpc.core.policy.permissions import PermissionAsk
from sema_rpc.plain_record import Record
from sema_rpc.sandbox.settings import SandboxSettings

if TYPE_CHECKING:
    from sema_rpc.protocol import Mode
    from sema_rpc.tools.input import ToolInput
    from sema_rpc.tools.input_plain import ToolInput as PlainToolInput

__all__ = ["PermissionAsk"]  # re-exported: every tool names it with the rest of this contract


class ToolError(Exception):
    """A failure to report to the model as an error tool result (not a bug)."""


# Plain classes rather than dataclasses: every session's start loads this module, and a
# dataclass costs its creation there. ToolContext and ToolOutput are copied with their
# `replace` (plain_record.py).


class FileSnapshot:
    """What a file looked like when the Read tool last returned it (Write/Edit precondition)."""

    __slots__ = ("inode", "mtime_ns", "size")

    def __init__(self, mtime_ns: int, size: int, inode: int) -> None:
        self.mtime_ns = mtime_ns
        self.size = size
        self.inode = inode
        """Catches a file renamed over the one that was read (same size, copied mtime)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileSnapshot):
            return NotImplemented
        return (self.mtime_ns, self.size, self.inode) == (other.mtime_ns, other.size, other.inode)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"FileSnapshot(mtime_ns={self.mtime_ns}, size={self.size}, inode={self.inode})"


class SubagentRun(Protocol):
    """Runs a subagent to its end: the Task tool's service."""

    async def __call__(
        self, subagent_type: str, description: str, prompt: str, *, tool_call_id: str = ""
    ) -> str:
        """The subagent's final text; raises ToolError when it cannot run or fails."""
        ...


class FileEffect:
    """The files a call may change (`Tool.changes_files`)."""

    __slots__ = ("mentions", "paths", "workspace")

    def __init__(
        self, paths: tuple[Path, ...] = (), workspace: bool = False, mentions: str = ""
    ) -> None:
        self.paths = paths
        """Files it names (Write, Edit)."""
        self.workspace = workspace
        """It may change any file in the workspace (a command)."""
        self.mentions = mentions
        """Text that may name the files it changes (a command line)."""


class ChangeWatch(Protocol):
    """Sees what a tool call does to files (the engine's checkpoints): `before` is awaited
    just before the call runs, `after` once it ended (also when it failed or was
    cancelled) with what `before` returned. Contract: neither raises."""

    async def before(self, tool: str, effect: FileEffect, ctx: ToolContext) -> Any: ...

    async def after(self, token: Any) -> None: ...


class EditorFiles(Protocol):
    """The editor's view of the workspace's files (ACP's `fs/*`), lent by a wire dialect
    whose client offers it: Read then sees unsaved buffers, Write and Edit update open
    buffers. Paths are absolute and already confined and consented to by the tools; the
    methods raise `OSError` when the editor refuses or fails."""

    can_read: bool
    can_write: bool

    async def read_text(self, path: Path) -> str: ...

    async def write_text(self, path: Path, text: str) -> None: ...


class CommandRunner(Protocol):
    """Runs one Bash command elsewhere than in a child process (validated, consented)."""

    async def run(
        self, argv: list[str], env: dict[str, str], timeout_ms: int, ctx: ToolContext
    ) -> ToolOutput:
        """The output and status of `argv` as Bash reports them. `argv` is the shell with
        the command, wrapped in the session's sandbox when it has one (the wrapper confines
        itself, then execs the shell: the sandbox holds wherever the process starts);
        `env` is what Bash adds to or changes in the environment (pagers off, git's safety
        settings, the sandbox's private `TMPDIR`)."""
        ...


class ToolServices:
    """What the engine lends the tools of one session (the main agent's and its
    subagents'). A service left None is not available: the tool says so to the model."""

    def __init__(
        self,
        todos: list[dict[str, Any]] | None = None,
        on_todos: Callable[[list[dict[str, Any]]], None] | None = None,
        ask_user: Callable[[list[dict[str, Any]], str], Awaitable[Any]] | None = None,
        plan_exit: Callable[[str, str, str], Awaitable[Any]] | None = None,
        run_subagent: SubagentRun | None = None,
        changes: ChangeWatch | None = None,
        editor_files: EditorFiles | None = None,
        sandbox: SandboxSettings | None = None,
        command_runner: CommandRunner | None = None,
    ) -> None:
        self.todos: list[dict[str, Any]] = [] if todos is None else todos
        """The session's todo list (TodoWrite replaces it; `/clear` empties it)."""
        self.on_todos = on_todos
        """Called with the new list after TodoWrite (the engine records and announces it)."""
        self.ask_user = ask_user
        """AskUserQuestion: (wire-shaped questions, the asking call's id) →
        `{"answers": {question: answer}}`, or None when the client cannot answer."""
        self.plan_exit = plan_exit
        """ExitPlanMode: (plan path, plan text, the asking call's id) → the client's
        decision, or None when the client cannot answer."""
        self.run_subagent = run_subagent
        """Task: set for the duration of a main-agent turn."""
        self.changes = changes
        """Sees the files each call that changes files touches (`Tool.changes_files`)."""
        self.editor_files = editor_files
        """Files through the editor (see EditorFiles); None: the disk."""
        self.sandbox: SandboxSettings = SandboxSettings() if sandbox is None else sandbox
        """The session's OS sandbox for the commands the model runs (mode `off`: none)."""
        self.command_runner = command_runner
        """Where Bash runs its command (e.g. the ACP client's terminal); None: a child
        process of this server. Bash's checks and consent come first either way."""


class RebuildContext:
    """A tool's result that changes the turn itself (ExitPlanMode approved): the loop
    switches to `new_mode` and rebuilds its tools and system prompt; with a
    `rebuild_message` the conversation restarts from that user message."""

    __slots__ = ("new_mode", "rebuild_message")

    def __init__(self, new_mode: Mode = "Agent", rebuild_message: str | None = None) -> None:
        self.new_mode: Mode = new_mode
        self.rebuild_message = rebuild_message


def _drop_update(_text: str) -> None:
    pass


class ToolContext(Record):
    _fields = (
        "working_dir",
        "session_id",
        "agent_id",
        "tool_call_id",
        "read_files",
        "emit_update",
        "services",
        "plan_mode",
    )

    working_dir: Path
    session_id: str
    agent_id: str
    tool_call_id: str
    read_files: dict[str, FileSnapshot]
    """Keyed by resolved absolute path; shared by every tool of a session."""
    emit_update: Callable[[str], None]
    """Streams partial output (e.g. Bash stdout) to the client as tool:execution:update."""
    services: ToolServices
    """The engine's services for this session's tools (shared, not copied)."""
    plan_mode: bool

    def __init__(
        self,
        working_dir: Path,
        session_id: str,
        agent_id: str = "main",
        tool_call_id: str = "",
        read_files: dict[str, FileSnapshot] | None = None,
        emit_update: Callable[[str], None] = _drop_update,
        services: ToolServices | None = None,
        plan_mode: bool = False,
    ) -> None:
        self.working_dir = working_dir
        self.session_id = session_id
        self.agent_id = agent_id
        self.tool_call_id = tool_call_id
        self.read_files = {} if read_files is None else read_files
        self.emit_update = emit_update
        self.services = ToolServices() if services is None else services
        self.plan_mode = plan_mode


class ToolOutput(Record):
    __slots__ = ("content", "control", "display", "is_error", "summary")
    _fields = ("content", "summary", "is_error", "display", "control")

    content: str
    """What the model receives as the tool result."""
    summary: str
    """One line for the editor's tool card."""
    is_error: bool
    display: str | None
    """Richer content for the editor (e.g. a unified diff), when it differs from `content`."""
    control: RebuildContext | None
    """A change of the turn for the loop to apply after the batch (ExitPlanMode)."""

    def __init__(
        self,
        content: str,
        summary: str = "",
        is_error: bool = False,
        display: str | None = None,
        control: RebuildContext | None = None,
    ) -> None:
        self.content = content
        self.summary = summary
        self.is_error = is_error
        self.display = display
        self.control = control


class Tool:
    name: ClassVar[str]
    description: ClassVar[str]
    Input: ClassVar[type[ToolInput] | type[PlainToolInput]]
    read_only: ClassVar[bool] = False

    def is_read_only(self, args: Any) -> bool:
        """Whether this call may run concurrently with other read-only calls."""
        return self.read_only

    def allowed_in_plan_mode(self, args: Any) -> bool:
        """Whether Plan mode lets this call run. Read-only calls, plus calls that change
        nothing in the project although they are not concurrency-safe (ExitPlanMode, a
        Task whose subagent only reads)."""
        return self.is_read_only(args)

    def title(self, args: Any) -> str:
        """A short human title for the call, e.g. `Read src/app.py`."""
        return self.name

    async def validate_input(self, args: Any, ctx: ToolContext) -> str | None:
        """Return an error message to refuse the call before it runs, or None."""
        return None

    def changes_files(self, args: Any, ctx: ToolContext) -> FileEffect | None:
        """The files this call may change (None: none). What it declares here is shown
        per turn (`turn:diff`) and can be rewound (engine/store/checkpoints.py)."""
        return None

    def permission(self, args: Any, ctx: ToolContext) -> PermissionAsk | None:
        """What to ask the editor before running this call, or None if no consent is needed."""
        return None

    async def call(self, args: Any, ctx: ToolContext) -> ToolOutput:
        raise NotImplementedError

    _schema_cache: ClassVar[dict[str, Any] | None] = None

    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        """The JSON Schema of `Input` as the model sees it: generated ahead for the
        built-in tools (tools/schemas.py), else built here, once per class."""
        if cls.__dict__.get("_schema_cache") is None:
            card = generated_cards().get(schema_key(cls))
            cls._schema_cache = card.input_schema if card is not None else build_input_schema(cls)
        assert cls._schema_cache is not None
        return cls._schema_cache


class ToolCard:
    """What a model request and a tool list need of a tool class, without its module:
    generated ahead for the built-in tools (tools/schemas.py) so that offering a tool
    does not import it (tools/registry.py)."""

    __slots__ = ("description", "input_schema", "name", "read_only", "ref")

    def __init__(
        self, ref: str, name: str, description: str, read_only: bool, input_schema: dict[str, Any]
    ) -> None:
        self.ref = ref  # `module:QualName` of the class (`schema_key`)
        self.name = name
        self.description = description
        self.read_only = read_only
        self.input_schema = input_schema

    @classmethod
    def of(cls, tool: type[Tool]) -> ToolCard:
        """The card of a tool class as it is now (what the generated file stores)."""
        return cls(
            schema_key(tool), tool.name, tool.description, tool.read_only, build_input_schema(tool)
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "read_only": self.read_only,
            "input_schema": self.input_schema,
        }


TOOL_SCHEMAS_FILE = Path(__file__).resolve().parent.parent / "data" / "tool_schemas.json"
"""The built-in tools' cards (name, description, read-only flag, input schema), keyed
`module:QualName`, written by `make generate` (tools/schemas.py)."""
_generated: list[dict[str, ToolCard]] = []


def schema_key(cls: type[Tool]) -> str:
    """A tool class's key in TOOL_SCHEMAS_FILE: the class itself (a subclass has its own)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def build_input_schema(cls: type[Tool]) -> dict[str, Any]:
    """What pydantic makes of the tool's `Input`, without the title."""
    schema = cls.Input.model_json_schema()
    schema.pop("title", None)
    return schema


def generated_cards() -> dict[str, ToolCard]:
    """TOOL_SCHEMAS_FILE's cards by key; empty when the file is missing or unreadable (a
    source checkout mid-change: the tools are then imported and described as they are)."""
    if not _generated:
        cards: dict[str, ToolCard] = {}
        try:
            stored = json.loads(TOOL_SCHEMAS_FILE.read_text("utf-8"))
            for ref, c in stored.items():
                cards[ref] = ToolCard(
                    ref, c["name"], c["description"], c["read_only"], c["input_schema"]
                )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            cards = {}
        _generated.append(cards)
    return _generated[0]
