"""tests/support/assertion_cache.py: what it writes ahead is what pytest then runs, unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_pytest_runs_the_bytecode_written_ahead_and_its_assertions_still_explain_a_failure(
    tmp_path: Path,
):
    (tmp_path / "test_sample.py").write_text(
        "def test_sums():\n    total = sum([1, 2])\n    assert total == 4\n"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    ahead = subprocess.run(
        [sys.executable, "-m", "tests.support.assertion_cache", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "1 test modules rewritten ahead" in ahead.stderr
    [pyc] = (tmp_path / "__pycache__").glob("test_sample.*-pytest-*.pyc")
    written = pyc.stat().st_mtime_ns, pyc.read_bytes()

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout
    assert "assert 3 == 4" in run.stdout, "the failure is explained by the rewritten assert"
    assert (pyc.stat().st_mtime_ns, pyc.read_bytes()) == written, "pytest took it as it was"

    again = subprocess.run(
        [sys.executable, "-m", "tests.support.assertion_cache", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert again.stderr == "", "a current file is not written again"
