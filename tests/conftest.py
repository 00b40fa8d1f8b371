"""Shared pytest fixtures, and the rule that tests never touch the user's real home.

At start-up HOME and SEMA_ROOT point at a temporary directory for the whole run, so every
server, client and engine a test starts (in process or as a subprocess inheriting the
environment) keeps its sessions, rules and settings there. A test that still manages to
write under the real `~/.sema` fails at teardown with the paths it wrote.
"""

from __future__ import annotations

import gc
import os
import pwd
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.scripted_llm import ScriptedLLM
from tests.support.server_forks import close_preloaders


def _real_homes() -> list[Path]:
    homes = {Path(pwd.getpwuid(os.getuid()).pw_dir)}
    if os.environ.get("HOME"):
        homes.add(Path(os.environ["HOME"]))
    return sorted(homes)


REAL_SEMA_DIRS = [home / ".sema" for home in _real_homes()]
if os.environ.get("SEMA_ROOT"):
    REAL_SEMA_DIRS.append(Path(os.environ["SEMA_ROOT"]).expanduser())

_TEST_HOME_ROOT = Path(tempfile.mkdtemp(prefix="sema-tests-"))
os.environ["HOME"] = str(_TEST_HOME_ROOT / "home")
os.environ["SEMA_ROOT"] = str(_TEST_HOME_ROOT / "sema-root")
(_TEST_HOME_ROOT / "home").mkdir()


def pytest_unconfigure(config: pytest.Config) -> None:
    close_preloaders()  # the servers forked for this worker's tests, and their preloaders
    shutil.rmtree(_TEST_HOME_ROOT, ignore_errors=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection loaded (the test modules, the SDKs, hypothesis) lives as long as
    the process: kept out of the cycle collector's walks from here on, and young
    collections made rarer. The collector took about a tenth of a test worker's CPU,
    mostly walking that heap again and again; tests that need a collection call
    `gc.collect()`, which still collects everything not frozen."""
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under `root` with its (mtime_ns, size); empty when `root` is absent."""
    state: dict[str, tuple[int, int]] = {}
    if not root.exists():
        return state
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            state[path] = (st.st_mtime_ns, st.st_size)
    st = os.lstat(root)
    state[str(root)] = (st.st_mtime_ns, 0)
    return state


def _slug(path: Path) -> str:
    return str(path).strip("/").replace("/", "-")


def _ours(path: str, markers: list[str]) -> bool:
    """Whether a changed path under the real ~/.sema names this run: its name (project
    folders are named after the workspace) or its text (histories record their
    workingDir) mentions this checkout or this run's temporary directories."""
    if any(m in path for m in markers):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:  # a folder, or gone again
        return False
    return any(m in head for m in markers)


@pytest.fixture(autouse=True)
def _never_write_the_real_sema_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fails a test that wrote under the real ~/.sema. On a machine where other test runs
    share that home, a change that does not name this run is only warned about."""
    before = {str(d): tree_state(d) for d in REAL_SEMA_DIRS}
    yield
    roots = [_TEST_HOME_ROOT, tmp_path_factory.getbasetemp(), Path(__file__).resolve().parents[1]]
    markers = [*(str(r) for r in roots), *(_slug(r) for r in roots)]
    for d in REAL_SEMA_DIRS:
        after = tree_state(d)
        old = before[str(d)]
        changed = sorted(p for p in after.keys() | old.keys() if after.get(p) != old.get(p))
        ours = [p for p in changed if _ours(p, markers)]
        if ours:
            pytest.fail(
                f"the test wrote under the real {d}: {', '.join(ours[:5])}"
                " (pass HOME and SEMA_ROOT of a temporary directory to what it starts)",
                pytrace=False,
            )
        if changed:
            warnings.warn(
                f"{d} changed during this test, not by this run: {', '.join(changed[:3])}",
                stacklevel=1,
            )


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A scripted model server on 127.0.0.1 (see tests/support/scripted_llm.py)."""
    with ScriptedLLM() as llm:
        yield llm
