from pathlib import Path

import pytest

from sema_rpc.tools.base import ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(working_dir=workspace, session_id="test-session")
