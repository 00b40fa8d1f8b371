"""Custom slash commands: markdown prompts the user runs as `/name args`.

Sources, project first (a project command wins a name clash):
- `<working dir>/.sema/commands/**/*.md`  (source `project`)
- `$SEMA_ROOT/commands/**/*.md`            (source `user`)

`frontend/test.md` is `/frontend:test`. Frontmatter `description` and `argument-hint`
are shown by the editor (`command/list`); without a description the first body line is
used. Expansion: the body with `$ARGUMENTS` replaced by the text after the command, or,
when the body has no `$ARGUMENTS`, the arguments appended on a new line.

`expand()` returns None for anything that is not a known custom command (including an
unknown `/x`, which goes to the model unchanged). System commands (`/clear`,
`/compact`) are the engine's and are checked before this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sema_rpc.core.config import sema_root
from sema_rpc.core.project.markdown_files import MarkdownFile, scan

ARGUMENTS = "$ARGUMENTS"
_COMMAND = re.compile(r"^/([A-Za-z0-9_][A-Za-z0-9_.:-]*)(?:\s+(.*))?$", re.DOTALL)
_VALID_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]*$")


@dataclass(frozen=True, slots=True)
class CommandInfo:
    name: str
    """Without the slash: `frontend:test`."""
    description: str
    argument_hint: str | None
    source: Literal["project", "user"]
    path: Path
    body: str

    def wire(self) -> dict[str, str | None]:
        """The `command/list` entry: {name, description, argumentHint, source}."""
        return {
            "name": self.name,
            "description": self.description,
            "argumentHint": self.argument_hint,
            "source": self.source,
        }


def command_dirs(working_dir: Path) -> list[tuple[Path, Literal["project", "user"]]]:
    return [
        (Path(working_dir) / ".sema" / "commands", "project"),
        (sema_root() / "commands", "user"),
    ]


def _info(file: MarkdownFile, source: Literal["project", "user"]) -> CommandInfo | None:
    name = file.rel[: -len(".md")].replace("/", ":")
    if not _VALID_NAME.match(name):
        return None
    body = file.body.strip()
    description = file.meta.get("description", "").strip()
    if not description:
        first = next((line.strip() for line in body.splitlines() if line.strip()), "")
        description = first.lstrip("# ")[:120]
    hint = file.meta.get("argument-hint", "").strip() or None
    return CommandInfo(name, description, hint, source, file.path, body)


_memo: dict[tuple[Path, ...], tuple[list[list[MarkdownFile]], dict[str, CommandInfo]]] = {}


def load_commands(working_dir: Path) -> dict[str, CommandInfo]:
    """Every custom command by name (project first). Cached by directory/file mtimes.

    The returned dict is shared: do not modify it.
    """
    dirs = command_dirs(working_dir)
    scanned = [(scan(root), source) for root, source in dirs]
    key = tuple(root for root, _ in dirs)
    lists = [files for files, _ in scanned]
    memo = _memo.get(key)
    if memo is not None and all(a is b for a, b in zip(memo[0], lists, strict=True)):
        return memo[1]  # scan() returned the lists it had cached: nothing changed
    commands: dict[str, CommandInfo] = {}
    for files, source in scanned:
        for file in files:
            info = _info(file, source)
            if info is not None and info.name not in commands:
                commands[info.name] = info
    _memo[key] = (lists, commands)
    return commands


def list_commands(working_dir: Path) -> list[CommandInfo]:
    """The commands for `command/list`, sorted by name."""
    return sorted(load_commands(working_dir).values(), key=lambda c: c.name)


def parse_command(text: str) -> tuple[str, str] | None:
    """(`name`, `arguments`) of a `/name args` input, else None."""
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()


def expand(text: str, working_dir: Path) -> str | None:
    """The prompt a custom command expands to, or None when `text` is not one."""
    if not text.lstrip().startswith("/"):
        return None
    parsed = parse_command(text)
    if parsed is None:
        return None
    name, arguments = parsed
    command = load_commands(working_dir).get(name)
    if command is None:
        return None
    return substitute_arguments(command.body, arguments)


def substitute_arguments(body: str, arguments: str) -> str:
    """`$ARGUMENTS` replaced by `arguments`; without it, arguments appended on a new line."""
    if ARGUMENTS in body:
        return body.replace(ARGUMENTS, arguments)
    if not arguments:
        return body
    return f"{body}\n\n{arguments}" if body else arguments
