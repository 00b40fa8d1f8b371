"""Private files: 0600 in 0700 folders, replaced whole or not at all."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from sema_rpc.core.files import ensure_private_dir, replacing_private, write_private


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_and_its_new_folder_are_private(tmp_path: Path):
    target = tmp_path / "a" / "b" / "titles.json"
    write_private(target, "héllo")
    assert target.read_text(encoding="utf-8") == "héllo"
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["titles.json"]  # no temp file left


def test_replacing_a_readable_file_leaves_it_private(tmp_path: Path):
    target = tmp_path / "rules.json"
    target.write_text("old")
    target.chmod(0o644)
    write_private(target, b"new", make_dir=False)
    assert target.read_bytes() == b"new"
    assert mode(target) == 0o600


def test_a_failed_write_keeps_the_old_content_and_no_temp_file(tmp_path: Path):
    target = tmp_path / "input-history.json"
    write_private(target, "old")
    with pytest.raises(RuntimeError), replacing_private(target) as f:
        f.write(b"half of the new con")
        raise RuntimeError("disk went away")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input-history.json"]


def test_concurrent_writers_each_leave_a_whole_file(tmp_path: Path):
    target = tmp_path / "title"
    payloads = [(str(i) * 50_000).encode() for i in range(8)]
    threads = [threading.Thread(target=write_private, args=(target, p)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.read_bytes() in payloads
    assert sorted(p.name for p in tmp_path.iterdir()) == ["title"]


def test_an_existing_folder_is_made_private(tmp_path: Path):
    folder = tmp_path / "history"
    folder.mkdir(mode=0o755)
    ensure_private_dir(folder)
    assert mode(folder) == 0o700
