"""Fixtures for the context modules' tests: a real workspace and an isolated SEMA_ROOT."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PAST = 1_600_000_000  # an mtime well outside the "racy" window of the markdown cache


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def sema_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "sema-root"
    home.mkdir()
    monkeypatch.setenv("SEMA_ROOT", str(home))
    return home


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def age_tree(root: Path, seconds: float = PAST) -> None:
    """Set every mtime under root (and root) to the past, as files that exist a while."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.utime(Path(dirpath) / name, (seconds, seconds))
    os.utime(root, (seconds, seconds))
