"""`replacing`: the one atomic replace, also for a file that is not private (a workspace
file the file tools rewrite keeps its permission bits)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from sema_rpc.core.files import replacing


def test_a_replaced_file_gets_the_mode_asked_for_and_no_temp_file_stays(tmp_path: Path):
    target = tmp_path / "main.py"
    target.write_text("old\n")
    with replacing(target, mode=0o640) as f:
        f.write(b"new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["main.py"]


def test_a_failed_replace_keeps_the_old_file_and_its_mode(tmp_path: Path):
    target = tmp_path / "main.py"
    target.write_text("old\n")
    target.chmod(0o644)
    with pytest.raises(OSError), replacing(target, mode=0o644) as f:
        f.write(b"half")
        raise OSError("disk full")
    assert target.read_text() == "old\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["main.py"]
