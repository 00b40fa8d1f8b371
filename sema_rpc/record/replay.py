"""Replay (`sema-rpc replay DIR/<run> [--cwd NEWDIR]`).

Starts a fresh server on an empty SEMA_ROOT (seeded from the meta lines, see
`snapshot`), sends the recorded client messages in order — each only after the server
has produced as many messages as it had when the client originally sent it — answers
recorded server→client requests with the recorded answers, plays each session's model
from its cassette, and compares what the server sends with the recording after
normalising what legitimately differs between runs (`normalise`). Tools run for real:
`--cwd` maps the recorded working dir to another folder (a fresh copy of the workspace
as it was), in the client messages, the saved state and the cassettes (`paths`). Message
ids are fresh in every run: a client message that names one gets the replayed server's
id for the same message (`MessageIds`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sema_client import DEFERRED, SemaClient, SemaConnectionError

from sema_rpc.core.files import write_private
from sema_rpc.protocol import SERVER_REQUESTS
from sema_rpc.record.diff import diff
from sema_rpc.record.normalise import MessageIds, normalise, path_forms, secrets_redacted
from sema_rpc.record.paths import PathMap, rewrite_cassette_paths
from sema_rpc.record.snapshot import Seeder
from sema_rpc.record.transcript import Entry, load_transcript


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


def _server_request_methods(entries: list[Entry]) -> set[str]:
    """The protocol's server→client requests, and any other the recording holds."""
    methods = set(SERVER_REQUESTS)
    for e in entries:
        if (
            e.direction == "out"
            and e.msg
            and "id" in e.msg
            and isinstance(e.msg.get("method"), str)
        ):
            methods.add(e.msg["method"])
    return methods


def _path_map(entries: list[Entry], cwd: str | Path | Mapping[str, str | Path] | None) -> PathMap:
    if cwd is None:
        return PathMap({})
    recorded = list(dict.fromkeys(_working_dirs(entries)))
    if isinstance(cwd, Mapping):
        pairs = {str(old): str(new) for old, new in cwd.items()}
        unknown = [old for old in pairs if old not in recorded]
        if unknown:
            raise ValueError(
                f"not a recorded working dir: {', '.join(unknown)}"
                f" (recorded: {', '.join(recorded) or 'none'})"
            )
    else:
        if len(recorded) != 1:
            raise ValueError(
                "--cwd DIR needs exactly one recorded working dir; this transcript has "
                f"{len(recorded)} ({', '.join(recorded) or 'none'}): use --cwd RECORDED=DIR"
            )
        pairs = {recorded[0]: str(cwd)}
    for new in pairs.values():
        if not Path(new).is_dir():
            raise ValueError(f"--cwd: not a directory: {new}")
    return PathMap({old: os.path.abspath(new) for old, new in pairs.items()})


