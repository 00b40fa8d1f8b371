from __future__ import annotations

import os
from pathlib import Path

import pytest

from sema_rpc.engine.prompt import references as refs_mod
from sema_rpc.engine.prompt.references import (
    OUTSIDE_WORKSPACE,
    find_references,
    resolve_references,
    resolve_references_async,
)
from sema_rpc.protocol import FileReferenceParams
from sema_rpc.tools.base import FileSnapshot
from tests.engine import _context
from tests.engine._context import write

ws = _context.ws  # fixture


def raws(text: str) -> list[tuple[str, int | None, int | None]]:
    return [(r.raw, r.start, r.end) for r in find_references(text)]


def test_syntax() -> None:
    assert raws("look at @src/app.py and @README.md:3 and @lib/x.py:10-20") == [
        ("src/app.py", None, None),
        ("README.md", 3, None),
        ("lib/x.py", 10, 20),
    ]
    assert raws('@"my file.py" and @\'other file.md\':2-4 and @"a b.txt:7"') == [
        ("my file.py", None, None),
        ("other file.md", 2, 4),
        ("a b.txt", 7, None),
    ]
    # Trailing punctuation is not part of the path; a directory keeps its slash.
    assert raws("Explain @app.py, then @src/.") == [("app.py", None, None), ("src/", None, None)]
    assert raws("(see @app.py:5)") == [("app.py", 5, None)]


def test_not_references() -> None:
    assert raws("mail me at someone@example.com or a@b.co") == []
    assert raws("use `@app.py` inline, and\n```\n@decorator\n@app.py\n```\nok") == []
    assert raws("@@app.py x`@y.py`") == []
    assert raws("no at sign here") == []


def test_file_is_read_like_the_read_tool(ws: Path) -> None:
    path = write(ws / "src" / "app.py", "alpha\nbeta\ngamma\n")
    read_files: dict[str, FileSnapshot] = {}
    result = resolve_references("What does @src/app.py do?", ws, read_files)
    assert result.references == [
        {
            "type": "file",
            "name": "src/app.py",
            "content": "     1\talpha\n     2\tbeta\n     3\tgamma",
        }
    ]
    [reminder] = result.reminders
    assert reminder.startswith("<system-reminder>\n") and reminder.endswith("\n</system-reminder>")
    assert "src/app.py" in reminder and "     2\tbeta" in reminder
    snap = read_files[str(path)]
    assert (snap.mtime_ns, snap.size) == (path.stat().st_mtime_ns, path.stat().st_size)
    FileReferenceParams.model_validate({"references": result.references})  # wire shape


def test_line_ranges(ws: Path) -> None:
    write(ws / "f.txt", "".join(f"line {i}\n" for i in range(1, 31)))
    result = resolve_references("@f.txt:5 @f.txt:10-12 @f.txt:28-99", ws)
    by_name = {r["name"]: r["content"] for r in result.references}
    # As the Read tool returns it, including its note that the file goes on.
    assert by_name["f.txt:5"].startswith("     5\tline 5\n\n[Showing lines 5-5.")
    assert by_name["f.txt:10-12"].startswith(
        "    10\tline 10\n    11\tline 11\n    12\tline 12\n\n[Showing lines 10-12."
    )
    assert by_name["f.txt:28-99"].splitlines() == [
        "    28\tline 28",
        "    29\tline 29",
        "    30\tline 30",
    ]
    assert "(lines 10-12)" in result.reminders[1]
    bad = resolve_references("@f.txt:9-3", ws).references
    assert bad[0]["error"].startswith("invalid line range 9-3")


def test_quoted_path_with_spaces(ws: Path) -> None:
    write(ws / "my notes" / "to do.md", "one\ntwo\n")
    result = resolve_references('Read @"my notes/to do.md":2 please', ws)
    assert result.references == [
        {"type": "file", "name": "my notes/to do.md:2", "content": "     2\ttwo"}
    ]


