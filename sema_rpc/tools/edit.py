"""Edit: exact string replacement in a file that was Read."""

from __future__ import annotations

from pathlib import Path

from sema_rpc.core.policy.paths import resolve_path
from sema_rpc.core.policy.permissions import EDIT_RULE

from .base import FileEffect, PermissionAsk, Tool, ToolContext, ToolOutput
from .input_plain import EditInput
from .write import (
    FileChange,
    FileChangeError,
    ask_for,
    check_fresh,
    commit_change,
    diff_stats,
    editor_buffer,
    read_current,
    snapshot_of,
    target_of,
    unified_diff,
)

SNIPPET_CONTEXT = 3
SNIPPET_MAX_LINES = 40


class EditTool(Tool):
    name = "Edit"
    description = (
        "Replaces exact text in a file.\n"
        "- Read the file first in this session; the edit is refused if the file changed since.\n"
        "- old_string must match the file exactly, including indentation and whitespace; copy "
        "it from Read output without the line-number prefix (number and tab).\n"
        "- The edit fails if old_string is not found, or occurs more than once: include more "
        "surrounding lines to make it unique, or set replace_all to change every occurrence "
        "(e.g. to rename a variable).\n"
        "- An empty old_string creates a new file with new_string as its content.\n"
        "- The user sees the diff and may refuse the change."
    )
    Input = EditInput

    def title(self, args: EditInput) -> str:
        return f"Edit {args.file_path}"

    def target_path(self, args: EditInput, ctx: ToolContext) -> Path:
        return resolve_path(args.file_path, ctx.working_dir)

    def changes_files(self, args: EditInput, ctx: ToolContext) -> FileEffect:
        return FileEffect(paths=(self.target_path(args, ctx),))

    def plan(self, args: EditInput, ctx: ToolContext) -> FileChange:
        if args._change is not None:
            return args._change
        if args.old_string == args.new_string:
            raise FileChangeError(
                "old_string and new_string are identical; there is nothing to change."
            )
        path, shown = target_of(args.file_path, ctx)
        before = snapshot_of(path)
        if before is None:
            if args.old_string:
                raise FileChangeError(
                    f"File does not exist: {shown}. Use Write to create a new file."
                )
            args._change = FileChange(
                path=path,
                shown=shown,
                old_text=None,
                new_text=args.new_string,
                diff=unified_diff(None, args.new_string.replace("\r\n", "\n"), shown),
                before=None,
                replacements=1,
            )
            return args._change

        check_fresh(path, shown, ctx)
        current = read_current(path, shown, before, strict=True, buffer=args._buffer)
        text = current.text
        old, new = args.old_string, args.new_string
        if current.newline == "\r\n":
            old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        if not old:
            if text:
                raise FileChangeError(
                    f"old_string is empty but {shown} is not: give the exact text to replace, "
                    "or use Write to replace the whole file."
                )
            count, new_text, offset = 1, new, 0
        else:
            count = text.count(old)
            if count == 0:
                raise FileChangeError(
                    f"old_string was not found in {shown}. It must match the file exactly, "
                    "including whitespace and indentation; Read the file again if unsure."
                )
            if count > 1 and not args.replace_all:
                raise FileChangeError(
                    f"old_string occurs {count} times in {shown}. Add surrounding lines to make "
                    "it unique, or set replace_all to true to replace every occurrence."
                )
            offset = text.find(old)
            new_text = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        args._change = FileChange(
            path=path,
            shown=shown,
            old_text=text,
            new_text=new_text,
            diff=unified_diff(text, new_text, shown),
            before=before,
            newline=current.newline,
            bom=current.bom,
            replacements=count if args.replace_all or not old else 1,
            first_change_offset=offset,
        )
        return args._change

    async def validate_input(self, args: EditInput, ctx: ToolContext) -> str | None:
        try:
            args._buffer = await editor_buffer(self.target_path(args, ctx), ctx)
            self.plan(args, ctx)
        except FileChangeError as exc:
            return str(exc)
        return None

    def permission(self, args: EditInput, ctx: ToolContext) -> PermissionAsk | None:
        try:
            return ask_for("Edit", self.plan(args, ctx), ctx)
        except FileChangeError as exc:
            return PermissionAsk(
                title=f"Edit {args.file_path}", content=str(exc), rule=EDIT_RULE, file_edit=True
            )

    async def call(self, args: EditInput, ctx: ToolContext) -> ToolOutput:
        try:
            change = self.plan(args, ctx)
            await commit_change(change, ctx)
        except FileChangeError as exc:
            return ToolOutput(content=str(exc), summary=str(exc), is_error=True)
        added, removed = diff_stats(change.diff)
        if change.is_new:
            content = f"File created successfully at: {change.shown}"
        else:
            plural = "s" if change.replacements != 1 else ""
            content = (
                f"The file {change.shown} has been edited ({change.replacements} "
                f"replacement{plural}). The edited region now reads:\n"
                + _snippet(change, args.new_string)
            )
        return ToolOutput(
            content=content,
            summary=f"Edited {change.shown} (+{added} -{removed})",
            display=change.diff,
        )


def _snippet(change: FileChange, new_string: str) -> str:
    """`cat -n` lines around the first replacement, as the file now is."""
    lines = change.new_text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    first = change.new_text.count("\n", 0, change.first_change_offset)
    last = first + new_string.replace("\r\n", "\n").count("\n")
    start = max(first - SNIPPET_CONTEXT, 0)
    end = min(last + SNIPPET_CONTEXT, len(lines) - 1)
    end = min(end, start + SNIPPET_MAX_LINES - 1)
    return "\n".join(f"{n + 1:6d}\t{lines[n]}" for n in range(start, end + 1))