async def replay(
    transcript: Path,
    *,
    env: dict[str, str] | None = None,
    timeout_s: float = 30.0,
    cwd: str | Path | Mapping[str, str | Path] | None = None,
) -> ReplayResult:
    """Replay a recorded transcript against a fresh server; the difference is in `.diff`.

    `cwd`: run the tools in another folder than the recorded working dir — a folder (the
    transcript must have one working dir) or {recorded dir: folder}. Raises ValueError
    for an unusable `cwd`.
    """
    from sema_rpc.providers.recording import cassette_path

    run_dir, entries = load_transcript(transcript)
    session_ids = _session_ids(entries)
    recorded_out = [e.msg for e in entries if e.direction == "out" and e.msg is not None]
    paths = _path_map(entries, cwd)
    recorded_dirs = set(_working_dirs(entries))
    replacements = [
        (form, "<workingDir>")
        for form in sorted(
            {f for wd in recorded_dirs for f in path_forms(wd)}, key=len, reverse=True
        )
    ]
    # The replay's own dirs, and the recorded ones: the model's text still names them where
    # a path was cut across two text deltas (not rewritten).
    replayed_dirs = {paths.apply(wd) for wd in recorded_dirs} | recorded_dirs
    replayed_replacements = [
        (form, "<workingDir>")
        for form in sorted(
            {f for wd in replayed_dirs for f in path_forms(wd)}, key=len, reverse=True
        )
    ]

    with tempfile.TemporaryDirectory(prefix="sema-replay-") as root:
        child_env = {**os.environ, **(env or {}), "SEMA_ROOT": root}
        seeder = Seeder(Path(root), paths)
        received: list[dict[str, Any]] = []
        arrived = asyncio.Event()
        stderr = bytearray()

        def on_message(message: dict[str, Any], _raw: bytes) -> None:
            received.append(message)
            arrived.set()

        client = await SemaClient.spawn(
            env=child_env, jsonl=True, new_session=False, stderr_callback=stderr.extend
        )
        client.on_message(on_message)
        # Server requests are answered by the recorded answers, sent in their place below.
        for method in _server_request_methods(entries):
            client.on_request(method, lambda _params: DEFERRED)

        async def wait_for_count(count: int) -> None:
            deadline = asyncio.get_running_loop().time() + timeout_s
            while len(received) < count:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0 or not client.is_connected:
                    return
                arrived.clear()
                try:
                    await asyncio.wait_for(arrived.wait(), remaining)
                except TimeoutError:
                    return

        out_seen = 0
        model_replacements: list[tuple[str, str]] = []
        message_ids = MessageIds()
        for entry in entries:
            if entry.direction == "out":
                out_seen += 1
                continue
            if entry.direction == "meta":
                if entry.meta is not None:
                    seeder.seed(entry.meta)
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
                    if paths:  # the model's paths point into the recorded workspace too
                        copy = Path(root) / "replay-cassettes" / cassette.name
                        text = cassette.read_text(encoding="utf-8")
                        write_private(copy, rewrite_cassette_paths(text, paths))
                        cassette = copy
                    params["model"] = f"replay/{cassette}"
                    # The server reports the replay model; the recording named the real one.
                    model_replacements.append((f'"replay/{cassette}"', json.dumps(recorded_model)))
                params.pop("recordDir", None)
                msg = {**msg, "params": params}
            if msg is not None and paths:
                msg = paths.apply_json(msg)
            if msg is not None:
                message_ids.learn(recorded_out[:out_seen], received)
                msg = message_ids.apply(msg)
            body = json.dumps(msg).encode() if msg is not None else entry.body()
            try:
                await client.send_body(body)
            except SemaConnectionError:
                break  # the server is gone: the diff shows what it did not send
        await wait_for_count(len(recorded_out))
        await client.close(timeout=timeout_s)

    # The replayed session ids equal the recorded ones (sent as sessionId), so only the
    # working dirs and volatile fields need normalising.
    expected = normalise(recorded_out, replacements)
    actual = normalise(received, replayed_replacements)
    for old, new in model_replacements:
        actual = [line.replace(old, new) for line in actual]
    actual = [secrets_redacted(line, child_env) for line in actual]
    return ReplayResult(
        diff=diff(expected, actual),
        recorded=expected,
        replayed=actual,
        stderr=stderr.decode("utf-8", "replace"),
    )


def _parse_cwd(values: list[str] | None) -> str | dict[str, str] | None:
    """`--cwd DIR` → DIR; `--cwd RECORDED=DIR` (repeatable) → {RECORDED: DIR}."""
    if not values:
        return None
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    pairs = {}
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old or not new:
            raise ValueError(f"--cwd: expected RECORDED=DIR with several --cwd, got {value!r}")
        pairs[old] = new
    return pairs


def replay_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="sema-rpc replay",
        description="Replay a recorded wire transcript against a fresh server and diff the "
        "result. Tools run for real, in the recorded working dir unless --cwd says otherwise.",
    )
    parser.add_argument("transcript", help="a run folder written by --record, or its wire.jsonl")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each step")
    parser.add_argument(
        "--cwd",
        action="append",
        metavar="DIR",
        help="run the session in DIR instead of the recorded working dir (a fresh copy of the "
        "workspace as it was when recording started); RECORDED=DIR when the transcript has "
        "several working dirs (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        result = asyncio.run(
            replay(Path(args.transcript), timeout_s=args.timeout, cwd=_parse_cwd(args.cwd))
        )
    except (ValueError, OSError) as exc:  # a bad --cwd; no transcript there
        print(f"sema-rpc replay: {exc}", file=sys.stderr)
        return 2
    if result.ok:
        print(f"replay matches the recording ({len(result.recorded)} server messages)")
        return 0
    sys.stdout.write(result.diff)
    if result.stderr.strip():
        print("\n--- server stderr ---\n" + result.stderr[-4000:], file=sys.stderr)
    return 1
