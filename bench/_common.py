"""Shared helpers for the bench scripts (not a benchmark itself).

Puts the repository root on sys.path so `tests.support.*` (WireClient, ScriptedLLM)
import from a fresh checkout, and provides statistics, table printing and /proc readers.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.scripted_llm import Reply, ScriptedLLM  # noqa: E402
from tests.support.wire_client import RpcFailure, WireClient  # noqa: E402

__all__ = [
    "REPO",
    "Checks",
    "Reply",
    "RpcFailure",
    "ScriptedLLM",
    "WireClient",
    "close_client",
    "host_header",
    "pct",
    "print_table",
    "proc_field",
    "server_env",
    "stderr_tail",
    "verdict",
    "vm_hwm_kb",
]


def server_env(llm: ScriptedLLM, sema_root: Path) -> dict[str, str]:
    """The environment of a server process talking to the scripted model server."""
    return {
        "SEMA_ROOT": str(sema_root),
        "ANTHROPIC_API_KEY": "sk-ant-bench-000000",
        "ANTHROPIC_BASE_URL": llm.url,
        "OPENAI_API_KEY": "x",
        "OPENAI_BASE_URL": llm.openai_url,
        "SEMA_MAX_RETRIES": "0",
        "SEMA_LOG_LEVEL": "WARNING",
    }


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return math.nan
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def proc_field(pid: int | None, name: str, key: str) -> int | None:
    """The integer of a `key: value ...` line of /proc/PID/<name> (`status`, `io`) of a live
    process, e.g. `proc_field(pid, "status", "VmHWM")` (kB) or `proc_field(pid, "io",
    "syscw")`; None if the process, the file or the field is unavailable."""
    if pid is None:
        return None
    prefix = key + ":"
    try:
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            if line.startswith(prefix):
                return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return None


def vm_hwm_kb(pid: int | None) -> int | None:
    """Peak resident set size (VmHWM) of a live process, in kB; None if unavailable."""
    return proc_field(pid, "status", "VmHWM")


def host_header() -> dict[str, Any]:
    """Print the host line (CPUs, load) and warn when the machine is busy."""
    cpus = os.cpu_count() or 1
    load = os.getloadavg()[0]
    print(f"host: {cpus} CPUs, load average {load:.2f} at start; python {sys.version.split()[0]}")
    if load > 0.5 * cpus:
        print(
            "warning: the machine is busy: wall-clock figures will be noisy (CPU columns less so)"
        )
    return {"cpus": cpus, "load": round(load, 2)}


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "MISS")


def print_table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    cells = [[str(c) for c in header]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for n, r in enumerate(cells):
        print(
            "  "
            + "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def _fmt(c: Any) -> str:
    if c is None:
        return "-"
    if isinstance(c, float):
        if math.isnan(c):
            return "-"
        if abs(c) >= 1000:
            return f"{c:,.0f}"
        if abs(c) >= 100:
            return f"{c:.0f}"
        if abs(c) >= 10:
            return f"{c:.1f}"
        return f"{c:.3f}" if abs(c) < 1 else f"{c:.2f}"
    if isinstance(c, int):
        return f"{c:,}"
    return str(c)


_last_stderr = [b""]


async def close_client(client: WireClient) -> None:
    """Close a server process; keep its stderr tail for failure reports."""
    try:
        await client.close()
    finally:
        _last_stderr[0] = bytes(client.stderr[-4000:])


def stderr_tail(n: int = 1500) -> str:
    return _last_stderr[0][-n:].decode("utf-8", "replace").strip()


class Checks:
    """Functional failures collected across a script: any → non-zero exit."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.failures.append(what)
            print(f"  !! FAILED: {what}", file=sys.stderr)
        return ok

    def fail(self, what: str) -> None:
        self.check(False, what)

    def section_failed(self, what: str, exc: BaseException) -> None:
        """A section of a script raised: record it with the last server's stderr tail."""
        tail = stderr_tail()
        self.fail(
            f"{what}: {type(exc).__name__}: {exc}"
            + (f"\n    server stderr: {tail}" if tail else "")
        )

    def finish(self, summary: dict[str, Any]) -> int:
        summary["ok"] = not self.failures
        if self.failures:
            summary["failures"] = self.failures
            print("\nFUNCTIONAL FAILURES:", *self.failures, sep="\n  - ")
        print("\n" + json.dumps(summary, separators=(",", ":"), sort_keys=False))
        sys.stdout.flush()
        return 1 if self.failures else 0


def round_sig(x: float | None, nd: int = 3) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    if x == 0:
        return 0.0
    return round(x, max(0, nd - 1 - math.floor(math.log10(abs(x)))))
