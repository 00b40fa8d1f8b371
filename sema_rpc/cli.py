"""Command line: `sema-rpc` (serve on stdio), `sema-rpc --jsonl`, `sema-rpc run "prompt"`.

Kept free of heavy imports: the server's first answer must not wait for SDKs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys


def _protect_stdout() -> object:
    """Keep the protocol stream for ourselves: fd 1 becomes stderr for everything else.

    A stray print() from a library, or a child process inheriting fd 1, must never
    corrupt the protocol stream.
    """
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_out


def serve_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc",
        description="Agent backend over stdio JSON-RPC 2.0 (LSP framing; --jsonl for one message per line).",
        epilog="Subcommands: `sema-rpc run PROMPT` runs one prompt and prints the event stream; "
        "`sema-rpc replay DIR` replays a recorded transcript and prints the difference.",
    )
    parser.add_argument(
        "--jsonl",
        action="store_true",
        help="one JSON message per line instead of Content-Length framing",
    )
    parser.add_argument(
        "--log-level", default=None, help="stderr log level (default WARNING; env SEMA_LOG_LEVEL)"
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="record the wire transcript and each session's model cassette under DIR (for `sema-rpc replay`)",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    args = parser.parse_args(argv)
    if args.version:
        import sema_rpc

        print(f"sema-rpc {sema_rpc.__version__} (protocol {sema_rpc.PROTOCOL_VERSION})")
        return 0

    from sema_rpc.log import setup_logging

    setup_logging(args.log_level)
    protocol_out = _protect_stdout()
    from sema_rpc.rpc.server import serve

    try:
        code = asyncio.run(
            serve(sys.stdin.buffer, protocol_out, jsonl=args.jsonl, record_dir=args.record)  # type: ignore[arg-type]
        )
    except KeyboardInterrupt:
        return 130
    # Every answer is written and every file closed: spare the process the collector's
    # pass over the SDKs' object graph at exit (seconds on a loaded machine), so it
    # exits as soon as its work is done.
    gc.freeze()
    return code


def run_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc run", description="Run one prompt and print the event stream."
    )
    parser.add_argument("prompt", help="the prompt; `-` reads it from stdin")
    parser.add_argument(
        "--model",
        default=None,
        help="provider/model-id, a models.json profile, or replay/<cassette>",
    )
    parser.add_argument(
        "--cwd",
        default=None,
        help="working directory of the session (default: the current directory; for "
        "replay/demo, the bundled demo workspace the recording was made in)",
    )
    parser.add_argument("--format", choices=["jsonl", "text"], default="jsonl")
    parser.add_argument(
        "--permission-mode", choices=["default", "acceptEdits", "bypass"], default="default"
    )
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="allow every tool call inside the workspace without asking (permission mode "
        "bypass): writes, edits, any command. File paths outside the workspace stay refused, "
        "and so do writes inside .git/. Without --yes, calls that need consent are refused "
        "and the model is told.",
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="record the wire transcript and the model cassette under DIR/<run>/ "
        "(replay with `sema-rpc replay DIR/<run>`)",
    )
    parser.add_argument("--log-level", default=None)
    args = parser.parse_args(argv)

    from sema_rpc.log import setup_logging

    setup_logging(args.log_level)
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    from sema_rpc.core.config import recording_workspace
    from sema_rpc.runner import run_once

    cwd = args.cwd
    if cwd is None:
        cwd = recording_workspace(args.model) or "."

    try:
        return asyncio.run(
            run_once(
                prompt,
                model=args.model,
                working_dir=os.path.abspath(cwd),
                output_format=args.format,
                permission_mode="bypass" if args.yes else args.permission_mode,
                yes=args.yes,
                log_level=args.log_level,
                record_dir=os.path.abspath(args.record) if args.record else None,
            )
        )
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        code = run_main(argv[1:])
    elif argv and argv[0] == "replay":
        from sema_rpc.record.replay import replay_main

        code = replay_main(argv[1:])
    else:
        code = serve_main(argv)
    sys.exit(code)


if __name__ == "__main__":
    main()
