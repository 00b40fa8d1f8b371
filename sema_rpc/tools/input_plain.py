"""The built-in tools' inputs as plain classes: what a tool call's arguments are
validated with (each tool's `Input`).

Generated from the pydantic declarations in sema_rpc/tools/input_models.py (the input
schemas' and the error messages' source) by `make generate` (python -m
sema_rpc.plain_gen); do not edit by hand. What a plain class is and how it follows its
declaration: sema_rpc/plain_model.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sema_rpc.plain_checks import (
    check_bool,
    check_int_range,
    check_len,
    check_list,
    check_literal,
    check_model,
    check_optional,
    check_optional_str,
    check_str,
)
from sema_rpc.plain_model import Field, PlainModel, Private


class ToolInput(PlainModel):
    __plain_source__ = "sema_rpc.tools.input:ToolInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = ()


class AskUserQuestionInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:AskUserQuestionInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("questions", check_len(check_list(check_model(lambda: Question)), 1, 4)),
    )
    questions: list[Question]

    if TYPE_CHECKING:

        def __init__(self, *, questions: Any) -> None: ...  # fmt: skip


class BashInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:BashInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("command", check_str, scalar=True),
        Field("timeout", check_optional(check_int_range(1, None)), default=None, scalar=True),
        Field("description", check_optional_str, default=None, scalar=True),
        Field("outside_sandbox", check_optional(check_bool), default=None, scalar=True),
    )
    command: str
    timeout: int | None
    description: str | None
    outside_sandbox: bool | None

    if TYPE_CHECKING:

        def __init__(self, *, command: Any, timeout: Any = ..., description: Any = ..., outside_sandbox: Any = ...) -> None: ...  # fmt: skip


class EditInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:EditInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("file_path", check_str, scalar=True),
        Field("old_string", check_str, scalar=True),
        Field("new_string", check_str, scalar=True),
        Field("replace_all", check_bool, default=False, scalar=True),
    )
    _change: Private[Any] = Private(None)
    _buffer: Private[str | None] = Private(None)
    file_path: str
    old_string: str
    new_string: str
    replace_all: bool

    if TYPE_CHECKING:

        def __init__(self, *, file_path: Any, old_string: Any, new_string: Any, replace_all: Any = ...) -> None: ...  # fmt: skip


class ExitPlanModeInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:ExitPlanModeInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("plan", check_len(check_str, 1, None), scalar=True),
    )
    plan: str

    if TYPE_CHECKING:

        def __init__(self, *, plan: Any) -> None: ...  # fmt: skip


class GlobInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:GlobInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("pattern", check_str, scalar=True),
        Field("path", check_optional_str, default=None, scalar=True),
    )
    pattern: str
    path: str | None

    if TYPE_CHECKING:

        def __init__(self, *, pattern: Any, path: Any = ...) -> None: ...  # fmt: skip


class GrepInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:GrepInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("pattern", check_str, scalar=True),
        Field("path", check_optional_str, default=None, scalar=True),
        Field("glob", check_optional_str, default=None, scalar=True),
        Field(
            "output_mode",
            check_literal("content", "files_with_matches", "count"),
            default="files_with_matches",
            scalar=True,
        ),
        Field(
            "context_before",
            check_optional(check_int_range(0, None)),
            alias="-B",
            default=None,
            scalar=True,
        ),
        Field(
            "context_after",
            check_optional(check_int_range(0, None)),
            alias="-A",
            default=None,
            scalar=True,
        ),
        Field(
            "context",
            check_optional(check_int_range(0, None)),
            alias="-C",
            default=None,
            scalar=True,
        ),
        Field("line_numbers", check_optional(check_bool), alias="-n", default=None, scalar=True),
        Field("case_insensitive", check_bool, alias="-i", default=False, scalar=True),
        Field("type", check_optional_str, default=None, scalar=True),
        Field("head_limit", check_optional(check_int_range(0, None)), default=None, scalar=True),
        Field("multiline", check_bool, default=False, scalar=True),
    )
    pattern: str
    path: str | None
    glob: str | None
    output_mode: Literal["content", "files_with_matches", "count"]
    context_before: int | None
    context_after: int | None
    context: int | None
    line_numbers: bool | None
    case_insensitive: bool
    type: str | None
    head_limit: int | None
    multiline: bool

    if TYPE_CHECKING:

        def __init__(self, *, pattern: Any, path: Any = ..., glob: Any = ..., output_mode: Any = ..., context_before: Any = ..., context_after: Any = ..., context: Any = ..., line_numbers: Any = ..., case_insensitive: Any = ..., type: Any = ..., head_limit: Any = ..., multiline: Any = ...) -> None: ...  # fmt: skip


class Question(PlainModel):
    __plain_source__ = "sema_rpc.tools.input_models:Question"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("question", check_len(check_str, 1, None), scalar=True),
        Field("header", check_len(check_str, 1, 30), scalar=True),
        Field("options", check_len(check_list(check_model(lambda: QuestionOption)), 2, 4)),
        Field("multiSelect", check_bool, default=False, scalar=True),
    )
    question: str
    header: str
    options: list[QuestionOption]
    multiSelect: bool

    if TYPE_CHECKING:

        def __init__(self, *, question: Any, header: Any, options: Any, multiSelect: Any = ...) -> None: ...  # fmt: skip


class QuestionOption(PlainModel):
    __plain_source__ = "sema_rpc.tools.input_models:QuestionOption"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("label", check_len(check_str, 1, None), scalar=True),
        Field("description", check_str, default="", scalar=True),
    )
    label: str
    description: str

    if TYPE_CHECKING:

        def __init__(self, *, label: Any, description: Any = ...) -> None: ...  # fmt: skip


class ReadInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:ReadInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("file_path", check_str, scalar=True),
        Field("offset", check_optional(check_int_range(0, None)), default=None, scalar=True),
        Field("limit", check_optional(check_int_range(1, None)), default=None, scalar=True),
    )
    file_path: str
    offset: int | None
    limit: int | None

    if TYPE_CHECKING:

        def __init__(self, *, file_path: Any, offset: Any = ..., limit: Any = ...) -> None: ...  # fmt: skip


class SkillInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:SkillInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("skill", check_str, scalar=True),
        Field("args", check_optional_str, default=None, scalar=True),
    )
    skill: str
    args: str | None

    if TYPE_CHECKING:

        def __init__(self, *, skill: Any, args: Any = ...) -> None: ...  # fmt: skip


class TaskInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:TaskInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("description", check_len(check_str, 1, None), scalar=True),
        Field("prompt", check_len(check_str, 1, None), scalar=True),
        Field("subagent_type", check_str, scalar=True),
    )
    description: str
    prompt: str
    subagent_type: str

    if TYPE_CHECKING:

        def __init__(self, *, description: Any, prompt: Any, subagent_type: Any) -> None: ...  # fmt: skip


class TodoItem(PlainModel):
    __plain_source__ = "sema_rpc.tools.input_models:TodoItem"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("content", check_len(check_str, 1, None), scalar=True),
        Field("status", check_literal("pending", "in_progress", "completed"), scalar=True),
        Field("activeForm", check_len(check_str, 1, None), scalar=True),
    )
    content: str
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str

    if TYPE_CHECKING:

        def __init__(self, *, content: Any, status: Any, activeForm: Any) -> None: ...  # fmt: skip


class TodoWriteInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:TodoWriteInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("todos", check_list(check_model(lambda: TodoItem))),
    )
    todos: list[TodoItem]

    if TYPE_CHECKING:

        def __init__(self, *, todos: Any) -> None: ...  # fmt: skip


class WriteInput(ToolInput):
    __plain_source__ = "sema_rpc.tools.input_models:WriteInput"
    __plain_fields__: ClassVar[tuple[Field, ...]] = (
        Field("file_path", check_str, scalar=True),
        Field("content", check_str, scalar=True),
    )
    _change: Private[Any] = Private(None)
    _buffer: Private[str | None] = Private(None)
    file_path: str
    content: str

    if TYPE_CHECKING:

        def __init__(self, *, file_path: Any, content: Any) -> None: ...  # fmt: skip


__all__ = [
    "AskUserQuestionInput",
    "BashInput",
    "EditInput",
    "ExitPlanModeInput",
    "GlobInput",
    "GrepInput",
    "Question",
    "QuestionOption",
    "ReadInput",
    "SkillInput",
    "TaskInput",
    "TodoItem",
    "TodoWriteInput",
    "ToolInput",
    "WriteInput",
]
