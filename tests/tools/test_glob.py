from pathlib import Path

from sema_rpc.tools.base import ToolContext
from sema_rpc.tools.glob import GlobTool

from ._helpers import args_of, run, set_mtime

tool = GlobTool()


def touch(path: Path, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    if mtime is not None:
        set_mtime(path, mtime)
    return path


async def test_newest_first_relative_paths(workspace: Path, ctx: ToolContext) -> None:
    touch(workspace / "old.py", 1_000_000)
    touch(workspace / "src" / "new.py", 3_000_000)
    touch(workspace / "src" / "deep" / "mid.py", 2_000_000)
    touch(workspace / "readme.md", 4_000_000)
    out = await run(tool, ctx, pattern="**/*.py")
    assert out.content.splitlines() == ["src/new.py", "src/deep/mid.py", "old.py"]


async def test_top_level_pattern_and_literal_prefix(workspace: Path, ctx: ToolContext) -> None:
    touch(workspace / "a.py")
    touch(workspace / "src" / "b.py")
    touch(workspace / "src" / "c.ts")
    out = await run(tool, ctx, pattern="*.py")
    assert out.content.splitlines() == ["a.py"]
    out = await run(tool, ctx, pattern="src/*.{py,ts}")
    assert sorted(out.content.splitlines()) == ["src/b.py", "src/c.ts"]
    out = await run(tool, ctx, pattern="*.ts", path="src")
    assert out.content.splitlines() == ["src/c.ts"]


async def test_skips_vendor_dirs(workspace: Path, ctx: ToolContext) -> None:
    touch(workspace / "keep.js")
    for skipped in (".git", "node_modules", ".venv", "__pycache__"):
        touch(workspace / skipped / "x.js")
        touch(workspace / "pkg" / skipped / "y.js")
    out = await run(tool, ctx, pattern="**/*.js")
    assert out.content.splitlines() == ["keep.js"]


async def test_cap_at_100_says_truncated(workspace: Path, ctx: ToolContext) -> None:
    for i in range(130):
        touch(workspace / "many" / f"f{i:03}.txt", 1_000_000 + i)
    out = await run(tool, ctx, pattern="many/*.txt")
    lines = out.content.splitlines()
    files = [line for line in lines if line.startswith("many/")]
    assert len(files) == 100
    assert files[0] == "many/f129.txt" and files[-1] == "many/f030.txt"
    assert "truncated" in out.content and "130" in out.content


async def test_no_match_and_bad_path(workspace: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="**/*.zzz")
    assert not out.is_error and out.content == "No files found"
    out = await run(tool, ctx, pattern="*", path="missing")
    assert out.is_error


async def test_outside_path_asks_permission(
    workspace: Path, tmp_path: Path, ctx: ToolContext
) -> None:
    assert tool.permission(args_of(tool, pattern="**/*"), ctx) is None
    ask = tool.permission(args_of(tool, pattern="*", path=str(tmp_path)), ctx)
    assert ask is not None and ask.rule is None and ask.ask_every_time
    assert tool.permission(args_of(tool, pattern="../*"), ctx) is not None
    touch(tmp_path / "other" / "z.txt")
    out = await run(tool, ctx, pattern="*.txt", path=str(tmp_path / "other"))
    assert out.content == str(tmp_path / "other" / "z.txt")
