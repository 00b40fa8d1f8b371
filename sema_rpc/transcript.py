"""Wire transcripts: record every message of a server run, replay it, diff the result.

Recording (`sema-rpc --record DIR`) writes `DIR/<run>/wire.jsonl`, one line per message
in either direction, in the order they crossed the wire:

    {"t": 0.0123, "dir": "in" | "out", "msg": {...}}       # t: seconds since start (monotonic)

A line that was not JSON is kept as `"raw": "<text>"` instead of `msg`. Each session's
model exchanges go to `DIR/<run>/cassette-<sessionId>.jsonl` (the replay provider's
cassette format). Secrets are redacted from every line; files are created 0600.

Replay (`sema-rpc replay DIR/<run>`) starts a fresh server, sends the recorded client
messages in order — each only after the server has produced as many messages as it had
when the client originally sent it — answers recorded server→client requests with the
recorded answers, plays each session's model from its cassette, and compares what the
server sends with the recording after normalising what legitimately differs between
runs (event `seq`, the order of events inside one concurrent tool batch, timing figures).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_rpc.log import redact
from sema_rpc.providers.recording import cassette_path

WIRE_FILE = "wire.jsonl"


def _open_private(path: Path) -> Any:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


class TranscriptRecorder:
    """Appends wire messages to `<run_dir>/wire.jsonl` as they cross the wire."""

    def __init__(self, root: Path):
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.run_dir = Path(root) / f"{stamp}-{os.getpid()}"
        self.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._file = _open_private(self.run_dir / WIRE_FILE)
        self._t0 = time.monotonic()

    def record(self, direction: str, body: bytes) -> None:
        entry: dict[str, Any] = {"t": round(time.monotonic() - self._t0, 6), "dir": direction}
        try:
            entry["msg"] = json.loads(body)
        except ValueError:
            entry["raw"] = body.decode("utf-8", "replace")
        self._file.write(redact(json.dumps(entry, ensure_ascii=False)) + "\n")

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------------------- loading


@dataclass
class Entry:
    t: float
    direction: str
    msg: dict[str, Any] | None
    raw: str | None = None

    def body(self) -> bytes:
        if self.msg is not None:
            return json.dumps(self.msg).encode()
        return (self.raw or "").encode()


def load_transcript(path: Path) -> tuple[Path, list[Entry]]:
    """Returns the run folder and the entries of `path` (a run folder or its wire.jsonl)."""
    path = Path(path)
    wire = path / WIRE_FILE if path.is_dir() else path
    entries = []
    for line in wire.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        data = json.loads(line)
        entries.append(Entry(data.get("t", 0.0), data["dir"], data.get("msg"), data.get("raw")))
    return wire.parent, entries


# ---------------------------------------------------------------------------- normalising

_VOLATILE_KEYS = {"seq", "t"}


def _scrub(value: Any, replacements: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v, replacements) for k, v in value.items() if k not in _VOLATILE_KEYS}
    if isinstance(value, list):
        return [_scrub(v, replacements) for v in value]
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
        return value
    return value


def normalise(messages: list[dict[str, Any]], replacements: list[tuple[str, str]]) -> list[str]:
    """One canonical line per server message, comparable across runs.

    Events of one tool batch may interleave differently when calls run concurrently,
    so each run of consecutive tool:execution:* events is sorted by call id.
    """
    lines: list[str] = []
    block: list[tuple[str, str]] = []

    def flush() -> None:
        lines.extend(line for _key, line in sorted(block, key=lambda item: item[0]))
        block.clear()

    for message in messages:
        clean = _scrub(message, replacements)
        line = json.dumps(clean, sort_keys=True, ensure_ascii=False)
        method = message.get("method", "")
        if method.startswith("tool:execution:"):
            call_id = (message.get("params") or {}).get("toolCallId", "")
            phase = {"start": "0", "update": "1", "complete": "2", "error": "2"}[
                method.rsplit(":", 1)[1]
            ]
            block.append((f"{call_id}:{phase}:{len(block):06d}", line))
            continue
        flush()
        lines.append(line)
    flush()
    return lines


def diff(expected: list[str], actual: list[str]) -> str:
    return "".join(
        difflib.unified_diff(
            [line + "\n" for line in expected],
            [line + "\n" for line in actual],
            fromfile="recorded",
            tofile="replayed",
            n=2,
        )
    )


# ---------------------------------------------------------------------------- replaying


@dataclass
class ReplayResult:
    diff: str
    recorded: list[str] = field(default_factory=list)
    replayed: list[str] = field(default_factory=list)
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return not self.diff


def _working_dirs(entries: list[Entry]) -> list[str]:
    dirs = []
    for e in entries:
        if e.direction == "in" and e.msg and e.msg.get("method") == "session/create":
            wd = (e.msg.get("params") or {}).get("workingDir")
            if isinstance(wd, str):
                dirs.append(wd)
    return dirs


def _session_ids(entries: list[Entry]) -> dict[Any, tuple[str, str | None]]:
    """Request id of each session/create → (the session id, the model) the server answered."""
    creates = {
        e.msg["id"]: e
        for e in entries
        if e.direction == "in"
        and e.msg
        and e.msg.get("method") == "session/create"
        and "id" in e.msg
    }
    answered = {}
    for e in entries:
        if e.direction == "out" and e.msg and e.msg.get("id") in creates and "result" in e.msg:
            answered[e.msg["id"]] = (e.msg["result"]["sessionId"], e.msg["result"].get("model"))
    return answered


async def replay(
    transcript: Path, *, env: dict[str, str] | None = None, timeout_s: float = 30.0
) -> ReplayResult:
    run_dir, entries = load_transcript(transcript)
    session_ids = _session_ids(entries)
    recorded_out = [e.msg for e in entries if e.direction == "out" and e.msg is not None]
    replacements = [
        (wd, "<workingDir>") for wd in sorted(set(_working_dirs(entries)), key=len, reverse=True)
    ]

    with tempfile.TemporaryDirectory(prefix="sema-replay-") as root:
        child_env = {**os.environ, **(env or {}), "SEMA_ROOT": root}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sema_rpc",
            "--jsonl",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env,
            limit=1 << 30,
        )
        assert proc.stdin and proc.stdout and proc.stderr
        received: list[dict[str, Any]] = []
        arrived = asyncio.Event()
        stderr = bytearray()

        async def read_out() -> None:
            assert proc.stdout
            while line := await proc.stdout.readline():
                try:
                    received.append(json.loads(line))
                except ValueError:
                    received.append({"raw": line.decode("utf-8", "replace")})
                arrived.set()

        async def read_err() -> None:
            assert proc.stderr
            while chunk := await proc.stderr.read(65536):
                stderr.extend(chunk)

        readers = [asyncio.create_task(read_out()), asyncio.create_task(read_err())]

        async def wait_for_count(count: int) -> None:
            deadline = asyncio.get_running_loop().time() + timeout_s
            while len(received) < count:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0 or proc.returncode is not None:
                    return
                arrived.clear()
                try:
                    await asyncio.wait_for(arrived.wait(), remaining)
                except TimeoutError:
                    return

        out_seen = 0
        model_replacements: list[tuple[str, str]] = []
        for entry in entries:
            if entry.direction == "out":
                out_seen += 1
                continue
            await wait_for_count(out_seen)
            msg = entry.msg
            if (
                msg is not None
                and msg.get("method") == "session/create"
                and msg.get("id") in session_ids
            ):
                sid, recorded_model = session_ids[msg["id"]]
                params = dict(msg.get("params") or {})
                params["sessionId"] = sid
                cassette = cassette_path(run_dir, sid)
                if cassette.exists():
                    params["model"] = f"replay/{cassette}"
                    # The server reports the replay model; the recording named the real one.
                    model_replacements.append((f'"replay/{cassette}"', json.dumps(recorded_model)))
                params.pop("recordDir", None)
                msg = {**msg, "params": params}
                body = json.dumps(msg).encode()
            else:
                body = entry.body()
            proc.stdin.write(body + b"\n")
            await proc.stdin.drain()
        await wait_for_count(len(recorded_out))
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        for task in readers:
            task.cancel()

    # The replayed session ids equal the recorded ones (sent as sessionId), so only the
    # working dirs and volatile fields need normalising.
    expected = normalise(recorded_out, replacements)
    actual = normalise(received, replacements)
    for old, new in model_replacements:
        actual = [line.replace(old, new) for line in actual]
    return ReplayResult(
        diff=diff(expected, actual),
        recorded=expected,
        replayed=actual,
        stderr=stderr.decode("utf-8", "replace"),
    )


def replay_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="sema-rpc replay",
        description="Replay a recorded wire transcript against a fresh server and diff the result.",
    )
    parser.add_argument("transcript", help="a run folder written by --record, or its wire.jsonl")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each step")
    args = parser.parse_args(argv)
    result = asyncio.run(replay(Path(args.transcript), timeout_s=args.timeout))
    if result.ok:
        print(f"replay matches the recording ({len(result.recorded)} server messages)")
        return 0
    sys.stdout.write(result.diff)
    if result.stderr.strip():
        print("\n--- server stderr ---\n" + result.stderr[-4000:], file=sys.stderr)
    return 1
