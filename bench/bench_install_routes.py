"""From nothing to a first answer, per install route: `uv tool install`, `pipx install`,
`uvx --from`, each with the release wheel (`dist/`, built by `make dist`; built here into
a temporary folder when missing).

For each route: fresh tool directories, an empty uv cache, a temporary HOME and
SEMA_ROOT, a working directory outside the checkout; the clock runs from the install
command's start to the end of `sema-rpc run --model replay/demo "What is in this
project?"` (the bundled demo, offline), whose answer is checked. The dependencies come
from a folder of wheels that pip gathers first from its cache or the package index (its
time is printed on its own line): the routes install with `--no-index` from it, as they
would from a package index whose files are already cached. A second `run` after the
install is timed too (what every later start costs).

Run: `.venv/bin/python bench/bench_install_routes.py` (`--runs N`: N fresh installs per route,
default 1; the median is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO

from tests.support.install_routes import (
    DEMO_PROMPT,
    ROUTES,
    build_wheel,
    gather_wheelhouse,
    install,
    route_env,
    run_checked,
)


def _wheel(tmp: Path) -> Path:
    found = sorted((REPO / "dist").glob("sema_rpc-*-py3-none-any.whl"))
    if found:
        return found[-1]
    return build_wheel(tmp / "dist")


def _route(route: str, wheel: Path, wheelhouse: Path, root: Path) -> tuple[float, float]:
    env, cwd = route_env(root), root / "home"
    demo = ["run", "--format", "text", "--model", "replay/demo", DEMO_PROMPT]
    started = time.perf_counter()
    sema = install(route, wheel, wheelhouse, root)
    first = run_checked([*sema, *demo], env=env, cwd=cwd)
    to_answer = time.perf_counter() - started
    if "tasklist" not in first.stdout:
        sys.exit(f"{route}: the demo did not answer:\n{first.stdout}\n{first.stderr}")
    started = time.perf_counter()
    run_checked([*sema, *demo], env=env, cwd=cwd)
    return to_answer, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sema-bench-install-") as t:
        tmp = Path(t)
        wheel = _wheel(tmp)
        started = time.perf_counter()
        wheelhouse = tmp / "wheelhouse"
        gather_wheelhouse(wheel, wheelhouse)
        gathered = time.perf_counter() - started
        rows: dict[str, tuple[float, float]] = {}
        for route in ROUTES:
            runs = []
            for i in range(args.runs):
                home = tmp / f"{route.replace(' ', '-')}-{i}"
                runs.append(_route(route, wheel, wheelhouse, home))
                shutil.rmtree(home, ignore_errors=True)
            rows[route] = (
                statistics.median(r[0] for r in runs),
                statistics.median(r[1] for r in runs),
            )
        print(f"wheel: {wheel.name}, {wheel.stat().st_size / 1024:.0f} KiB")
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"dependency wheels gathered by pip (cache or index): {gathered:.1f} s")
        print(f"{'route':<10} {'install → first answer s':>26} {'next run s':>12}")
        for route, (first, again) in rows.items():
            print(f"{route:<10} {first:>26.1f} {again:>12.2f}")
        summary = {r: {"to_first_answer_s": v[0], "next_run_s": v[1]} for r, v in rows.items()}
        print(json.dumps({"bench": "install", "wheel_bytes": wheel.stat().st_size, **summary}))


if __name__ == "__main__":
    main()
