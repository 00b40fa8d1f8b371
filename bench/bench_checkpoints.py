"""Checkpoint figures: what keeping file contents costs a Write, what a Bash command's
stamp scan costs on a large workspace, and how long a rewind of many files takes.

    .venv/bin/python bench/bench_checkpoints.py [--files N] [--runs N]

1. per Write: a 5.6 KB source file rewritten 200 times in a row (a new content each time)
   through the store's real before/after hooks around the real atomic write
   (`tools.write.atomic_write`, with fsync, timed alone first): the µs the hooks add per
   Write (median), and the bytes the store grows by per Write (blobs are
   content-addressed: a content seen before — the previous Write's — is not stored again);
2. per Bash command on a 10,000-file workspace (100 folders of 100 files, plus a
   `node_modules` folder the scan skips): one stamp scan (ms, median), and a whole
   command's before + after (two scans, the named file kept) around a `sed -i`-like change;
3. rewind: 100 files changed by Edit-like writes in one turn, then `plan_rewind` + `apply`
   (hash each file, conflict check, atomic write of the old content without fsync),
   ms (median).

In process, in a temporary SEMA_ROOT; nothing crosses the wire. The last line is a JSON
summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_write(root: Path, runs: int) -> dict[str, float]:
    from sema_rpc.engine.store.checkpoints import CheckpointStore
    from sema_rpc.tools.write import atomic_write

    work = root / "write-ws"
    work.mkdir()
    target = work / "module.py"
    target.write_bytes(b"x = 0\n" * 700)  # ~4 KiB
    store = CheckpointStore("bench-write", work)
    store.begin_turn("m_bench")
    plain: list[float] = []
    for i in range(runs):
        data = (f"x = {i}\n" * 700).encode()
        t0 = time.perf_counter()
        atomic_write(target, data)
        plain.append(time.perf_counter() - t0)
    hooked: list[float] = []
    for i in range(runs):  # consecutive Writes: each one's "before" is the last "after"
        data = (f"y = {i}\n" * 700).encode()
        t0 = time.perf_counter()
        kept = store.before_write([target])
        t1 = time.perf_counter()
        atomic_write(target, data)
        t2 = time.perf_counter()
        store.after_write(kept, "Write")
        t3 = time.perf_counter()
        hooked.append((t1 - t0) + (t3 - t2))
    stored = _dir_bytes(store.root)
    return {
        "size_bytes": target.stat().st_size,
        "write_us": round(statistics.median(plain) * 1e6, 1),
        "hooks_us": round(statistics.median(hooked) * 1e6, 1),
        "stored_bytes_per_write": round(stored / runs),
    }


def bench_scan(root: Path, files: int, runs: int) -> dict[str, float]:
    from sema_rpc.engine.store.checkpoint_scan import scan_stamps
    from sema_rpc.engine.store.checkpoints import CheckpointStore

    work = root / "scan-ws"
    per_dir = 100
    for d in range(files // per_dir):
        folder = work / f"pkg{d:03d}"
        folder.mkdir(parents=True)
        for f in range(per_dir):
            (folder / f"file{f:03d}.py").write_text(f"VALUE = {d * per_dir + f}\n")
    skipped = work / "node_modules" / "dep"
    skipped.mkdir(parents=True)
    for f in range(2000):
        (skipped / f"x{f}.js").write_text("module.exports = 1\n")
    scans = []
    for _ in range(runs):
        t0 = time.perf_counter()
        stamps, capped = scan_stamps(work)
        scans.append(time.perf_counter() - t0)
    assert len(stamps) == files and not capped, (len(stamps), capped)

    store = CheckpointStore("bench-scan", work)
    store.begin_turn("m_bench")
    target = work / "pkg000" / "file000.py"
    commands = []
    for i in range(runs):
        command = f"sed -i 's/VALUE/V{i}/' pkg000/file000.py"
        t0 = time.perf_counter()
        watch = store.before_command(command, [])
        t1 = time.perf_counter()
        target.write_text(f"V{i} = 0\n")  # what the sed would do
        t2 = time.perf_counter()
        store.after_command(watch)
        t3 = time.perf_counter()
        commands.append((t1 - t0) + (t3 - t2))
    assert store.turn_changes("m_bench"), "the change was seen"
    return {
        "files": files,
        "scan_ms": round(statistics.median(scans) * 1e3, 1),
        "command_ms": round(statistics.median(commands) * 1e3, 1),
    }


def bench_rewind(root: Path, changed: int, runs: int) -> dict[str, float]:
    from sema_rpc.engine.store.checkpoints import CheckpointStore
    from sema_rpc.tools.write import atomic_write

    times = []
    for run in range(runs):
        work = root / f"rewind-ws{run}"
        work.mkdir()
        paths = [work / f"file{i:03d}.py" for i in range(changed)]
        for i, p in enumerate(paths):
            p.write_text("".join(f"line {n} of file {i}\n" for n in range(100)))
        store = CheckpointStore(f"bench-rewind{run}", work)
        store.begin_turn("m_turn")
        for p in paths:
            kept = store.before_write([p])
            atomic_write(p, p.read_bytes().replace(b"line 5 ", b"LINE 5 "))
            store.after_write(kept, "Edit")
        t0 = time.perf_counter()
        plan = store.plan_rewind(store.turn_pos["m_turn"])
        done = store.apply(plan)
        times.append(time.perf_counter() - t0)
        assert len(done) == changed and not plan.conflicts
        assert b"LINE 5" not in paths[0].read_bytes()
    return {"files": changed, "rewind_ms": round(statistics.median(times) * 1e3, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-") as tmp:
        root = Path(tmp)
        os.environ["SEMA_ROOT"] = str(root / "sema-root")
        write = bench_write(root, 200)
        scan = bench_scan(root, args.files, args.runs)
        rewind = bench_rewind(root, 100, args.runs)
    load = os.getloadavg()[0]
    print(f"checkpoints (load {load:.2f}, {os.cpu_count()} CPUs)")
    print(
        f"  Write of a {write['size_bytes']:,}-byte file: the write itself {write['write_us']} µs "
        f"(fsync'd); checkpoint hooks +{write['hooks_us']} µs; "
        f"{write['stored_bytes_per_write']:,} bytes stored per Write"
    )
    print(
        f"  Bash on a {scan['files']:,}-file workspace: one stamp scan {scan['scan_ms']} ms; "
        f"a command's before + after (2 scans, named file kept) {scan['command_ms']} ms"
    )
    print(f"  rewind of {rewind['files']} changed files: {rewind['rewind_ms']} ms")
    summary = {
        "bench": "checkpoints",
        "host": {"cpus": os.cpu_count(), "load": round(load, 2)},
        "write": write,
        "bash": scan,
        "rewind": rewind,
    }
    print(json.dumps(summary, separators=(",", ":")))


if __name__ == "__main__":
    main()
