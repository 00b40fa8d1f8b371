import os
import stat
from pathlib import Path

from sema_rpc.core.policy.permissions import EDIT_RULE
from sema_rpc.tools.base import ToolContext
from sema_rpc.tools.read import ReadTool
from sema_rpc.tools.write import WriteTool

from ._helpers import args_of, run, set_mtime

tool = WriteTool()


async def read(ctx: ToolContext, path: str) -> None:
    out = await run(ReadTool(), ctx, file_path=path)
    assert not out.is_error, out.content


async def test_new_file_needs_no_read(workspace: Path, ctx: ToolContext) -> None:
    args = args_of(tool, file_path="pkg/new.py", content="print('hi')\n")
    assert await tool.validate_input(args, ctx) is None
    ask = tool.permission(args, ctx)
    assert ask is not None and ask.content_kind == "diff"
    assert ask.rule == EDIT_RULE and ask.file_edit  # an "always" answer covers every edit
    assert not ask.ask_every_time
    assert ask.content == "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+print('hi')\n"
    out = await tool.call(args, ctx)
    assert not out.is_error and out.display == ask.content
    assert (workspace / "pkg" / "new.py").read_text() == "print('hi')\n"
    mode = stat.S_IMODE((workspace / "pkg" / "new.py").stat().st_mode)
    assert mode == 0o666 & ~_umask()
    assert str(workspace / "pkg" / "new.py") in ctx.read_files


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


async def test_existing_file_must_be_read_first(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "a.txt").write_text("old\n")
    out = await run(tool, ctx, file_path="a.txt", content="new\n")
    assert out.is_error and "not been read" in out.content
    assert (workspace / "a.txt").read_text() == "old\n"


async def test_overwrite_after_read_keeps_mode(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "run.sh"
    path.write_text("echo old\n")
    path.chmod(0o751)
    await read(ctx, "run.sh")
    out = await run(tool, ctx, file_path="run.sh", content="echo new\n")
    assert not out.is_error
    assert path.read_text() == "echo new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert out.display == ("--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo old\n+echo new\n")
    # the new snapshot lets a second write go through without another Read
    out = await run(tool, ctx, file_path="run.sh", content="echo newer\n")
    assert not out.is_error and path.read_text() == "echo newer\n"
    assert os.listdir(workspace) == ["run.sh"]  # no temp files left


async def test_changed_since_read(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "a.txt"
    path.write_text("one\n")
    await read(ctx, "a.txt")
    path.write_text("one, changed by the user\n")
    out = await run(tool, ctx, file_path="a.txt", content="two\n")
    assert out.is_error and "changed since" in out.content
    # same size, different mtime
    path.write_text("abc\n")
    await read(ctx, "a.txt")
    path.write_text("xyz\n")
    set_mtime(path, 1_000_000)
    out = await run(tool, ctx, file_path="a.txt", content="two\n")
    assert out.is_error and "changed since" in out.content


async def test_file_renamed_over_the_one_read(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "a.txt"
    path.write_text("abc\n")
    await read(ctx, "a.txt")
    impostor = workspace / "b.txt"
    impostor.write_text("xyz\n")  # same size
    st = path.stat()
    os.utime(impostor, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    os.replace(impostor, path)
    out = await run(tool, ctx, file_path="a.txt", content="two\n")
    assert out.is_error and "changed since" in out.content
    assert path.read_text() == "xyz\n"


async def test_change_between_permission_and_call(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "a.txt"
    path.write_text("one\n")
    await read(ctx, "a.txt")
    args = args_of(tool, file_path="a.txt", content="two\n")
    assert await tool.validate_input(args, ctx) is None
    assert tool.permission(args, ctx) is not None
    path.write_text("edited while the prompt was open\n")
    out = await tool.call(args, ctx)
    assert out.is_error
    assert path.read_text() == "edited while the prompt was open\n"


async def test_directory_refused(workspace: Path, ctx: ToolContext) -> None:
    (workspace / "d").mkdir()
    out = await run(tool, ctx, file_path="d", content="x")
    assert out.is_error and "directory" in out.content


async def test_symlink_to_outside_file(workspace: Path, tmp_path: Path, ctx: ToolContext) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    link = workspace / "link.txt"
    link.symlink_to(outside)
    await read(ctx, "link.txt")
    assert str(outside) in ctx.read_files  # keyed by the resolved path
    args = args_of(tool, file_path="link.txt", content="changed\n")
    assert await tool.validate_input(args, ctx) is None
    ask = tool.permission(args, ctx)
    assert ask is not None and "outside the workspace" in ask.title and str(outside) in ask.title
    assert ask.ask_every_time
    assert tool.target_path(args, ctx) == outside
    out = await tool.call(args, ctx)
    assert not out.is_error
    assert link.is_symlink() and outside.read_text() == "changed\n"


async def test_crlf_file_stays_crlf(workspace: Path, ctx: ToolContext) -> None:
    path = workspace / "win.txt"
    path.write_bytes(b"a\r\nb\r\n")
    await read(ctx, "win.txt")
    out = await run(tool, ctx, file_path="win.txt", content="a\nc\n")
    assert not out.is_error
    assert path.read_bytes() == b"a\r\nc\r\n"
    assert out.display == "--- a/win.txt\n+++ b/win.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"


def test_not_read_only() -> None:
    assert not tool.is_read_only(args_of(tool, file_path="x", content=""))


def test_dot_git_is_protected_whatever_its_case(workspace: Path, ctx: ToolContext) -> None:
    for name in (".git/config", ".GIT/config", "sub/.Git/hooks/pre-commit"):
        args = args_of(tool, file_path=name, content="x")
        ask = tool.permission(args, ctx)
        assert ask is not None and ask.ask_every_time and "(protected)" in ask.title, name
    ask = tool.permission(args_of(tool, file_path="src/git.txt", content="x"), ctx)
    assert ask is not None and not ask.ask_every_time
