"""The built-in tools' inputs as pydantic declarations: the source of truth for what each
tool accepts.

The tool cards' input schemas (tools/schemas.py) and the error a model sees for arguments
a tool refuses are this module's. What runs is their plain form, tools/input_plain.py,
generated from here by `make generate` (sema_rpc/plain_gen.py): each tool's `Input`. This
module, and pydantic with it, loads only when a call's arguments are not plainly valid (a
value to coerce, a constraint broken, a key missing), to validate them and say why not.

A change here is a change of the tool's contract: run `make generate` (the plain forms and
the cards) and commit what it writes. A declaration's docstring would become its schema's
description: none has one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .input import ToolInput
from .limits import DEFAULT_TIMEOUT_MS, MAX_LINES, MAX_TIMEOUT_MS

if TYPE_CHECKING:
    from .write import FileChange

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
    "WriteInput",
]


# --------------------------------------------------------------------------- read.py


class ReadInput(ToolInput):
    file_path: str = Field(
        description="Path of the file to read (absolute, or relative to the working directory)."
    )
    offset: int | None = Field(
        None, ge=0, description="1-based line number to start reading from. Only for large files."
    )
    limit: int | None = Field(
        None, ge=1, description=f"Number of lines to read (default and maximum {MAX_LINES})."
    )


# --------------------------------------------------------------------------- glob.py


class GlobInput(ToolInput):
    pattern: str = Field(description='Glob pattern, e.g. "**/*.py" or "src/**/*.{ts,tsx}".')
    path: str | None = Field(
        None,
        description="Directory to search in (default: the working directory). Omit it rather "
        'than passing "." or "undefined".',
    )


# --------------------------------------------------------------------------- grep.py


class GrepInput(ToolInput):
    model_config = ConfigDict(extra="ignore", defer_build=True, populate_by_name=True)

    pattern: str = Field(description="Regular expression to search for in file contents.")
    path: str | None = Field(
        None, description="File or directory to search (default: the working directory)."
    )
    glob: str | None = Field(
        None,
        description='Only search files matching this glob, e.g. "*.js" or "src/**/*.{ts,tsx}"; '
        'a leading "!" excludes.',
    )
    output_mode: Literal["content", "files_with_matches", "count"] = Field(
        "files_with_matches",
        description='"content": matching lines; "files_with_matches" (default): file paths; '
        '"count": matching line counts per file.',
    )
    context_before: int | None = Field(
        None, alias="-B", ge=0, description='Lines of context before each match ("content" only).'
    )
    context_after: int | None = Field(
        None, alias="-A", ge=0, description='Lines of context after each match ("content" only).'
    )
    context: int | None = Field(
        None, alias="-C", ge=0, description='Lines of context around each match ("content" only).'
    )
    line_numbers: bool | None = Field(
        None, alias="-n", description='Show line numbers ("content" only; default true).'
    )
    case_insensitive: bool = Field(False, alias="-i", description="Case-insensitive search.")
    type: str | None = Field(
        None, description='File type to search, e.g. "py", "js", "rust", "go" (ripgrep types).'
    )
    head_limit: int | None = Field(
        None,
        ge=0,
        description="Only the first N output lines / files / count entries (0 means no limit).",
    )
    multiline: bool = Field(
        False, description="Let the pattern span lines (`.` matches newlines too)."
    )


# --------------------------------------------------------------------------- bash.py


class BashInput(ToolInput):
    command: str = Field(description="The command to run.")
    timeout: int | None = Field(
        None,
        ge=1,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )
    description: str | None = Field(
        None, description="What the command does, in 5-10 words (shown to the user)."
    )
    outside_sandbox: bool | None = Field(
        None,
        description=(
            "Run outside the OS sandbox. Only after the sandbox refused something this "
            "command needs (the result said so); the user is asked every time."
        ),
    )


# --------------------------------------------------------------------------- write.py


class WriteInput(ToolInput):
    file_path: str = Field(
        description="Path of the file to write (absolute, or relative to the working directory)."
    )
    content: str = Field(description="The complete new content of the file.")
    _change: FileChange | None = PrivateAttr(default=None)
    _buffer: str | None = PrivateAttr(default=None)


# --------------------------------------------------------------------------- edit.py


class EditInput(ToolInput):
    file_path: str = Field(
        description="Path of the file to edit (absolute, or relative to the working directory)."
    )
    old_string: str = Field(description="The exact text to replace.")
    new_string: str = Field(description="The text to replace it with (must differ).")
    replace_all: bool = Field(False, description="Replace every occurrence of old_string.")
    _change: FileChange | None = PrivateAttr(default=None)
    _buffer: str | None = PrivateAttr(default=None)


# --------------------------------------------------------------------------- todo_write.py


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str = Field(min_length=1, description="What to do, imperative (e.g. 'Run tests').")
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str = Field(
        min_length=1, description="Present continuous form shown while active ('Running tests')."
    )


class TodoWriteInput(ToolInput):
    todos: list[TodoItem] = Field(description="The complete, updated todo list.")


# --------------------------------------------------------------------------- task.py


class TaskInput(ToolInput):
    description: str = Field(min_length=1, description="A short (3-5 word) label for the task.")
    prompt: str = Field(
        min_length=1, description="The complete, self-contained task for the subagent."
    )
    subagent_type: str = Field(description="The agent to start (see the list above).")


# --------------------------------------------------------------------------- skill.py


class SkillInput(ToolInput):
    skill: str = Field(description="The skill's name, as listed under Skills in the system prompt.")
    args: str | None = Field(None, description="Optional arguments for the skill.")


# --------------------------------------------------------------------------- ask_user_question.py


class QuestionOption(BaseModel):
    model_config = ConfigDict(extra="ignore")

    label: str = Field(min_length=1, description="The choice shown to the user (1-5 words).")
    description: str = Field("", description="What this choice means or implies.")


class Question(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question: str = Field(min_length=1, description="The full question, ending with '?'.")
    header: str = Field(
        min_length=1, max_length=30, description="A very short label for the question (≤12 chars)."
    )
    options: list[QuestionOption] = Field(
        min_length=2, max_length=4, description="2-4 choices; the user may also type an answer."
    )
    multiSelect: bool = Field(False, description="Whether the user may pick several options.")


class AskUserQuestionInput(ToolInput):
    questions: list[Question] = Field(
        min_length=1, max_length=4, description="1-4 questions to ask the user."
    )


# --------------------------------------------------------------------------- exit_plan_mode.py


class ExitPlanModeInput(ToolInput):
    plan: str = Field(
        min_length=1,
        description="The complete plan in markdown: goal, steps, files to change, verification.",
    )
