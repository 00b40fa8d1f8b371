import os
from pathlib import Path

from sema_rpc.core.policy.paths import (
    compile_glob,
    display_path,
    is_inside,
    resolve_path,
    split_glob,
)


def test_resolve_relative_and_absolute(workspace: Path) -> None:
    assert resolve_path("a/b.txt", workspace) == workspace / "a" / "b.txt"
    assert resolve_path(str(workspace / "x"), workspace) == workspace / "x"
    assert resolve_path("a/../c", workspace) == workspace / "c"


def test_resolve_expands_home(workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(workspace))
    assert resolve_path("~/notes.md", workspace) == workspace / "notes.md"


def test_resolve_follows_symlinks_also_for_new_files(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    resolved = resolve_path("link/new/file.txt", workspace)
    assert resolved == outside.resolve() / "new" / "file.txt"
    assert not is_inside(resolved, workspace)


def test_is_inside(workspace: Path, tmp_path: Path) -> None:
    assert is_inside(workspace, workspace)
    assert is_inside(workspace / "a" / "b", workspace)
    assert not is_inside(tmp_path / "ws-sibling", workspace)
    assert not is_inside(workspace.parent, workspace)


def test_is_inside_resolves_working_dir(tmp_path: Path, workspace: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert is_inside(workspace / "f", alias)


def test_display_path(workspace: Path, tmp_path: Path) -> None:
    assert display_path(workspace / "src" / "a.py", workspace) == "src/a.py"
    assert display_path(workspace, workspace) == "."
    assert display_path(tmp_path / "x", workspace) == str(tmp_path / "x")


def test_split_glob() -> None:
    assert split_glob("src/**/*.py") == ("src", "**/*.py")
    assert split_glob("*.md") == ("", "*.md")
    assert split_glob("/etc/*.conf") == ("/etc", "*.conf")
    assert split_glob("a/b.txt") == ("a/b.txt", "")


def test_compile_glob() -> None:
    def m(pattern: str, path: str) -> bool:
        return bool(compile_glob(pattern).match(path))

    assert m("*.py", "a.py") and not m("*.py", "src/a.py")
    assert m("**/*.py", "a.py") and m("**/*.py", "src/deep/a.py")
    assert m("src/**", "src/a/b") and not m("src/**", "lib/a")
    assert m("**/*.{ts,tsx}", "x/y.tsx") and not m("**/*.{ts,tsx}", "x/y.js")
    assert m("file?.[ch]", "file1.c") and not m("file?.[ch]", "file10.c")
    assert m("[!a]*", "bcd") and not m("[!a]*", "abc")
    assert m("a.b+c(1).txt", "a.b+c(1).txt")
    assert os.sep == "/"  # the tools assume POSIX paths
