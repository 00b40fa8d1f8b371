"""The fast layer: the agent loop and the in-process API in one process, with the
scripted provider (no HTTP), the real ToolRunner and real tools on a temp workspace."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "sema-root"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEMA_TIKTOKEN", "off")  # chars/2.5: exact figures, no file to load
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()