def test_directory_listing(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(ws / "pkg" / "b.py", "")
    write(ws / "pkg" / "a.py", "")
    (ws / "pkg" / "sub").mkdir()
    (ws / "pkg" / ".git").mkdir()
    [ref] = resolve_references("what is in @pkg?", ws).references
    assert ref == {"type": "dir", "name": "pkg", "content": "pkg/\n  sub/\n  a.py\n  b.py"}
    monkeypatch.setattr(refs_mod, "MAX_DIR_ENTRIES", 2)
    [ref] = resolve_references("@pkg/", ws).references
    assert ref["content"].endswith("… and 1 more entries")


def test_errors_are_entries_not_failures(ws: Path, tmp_path: Path) -> None:
    write(tmp_path / "secret.txt", "top secret\n")
    (ws / "image.png").write_bytes(b"\x89PNG\x00\x00")
    write(ws / "ok.txt", "fine\n")
    read_files: dict[str, FileSnapshot] = {}
    result = resolve_references(
        "@missing.py @../secret.txt @image.png @ok.txt @/etc/hostname", ws, read_files
    )
    names = [(r["name"], "error" in r) for r in result.references]
    assert names == [
        ("missing.py", True),
        ("../secret.txt", True),
        ("image.png", True),
        ("ok.txt", False),
        ("/etc/hostname", True),
    ]
    errors = [r.get("error", "") for r in result.references]
    assert "does not exist" in errors[0]
    assert OUTSIDE_WORKSPACE in errors[1] and OUTSIDE_WORKSPACE in errors[4]
    assert "binary" in errors[2]
    assert all("top secret" not in r for r in result.reminders)
    assert len(result.reminders) == 5 and "was not read" in result.reminders[0]
    assert list(read_files) == [str(ws / "ok.txt")]


def test_symlink_escaping_the_workspace_is_outside(ws: Path, tmp_path: Path) -> None:
    write(tmp_path / "outside.txt", "secret\n")
    os.symlink(tmp_path / "outside.txt", ws / "link.txt")
    [ref] = resolve_references("@link.txt", ws).references
    assert OUTSIDE_WORKSPACE in ref["error"] and ref["content"] == ""


def test_bare_words_that_name_nothing_are_ignored(ws: Path) -> None:
    write(ws / "Makefile", "all:\n")
    result = resolve_references("ask @john about @dataclass usage in @Makefile", ws)
    assert [r["name"] for r in result.references] == ["Makefile"]


def test_duplicates_and_budget(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(ws / "a.txt", "a" * 100 + "\n")
    write(ws / "b.txt", "b" * 100 + "\n")
    result = resolve_references("@a.txt @a.txt @./a.txt", ws)
    assert len(result.references) == 1
    monkeypatch.setattr(refs_mod, "MAX_TOTAL_CHARS", 150)
    read_files: dict[str, FileSnapshot] = {}
    result = resolve_references("@a.txt @b.txt", ws, read_files)
    assert "error" not in result.references[0]
    assert "budget" in result.references[1]["error"]
    assert list(read_files) == [str(ws / "a.txt")]  # the file left out is not "read"


def test_large_file_needs_a_range(ws: Path) -> None:
    write(ws / "big.txt", "x" * 100 + "\n" * 3000)
    with_range = resolve_references("@big.txt:1-2", ws).references[0]
    assert "error" not in with_range
    path = write(ws / "huge.txt", ("y" * 200 + "\n") * 2000)  # > 256 KB
    assert path.stat().st_size > 256 * 1024
    whole = resolve_references("@huge.txt", ws).references[0]
    assert "256 KB" in whole["error"]


async def test_async_wrapper(ws: Path) -> None:
    write(ws / "a.txt", "hi\n")
    result = await resolve_references_async("@a.txt", ws)
    assert result.references[0]["content"] == "     1\thi"
    assert (await resolve_references_async("nothing", ws)).references == []
