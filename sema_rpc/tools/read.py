"""Read: a text file as `cat -n` numbered lines (or a notebook's cells)."""

from __future__ import annotations

import json
import os
from itertools import islice
from pathlib import Path
from typing import Any

from sema_rpc.core.policy.paths import display_path, is_inside, resolve_path
from sema_rpc.core.scopes import run_sync_in_thread

from .base import FileSnapshot, PermissionAsk, Tool, ToolContext, ToolOutput
from .input_plain import ReadInput
from .limits import MAX_LINES

MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 256 * 1024
MAX_NOTEBOOK_CHARS = 256 * 1024
MAX_CELL_OUTPUT_CHARS = 2000
BINARY_SNIFF_BYTES = 8192

BINARY_EXTENSIONS = frozenset(
    """
    png jpg jpeg gif bmp ico webp tiff tif psd svgz heic avif
    pdf doc docx xls xlsx ppt pptx odt ods odp
    zip gz tgz bz2 xz zst 7z rar tar jar war whl egg
    exe dll so dylib a o obj lib bin class pyc pyo wasm
    mp3 mp4 wav ogg flac avi mov mkv webm m4a
    ttf otf woff woff2 eot sqlite db
    """.split()
)


class ReadTool(Tool):
    name = "Read"
    description = (
        "Reads a file from the local filesystem.\n"
        f"- Returns up to {MAX_LINES} lines from the start of the file by default, numbered like "
        "`cat -n` (line number, tab, content). Line numbers are not part of the file.\n"
        f"- Use `offset` (1-based line) and `limit` to read a part of a long file; files over "
        f"{MAX_FILE_BYTES // 1024} KB must be read in parts.\n"
        f"- Lines longer than {MAX_LINE_CHARS} characters are truncated.\n"
        "- Jupyter notebooks (.ipynb) are shown as their cells with text outputs.\n"
        "- Binary files (images, archives, PDFs, ...) cannot be read. Directories cannot be read: "
        "use Glob to list files.\n"
        "- Read a file before editing it with Edit or overwriting it with Write."
    )
    Input = ReadInput
    read_only = True

    def title(self, args: ReadInput) -> str:
        return f"Read {args.file_path}"

    def target_path(self, args: ReadInput, ctx: ToolContext) -> Path:
        return resolve_path(args.file_path, ctx.working_dir)

    def permission(self, args: ReadInput, ctx: ToolContext) -> PermissionAsk | None:
        path = self.target_path(args, ctx)
        if is_inside(path, ctx.working_dir):
            return None
        return PermissionAsk(
            title=f"Read {path} (outside the workspace)",
            content=f"Read a file outside the working directory:\n{path}",
            ask_every_time=True,
        )

    async def call(self, args: ReadInput, ctx: ToolContext) -> ToolOutput:
        path = self.target_path(args, ctx)
        shown = display_path(path, ctx.working_dir)
        editor = ctx.services.editor_files
        if (
            editor is None
            or not editor.can_read
            or path.suffix.lower() == ".ipynb"
            or not is_inside(path, ctx.working_dir)
        ):
            return await run_sync_in_thread(self._read, args, ctx, path, shown)
        # The editor's buffer (unsaved edits included); the checks stay ours, on disk.
        checked = await run_sync_in_thread(self._check, path, shown)
        if isinstance(checked, ToolOutput):
            return checked
        try:
            text = await editor.read_text(path)
        except OSError as exc:
            return _fail(f"Cannot read {shown} through the editor: {exc}")
        if len(text) > MAX_FILE_BYTES and args.offset is None and args.limit is None:
            return _fail(_too_large(shown, len(text.encode("utf-8"))))
        start = max(args.offset or 1, 1)
        count = min(args.limit or MAX_LINES, MAX_LINES)
        lines = text.splitlines()
        selected = lines[start - 1 : start - 1 + count]
        output = _numbered(selected, start, len(lines) > start - 1 + count, shown)
        ctx.read_files[str(path)] = FileSnapshot(
            mtime_ns=checked.st_mtime_ns, size=checked.st_size, inode=checked.st_ino
        )
        return output

    def _check(self, path: Path, shown: str) -> ToolOutput | os.stat_result:
        """The file's stat, or why it cannot be read as text."""
        if not path.exists():
            return _fail(f"File does not exist: {shown}")
        if path.is_dir():
            return _fail(
                f"{shown} is a directory, not a file. Use Glob (e.g. pattern '{shown}/*') to list it."
            )
        if not path.is_file():
            return _fail(f"{shown} is not a regular file.")
        suffix = path.suffix.lower().lstrip(".")
        if suffix in BINARY_EXTENSIONS:
            return _fail(f"Cannot read {shown}: it is a binary file (.{suffix}).")
        with path.open("rb") as f:
            if b"\x00" in f.read(BINARY_SNIFF_BYTES):
                return _fail(f"Cannot read {shown}: it looks like a binary file.")
        return path.stat()

    def _read(self, args: ReadInput, ctx: ToolContext, path: Path, shown: str) -> ToolOutput:
        checked = self._check(path, shown)
        if isinstance(checked, ToolOutput):
            return checked
        stat = checked
        if path.suffix.lower() == ".ipynb":
            output = self._read_notebook(path, shown)
            if output.is_error:
                return output
        else:
            if stat.st_size > MAX_FILE_BYTES and args.offset is None and args.limit is None:
                return _fail(_too_large(shown, stat.st_size))
            output = self._read_lines(path, shown, args.offset, args.limit)
        ctx.read_files[str(path)] = FileSnapshot(
            mtime_ns=stat.st_mtime_ns, size=stat.st_size, inode=stat.st_ino
        )
        return output

    def _read_lines(
        self, path: Path, shown: str, offset: int | None, limit: int | None
    ) -> ToolOutput:
        start = max(offset or 1, 1)
        count = min(limit or MAX_LINES, MAX_LINES)
        with path.open("r", encoding="utf-8", errors="replace") as f:
            selected = list(islice(f, start - 1, start - 1 + count))
            more = bool(f.readline())
        return _numbered(selected, start, more, shown)

    def _read_notebook(self, path: Path, shown: str) -> ToolOutput:
        try:
            notebook = json.loads(path.read_text(encoding="utf-8", errors="replace"))
            cells = notebook["cells"]
        except (ValueError, KeyError, TypeError) as exc:
            return ToolOutput(
                content=f"Cannot parse notebook {shown}: {exc}",
                summary="Invalid notebook",
                is_error=True,
            )
        language = (
            notebook.get("metadata", {}).get("language_info", {}).get("name", "python")
            if isinstance(notebook, dict)
            else "python"
        )
        parts: list[str] = []
        for index, cell in enumerate(cells, 1):
            kind = cell.get("cell_type", "code")
            source = _joined(cell.get("source", ""))
            header = f"<cell {index} type={kind}" + (
                f" language={language}" if kind == "code" else ""
            )
            parts.append(f"{header}>\n{source}\n</cell {index}>")
            outputs = [_render_output(o) for o in cell.get("outputs", []) or []]
            outputs = [o for o in outputs if o]
            if outputs:
                parts.append(
                    f"<outputs of cell {index}>\n"
                    + "\n".join(outputs)
                    + f"\n</outputs of cell {index}>"
                )
        content = "\n".join(parts) if parts else "<notebook has no cells>"
        if len(content) > MAX_NOTEBOOK_CHARS:
            content = content[:MAX_NOTEBOOK_CHARS] + "\n[notebook truncated]"
        return ToolOutput(content=content, summary=f"Read {len(cells)} cells")


