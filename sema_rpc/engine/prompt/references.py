"""@references in user input: files and directories the user points the model at.

Syntax:

    @src/app.py            the file, as the Read tool returns it (numbered lines, same caps)
    @src/app.py:42         line 42 only
    @src/app.py:10-20      lines 10 to 20
    @src/                  a directory: its entries, one level, capped
    @"my file.py"          a quoted path with spaces (also @'my file.py'; a range may
    @"my file.py":3-5      follow the closing quote)

Not references: an `@` preceded by a letter, digit, `_`, `@` or a backtick (e-mail
addresses `a@b.com`, decorators in code), anything inside a code span or a fenced code
block, and a bare word that names nothing (`@john`, `@dataclass` — a token without `/`,
`.` or `~` that does not exist). Trailing sentence punctuation is not part of a path.

Each reference becomes one `<system-reminder>` block for the user message and one
`file:reference` entry `{type: file|dir, name, content, error?}`. A missing file, a
binary, a path outside the workspace (never read: "outside the workspace") or a file
over the budget is an entry with an `error`, never a failure of the input. Successful
file reads are recorded in the caller's `read_files` (so Edit/Write accept the file).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_rpc.core.policy.paths import SKIP_DIRS, display_path, is_inside, resolve_path
from sema_rpc.core.scopes import run_sync_in_thread
from sema_rpc.engine.prompt.system_prompt import system_reminder
from sema_rpc.tools.base import FileSnapshot, ToolContext, ToolOutput
from sema_rpc.tools.read import ReadInput, ReadTool

MAX_REFERENCES = 50
"""References after this many in one input are ignored."""
MAX_TOTAL_CHARS = 256 * 1024
"""Content budget of one input's references; files past it are reported, not included."""
MAX_DIR_ENTRIES = 200

OUTSIDE_WORKSPACE = "outside the workspace"

_REF = re.compile(
    r"(?<![\w@`])@"
    r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"'`<>|@][^\s\"'`<>|]*))"
    r"(?::(?P<qstart>\d+)(?:-(?P<qend>\d+))?)?"
)
_RANGE_SUFFIX = re.compile(r":(\d+)(?:-(\d+))?$")
_TRAILING_PUNCT = ".,;:!?)]}>\"'"
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)

_read_tool = ReadTool()


@dataclass(slots=True)
class ReferenceResult:
    reminders: list[str] = field(default_factory=list)
    """`<system-reminder>` blocks to append to the user message, in input order."""
    references: list[dict[str, Any]] = field(default_factory=list)
    """The `file:reference` payload entries: {type, name, content, error?}."""


@dataclass(frozen=True, slots=True)
class Reference:
    raw: str
    """The path as written (without quotes and line range)."""
    start: int | None = None
    end: int | None = None
    quoted: bool = False

    @property
    def suffix(self) -> str:
        if self.start is None:
            return ""
        return f":{self.start}" + (f"-{self.end}" if self.end is not None else "")


def _code_spans(text: str) -> list[tuple[int, int]]:
    if "`" not in text:
        return []
    return [m.span() for m in _CODE.finditer(text)]


def find_references(text: str) -> list[Reference]:
    """The @references of `text`, in order (duplicates kept)."""
    if "@" not in text:
        return []
    spans = _code_spans(text)
    found: list[Reference] = []
    for match in _REF.finditer(text):
        at = match.start()
        if any(a <= at < b for a, b in spans):
            continue
        quoted = match.group("bare") is None
        start_s, end_s = match.group("qstart"), match.group("qend")
        if quoted:
            raw = match.group("dq") or match.group("sq") or ""
            if start_s is None and (m := _RANGE_SUFFIX.search(raw)):
                raw, start_s, end_s = raw[: m.start()], m.group(1), m.group(2)
        else:
            raw = match.group("bare")
            if start_s is None:
                raw = raw.rstrip(_TRAILING_PUNCT)
                if m := _RANGE_SUFFIX.search(raw):
                    raw, start_s, end_s = raw[: m.start()], m.group(1), m.group(2)
        raw = raw.strip()
        if not raw:
            continue
        found.append(
            Reference(
                raw=raw,
                start=int(start_s) if start_s else None,
                end=int(end_s) if end_s else None,
                quoted=quoted,
            )
        )
    return found


def _looks_like_path(ref: Reference) -> bool:
    return ref.quoted or ref.start is not None or any(c in ref.raw for c in "/.~\\")


def _list_dir(path: Path, shown: str) -> str:
    entries: list[str] = []
    with os.scandir(path) as it:
        for entry in it:
            if entry.name in SKIP_DIRS:
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            entries.append(entry.name + ("/" if is_dir else ""))
    entries.sort(key=lambda n: (not n.endswith("/"), n.lower()))
    shown_dir = shown.rstrip("/") + "/"
    if not entries:
        return f"{shown_dir} (empty directory)"
    lines = [shown_dir, *(f"  {name}" for name in entries[:MAX_DIR_ENTRIES])]
    if len(entries) > MAX_DIR_ENTRIES:
        lines.append(f"  … and {len(entries) - MAX_DIR_ENTRIES} more entries")
    return "\n".join(lines)


