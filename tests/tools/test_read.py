import json
from pathlib import Path

from sema_rpc.tools.base import PermissionAsk, ToolContext
from sema_rpc.tools.read import ReadTool

from ._helpers import args_of, run

tool = ReadTool()


def write_lines(path: Path, count: int) -> None:
    path.write_text("".join(f"line {i}\n" for i in range(1, count + 1)))


async def test_numbered_lines_and_snapshot(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "a.txt"
    path.write_text("alpha\n\tbeta\r\ngamma")
    out = await run(tool, ctx, file_path="a.txt")
    assert not out.is_error
    assert out.content == "     1\talpha\n     2\t\tbeta\n     3\tgamma"
    snap = ctx.read_files[str(path)]
    assert (snap.mtime_ns, snap.size) == (path.stat().st_mtime_ns, path.stat().st_size)


async def test_offset_and_limit(workspace: Path, ctx: ToolContext) -> None:
    write_lines(workspace / "f.txt", 10)
    out = await run(tool, ctx, file_path="f.txt", offset=4, limit=3)
    lines = out.content.splitlines()
    assert lines[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "offset=7" in out.content


async def test_offset_past_end(workspace: Path, ctx: ToolContext) -> None:
    write_lines(workspace / "f.txt", 3)
    out = await run(tool, ctx, file_path="f.txt", offset=10)
    assert not out.is_error and "past the end" in out.content


async def test_default_limit_is_2000_lines(workspace: Path, ctx: ToolContext) -> None:
    write_lines(workspace / "f.txt", 2500)
    out = await run(tool, ctx, file_path="f.txt")
    numbered = [line for line in out.content.splitlines() if "\tline " in line]
    assert len(numbered) == 2000
    assert numbered[-1] == "  2000\tline 2000"
    assert "offset=2001" in out.content
    out = await run(tool, ctx, file_path="f.txt", offset=2001, limit=5000)
    numbered = [line for line in out.content.splitlines() if "\tline " in line]
    assert len(numbered) == 500 and numbered[0] == "  2001\tline 2001"


async def test_long_lines_truncated(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "long.txt").write_text("x" * 5000 + "\nshort\n")
    out = await run(tool, ctx, file_path="long.txt")
    first, second = out.content.splitlines()[:2]
    assert first.startswith("     1\t" + "x" * 2000) and "x" * 2001 not in first
    assert "truncated" in first
    assert second == "     2\tshort"


async def test_large_file_needs_offset_or_limit(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "big.log"
    path.write_text(("y" * 99 + "\n") * 3000)  # 300 KB
    out = await run(tool, ctx, file_path="big.log")
    assert out.is_error and "offset" in out.content and "limit" in out.content
    assert str(path) not in ctx.read_files
    out = await run(tool, ctx, file_path="big.log", offset=2999, limit=10)
    assert not out.is_error
    assert out.content.splitlines()[0].startswith("  2999\t")
    assert str(path) in ctx.read_files


async def test_binary_files_refused(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "blob.dat").write_bytes(b"abc\x00\x01\x02")
    out = await run(tool, ctx, file_path="blob.dat")
    assert out.is_error and "binary" in out.content
    (workspace / "pic.png").write_bytes(b"\x89PNG....")
    out = await run(tool, ctx, file_path="pic.png")
    assert out.is_error and "binary" in out.content


async def test_directory_and_missing(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "src").mkdir()
    out = await run(tool, ctx, file_path="src")
    assert out.is_error and "directory" in out.content and "Glob" in out.content
    out = await run(tool, ctx, file_path="nope.txt")
    assert out.is_error and "does not exist" in out.content


async def test_empty_file(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "empty").write_text("")
    out = await run(tool, ctx, file_path="empty")
    assert not out.is_error and "empty" in out.content
    assert str(workspace / "empty") in ctx.read_files


async def test_notebook_cells(workspace: Path, ctx: ToolContext) -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Title\n", "intro"]},
            {
                "cell_type": "code",
                "source": "print(1 + 1)",
                "outputs": [
                    {"output_type": "stream", "text": ["2\n"]},
                    {"output_type": "display_data", "data": {"image/png": "AAAA"}},
                ],
            },
        ],
        "metadata": {"language_info": {"name": "python"}},
    }
    (workspace / "nb.ipynb").write_text(json.dumps(notebook))
    out = await run(tool, ctx, file_path="nb.ipynb")
    assert not out.is_error
    assert "<cell 1 type=markdown>\n# Title\nintro\n</cell 1>" in out.content
    assert "print(1 + 1)" in out.content and "\n2\n" in out.content
    assert "image/png output omitted" in out.content and "AAAA" not in out.content


async def test_permission_only_ask_every_time(
    workspace: Path, tmp_path: Path, ctx: ToolContext
) -> None:
    (workspace / "in.txt").write_text("x")
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    assert tool.permission(args_of(tool, file_path="in.txt"), ctx) is None
    ask = tool.permission(args_of(tool, file_path=str(outside)), ctx)
    assert isinstance(ask, PermissionAsk)
    assert str(outside) in ask.content and ask.rule is None and ask.ask_every_time
    # a symlink inside pointing outside is outside
    (workspace / "link.txt").symlink_to(outside)
    assert tool.permission(args_of(tool, file_path="link.txt"), ctx) is not None
    # ../ escapes too
    assert tool.permission(args_of(tool, file_path="../secret.txt"), ctx) is not None


def test_read_only_and_title() -> None:
    args = args_of(tool, file_path="src/a.py")
    assert tool.is_read_only(args)
    assert tool.title(args) == "Read src/a.py"
