"""Writes pytest's assertion-rewritten bytecode for every test module and conftest, ahead of
a parallel run (`make test` runs it first).

Every pytest-xdist worker imports every test module. On a fresh checkout none has its
rewritten bytecode yet, so all the workers parse, rewrite and compile all of them at the same
moment: ~6 s of CPU each on a 2-core machine, three times over. Written once here (in two
processes, one per core), the workers read them as a second run does. pytest checks each
file against its source's hash, so a stale or missing one is only rewritten again: this step
can change how fast the suite starts, never what it runs. A file whose bytecode is current is
skipped (a second run costs ~0.1 s).

It uses pytest's own rewrite functions, which are internal: on a pytest without them it says so
and writes nothing (the workers then rewrite as before).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _wanted(path: Path) -> bool:
    """What pytest rewrites here: the test modules (its default `python_files`) and conftests."""
    name = path.name
    return name == "conftest.py" or (name.startswith("test_") or name.endswith("_test.py"))


def main(root: Path = TESTS) -> int:
    try:
        from _pytest.assertion import AssertionState
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc
        from _pytest.config import get_config
    except ImportError as exc:
        print(f"assertion_cache: not written ({exc})", file=sys.stderr)
        return 0
    config = get_config()
    state = AssertionState(config, "rewrite")
    stale = []
    for source in sorted(root.rglob("*.py")):
        if not _wanted(source) or "node_modules" in source.parts:
            continue
        pyc = source.parent / "__pycache__" / (source.stem + PYC_TAIL)
        if _read_pyc(source, pyc) is None:
            stale.append((source, pyc))

    def write(files: list[tuple[Path, Path]]) -> int:
        written = 0
        for source, pyc in files:
            try:
                source_hash, code = _rewrite_test(source, config)
            except SyntaxError:
                continue  # pytest reports it at collection, with its own message
            pyc.parent.mkdir(exist_ok=True)
            written += _write_pyc(state, code, source_hash, pyc)
        return written

    # Two processes (the machine's cores; the suite starts when both are done): a forked
    # child takes every other file.
    child = os.fork() if len(stale) > 8 and hasattr(os, "fork") else -1
    if child == 0:
        code = 0
        try:
            write(stale[1::2])
        except BaseException:
            code = 1
        os._exit(code)
    written = write(stale if child < 0 else stale[0::2])
    if child > 0:
        os.waitpid(child, 0)
        written += len(stale[1::2])
    if written:
        print(f"assertion_cache: {written} test modules rewritten ahead", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else TESTS))