def resolve_references(
    text: str,
    working_dir: Path,
    read_files: dict[str, FileSnapshot] | None = None,
) -> ReferenceResult:
    """Read every @reference of `text` (blocking; see `resolve_references_async`).

    `read_files` is the session's map of files the model has read (ToolContext.read_files);
    every file read here is recorded in it.
    """
    result = ReferenceResult()
    refs = find_references(text)
    if not refs:
        return result
    root = Path(working_dir).resolve()
    ctx = ToolContext(
        working_dir=root, session_id="", read_files=read_files if read_files is not None else {}
    )
    seen: set[tuple[str, int | None, int | None]] = set()
    budget = MAX_TOTAL_CHARS
    for ref in refs[:MAX_REFERENCES]:
        try:
            path = resolve_path(ref.raw, root)
        except (OSError, RuntimeError, ValueError) as exc:
            _add_error(result, "file", ref.raw + ref.suffix, f"invalid path: {exc}")
            continue
        key = (str(path), ref.start, ref.end)
        if key in seen:
            continue
        seen.add(key)
        if not is_inside(path, root):
            name = ref.raw + ref.suffix
            _add_error(
                result,
                "dir" if path.is_dir() else "file",
                name,
                f"{name} is {OUTSIDE_WORKSPACE}; it was not read",
            )
            continue
        shown = display_path(path, root)
        if path.is_dir():
            try:
                content = _list_dir(path, shown)
            except OSError as exc:
                _add_error(result, "dir", shown, f"cannot list {shown}: {exc.strerror or exc}")
                continue
            budget -= len(content)
            _add(
                result,
                "dir",
                shown,
                content,
                f"The user referenced the directory {shown}. Its entries:",
            )
            continue
        if not path.exists() and not _looks_like_path(ref):
            continue  # `@john`, `@dataclass`: not a reference
        name = shown + ref.suffix
        error = _line_range_error(ref)
        if error is not None:
            _add_error(result, "file", name, error)
            continue
        if budget <= 0:
            _add_error(result, "file", name, _over_budget(name))
            continue
        before = ctx.read_files.get(str(path))
        output = _read(ref, path, shown, ctx)
        if output.is_error:
            _add_error(result, "file", name, output.content)
            continue
        if len(output.content) > budget:
            # Too big for what is left: not included, so not recorded as read either.
            if before is None:
                ctx.read_files.pop(str(path), None)
            else:
                ctx.read_files[str(path)] = before
            _add_error(result, "file", name, _over_budget(name))
            continue
        budget -= len(output.content)
        lines = (
            ""
            if ref.start is None
            else f" (line {ref.start})"
            if ref.end is None
            else f" (lines {ref.start}-{ref.end})"
        )
        _add(
            result,
            "file",
            name,
            output.content,
            f"The user referenced the file {shown}{lines}. Its content as the Read tool returns "
            "it (line numbers are not part of the file):",
        )
    return result


async def resolve_references_async(
    text: str,
    working_dir: Path,
    read_files: dict[str, FileSnapshot] | None = None,
) -> ReferenceResult:
    """`resolve_references` in a worker thread when the input has an `@` at all."""
    if "@" not in text:
        return ReferenceResult()
    return await run_sync_in_thread(resolve_references, text, working_dir, read_files)


def _line_range_error(ref: Reference) -> str | None:
    if ref.start is None:
        return None
    if ref.start < 1:
        return f"invalid line range {ref.suffix[1:]}: lines start at 1"
    if ref.end is not None and ref.end < ref.start:
        return f"invalid line range {ref.suffix[1:]}: the end is before the start"
    return None


def _read(ref: Reference, path: Path, shown: str, ctx: ToolContext) -> ToolOutput:
    offset = ref.start
    limit = None if ref.start is None else (ref.end or ref.start) - ref.start + 1
    args = ReadInput(file_path=str(path), offset=offset, limit=limit)
    return _read_tool._read(args, ctx, path, shown)


def _over_budget(name: str) -> str:
    return (
        f"{name} was not included: the referenced files exceed the "
        f"{MAX_TOTAL_CHARS // 1024} KB budget for one message. Read it with the Read tool."
    )


def _add(result: ReferenceResult, kind: str, name: str, content: str, intro: str) -> None:
    result.references.append({"type": kind, "name": name, "content": content})
    result.reminders.append(system_reminder(f"{intro}\n{content}"))


def _add_error(result: ReferenceResult, kind: str, name: str, error: str) -> None:
    result.references.append({"type": kind, "name": name, "content": "", "error": error})
    result.reminders.append(
        system_reminder(f"The user referenced @{name}, but it was not read: {error}")
    )