def _fail(message: str) -> ToolOutput:
    return ToolOutput(content=message, summary=message.split("\n", 1)[0], is_error=True)


def _too_large(shown: str, size: int) -> str:
    return (
        f"{shown} is {size // 1024} KB, over the {MAX_FILE_BYTES // 1024} KB "
        "limit for reading a whole file. Read it in parts with offset and limit "
        "(e.g. offset=1, limit=500), or search it with Grep."
    )


def _numbered(selected: list[str], start: int, more: bool, shown: str) -> ToolOutput:
    """`cat -n` lines from line `start`; `more`: the file goes on after them."""
    if not selected:
        if start == 1:
            return ToolOutput(content="<file is empty>", summary=f"{shown} (empty)")
        return ToolOutput(
            content=f"<offset {start} is past the end of {shown}; the file is shorter>",
            summary="Offset past end of file",
        )
    lines = []
    for number, line in enumerate(selected, start):
        line = line.rstrip("\r\n")
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + " [line truncated]"
        lines.append(f"{number:6d}\t{line}")
    last = start + len(selected) - 1
    content = "\n".join(lines)
    if more:
        content += (
            f"\n\n[Showing lines {start}-{last}. The file has more lines: "
            f"use offset={last + 1} to continue.]"
        )
    return ToolOutput(content=content, summary=f"Read {len(selected)} lines")


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value or "")


def _render_output(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _joined(output.get("text", ""))
    elif kind in ("execute_result", "display_data"):
        data = output.get("data", {}) or {}
        if "text/plain" in data:
            text = _joined(data["text/plain"])
        else:
            text = "[" + ", ".join(sorted(data)) + " output omitted]" if data else ""
    elif kind == "error":
        text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    else:
        text = ""
    text = text.rstrip("\n")
    if len(text) > MAX_CELL_OUTPUT_CHARS:
        text = text[:MAX_CELL_OUTPUT_CHARS] + " [output truncated]"
    return text
