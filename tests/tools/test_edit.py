import os
from pathlib import Path

from sema_rpc.core.policy.permissions import EDIT_RULE
from sema_rpc.tools.base import ToolContext
from sema_rpc.tools.edit import EditTool
from sema_rpc.tools.read import ReadTool

from ._helpers import args_of, run

tool = EditTool()

SOURCE = "def f():\n    x = 1\n    return x\n\n\ndef g():\n    x = 1\n    return x + 1\n"


async def read(ctx: ToolContext, path: str) -> None:
    out = await run(ReadTool(), ctx, file_path=path)
    assert not out.is_error, out.content


async def test_edit_requires_read(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "m.py").write_text(SOURCE)
    out = await run(tool, ctx, file_path="m.py", old_string="def f", new_string="def h")
    assert out.is_error and "not been read" in out.content


async def test_unique_edit_diff_and_snapshot(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "m.py"
    path.write_text(SOURCE)
    await read(ctx, "m.py")
    args = args_of(
        tool, file_path="m.py", old_string="    return x\n", new_string="    return x * 2\n"
    )
    assert await tool.validate_input(args, ctx) is None
    ask = tool.permission(args, ctx)
    assert ask is not None and ask.content_kind == "diff"
    assert ask.rule == EDIT_RULE and ask.file_edit  # an "always" answer covers every edit
    assert ask.content == (
        "--- a/m.py\n+++ b/m.py\n@@ -1,6 +1,6 @@\n def f():\n     x = 1\n"
        "-    return x\n+    return x * 2\n \n \n def g():\n"
    )
    assert args._change is not None and tool.plan(args, ctx) is args._change  # computed once
    out = await tool.call(args, ctx)
    assert not out.is_error and out.display == ask.content
    assert path.read_text() == SOURCE.replace("    return x\n", "    return x * 2\n", 1)
    assert "     3\t    return x * 2" in out.content
    # consecutive edits work without reading again
    out = await run(tool, ctx, file_path="m.py", old_string="def g", new_string="def gg")
    assert not out.is_error and "def gg" in path.read_text()


async def test_not_unique_and_replace_all(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "m.py"
    path.write_text(SOURCE)
    await read(ctx, "m.py")
    out = await run(tool, ctx, file_path="m.py", old_string="x = 1", new_string="y = 1")
    assert out.is_error and "2 times" in out.content and "replace_all" in out.content
    out = await run(
        tool, ctx, file_path="m.py", old_string="x = 1", new_string="y = 1", replace_all=True
    )
    assert not out.is_error and "2 replacements" in out.content
    assert path.read_text().count("y = 1") == 2 and "x = 1" not in path.read_text()


async def test_missing_and_identical(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "m.py").write_text(SOURCE)
    await read(ctx, "m.py")
    out = await run(tool, ctx, file_path="m.py", old_string="nope", new_string="x")
    assert out.is_error and "not found" in out.content
    out = await run(tool, ctx, file_path="m.py", old_string="def f", new_string="def f")
    assert out.is_error and "identical" in out.content
    out = await run(tool, ctx, file_path="gone.py", old_string="a", new_string="b")
    assert out.is_error and "does not exist" in out.content


async def test_changed_since_read(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "m.py"
    path.write_text(SOURCE)
    await read(ctx, "m.py")
    path.write_text(SOURCE + "# formatter was here\n")
    out = await run(tool, ctx, file_path="m.py", old_string="def f", new_string="def h")
    assert out.is_error and "changed since" in out.content


async def test_renamed_between_read_and_edit(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "m.py"
    path.write_text(SOURCE)
    await read(ctx, "m.py")
    # replaced by another file through a rename
    other = workspace / "other.py"
    other.write_text("def f():\n    pass\n")
    os.replace(other, path)
    out = await run(tool, ctx, file_path="m.py", old_string="def f", new_string="def h")
    assert out.is_error and "changed since" in out.content
    # moved away
    await read(ctx, "m.py")
    os.rename(path, workspace / "moved.py")
    out = await run(tool, ctx, file_path="m.py", old_string="def f", new_string="def h")
    assert out.is_error and "does not exist" in out.content
    out = await run(tool, ctx, file_path="moved.py", old_string="def f", new_string="def h")
    assert out.is_error and "not been read" in out.content


async def test_symlink_edits_target(workspace: Path, tmp_path: Path, ctx: ToolContext) -> None:
    outside = tmp_path / "lib.py"
    outside.write_text(SOURCE)
    (workspace / "lib.py").symlink_to(outside)
    await read(ctx, "lib.py")
    args = args_of(tool, file_path="lib.py", old_string="def g", new_string="def g2")
    ask = tool.permission(args, ctx) if await tool.validate_input(args, ctx) is None else None
    assert ask is not None and "outside the workspace" in ask.title and ask.ask_every_time
    out = await tool.call(args, ctx)
    assert not out.is_error
    assert (workspace / "lib.py").is_symlink() and "def g2" in outside.read_text()


async def test_empty_old_string_creates_file(workspace: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, file_path="new.txt", old_string="", new_string="hello\n")
    assert not out.is_error
    assert (workspace / "new.txt").read_text() == "hello\n"
    assert out.display == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"


async def test_crlf_and_no_final_newline(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "w.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree")
    await read(ctx, "w.txt")
    out = await run(tool, ctx, file_path="w.txt", old_string="two\nthree", new_string="2\n3")
    assert not out.is_error
    assert path.read_bytes() == b"one\r\n2\r\n3"
    assert out.display == (
        "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n"
        "\\ No newline at end of file\n+2\n+3\n\\ No newline at end of file\n"
    )


async def test_binary_refused(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "b.dat"
    path.write_bytes(b"a\x00b")
    # pretend it was read (Read itself refuses binary files)
    from sema_rpc.tools.base import FileSnapshot

    st = path.stat()
    ctx.read_files[str(path)] = FileSnapshot(st.st_mtime_ns, st.st_size, st.st_ino)
    out = await run(tool, ctx, file_path="b.dat", old_string="a", new_string="c")
    assert out.is_error and "binary" in out.content
