"""`sema-rpc attach [SESSION]`: choose a live session, attach, follow it until detached."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from sema_rpc.attach.discovery import (
    NOT_FOUND,
    USAGE_ERROR,
    AttachError,
    LiveSession,
    Server,
    all_live_sessions,
    describe,
    discover_servers,
    pick,
    run_dir,
)
from sema_rpc.attach.session import Terminal, attach_session

if TYPE_CHECKING:
    pass


async def _choose(sessions: list[LiveSession], terminal: Terminal, out: Any) -> LiveSession | None:
    out.note("live sessions:")
    for i, session in enumerate(sessions, 1):
        out.note(f"  {i}. {describe(session)}")
    out.note("which one? (a number; Ctrl-D cancels)")
    while True:
        line = await terminal.lines.get()
        if line is None:
            return None
        text = line.strip()
        if text.isdigit() and 1 <= int(text) <= len(sessions):
            return sessions[int(text) - 1]
        chosen = pick(sessions, text) if text else None
        if chosen is not None:
            return chosen
        out.note(f"  1-{len(sessions)}, or a session id")


async def attach_main_async(args: argparse.Namespace, out: Any) -> int:
    terminal = Terminal()
    terminal.start()
    if args.endpoint:
        servers = [Server(pid=0, endpoint=args.endpoint, token_file=args.token_file)]
    else:
        servers = discover_servers()
        if not servers:
            out.note(
                f"sema-rpc attach: no live server in {run_dir()} (start one with "
                "`sema-rpc serve`, `sema-rpc --listen unix`, or `sema-rpc run --listen unix …`)"
            )
            return NOT_FOUND
    if args.endpoint and args.session:
        # One endpoint and a session id: attach directly (the server answers if it is not there).
        return await attach_session(
            args.endpoint, args.session, token_file=args.token_file, terminal=terminal, out=out
        )
    sessions, problems = await all_live_sessions(servers, token_file=args.token_file)
    for problem in problems:
        out.note(f"sema-rpc attach: {problem}")
    chosen = pick(sessions, args.session)
    if chosen is None:
        if args.session is not None:
            out.note(f"sema-rpc attach: no live session {args.session!r}")
            for session in sessions:
                out.note(f"  {describe(session)}")
            return NOT_FOUND
        if not sessions:
            out.note("sema-rpc attach: no live session")
            return NOT_FOUND
        if not sys.stdin.isatty() and not args.choose:
            out.note("live sessions (name one: sema-rpc attach SESSION):")
            for session in sessions:
                out.note(f"  {describe(session)}")
            return USAGE_ERROR
        chosen = await _choose(sessions, terminal, out)
        if chosen is None:
            return 0
    return await attach_session(
        chosen.server.endpoint,
        chosen.session_id,
        token_file=args.token_file or chosen.server.token_file,
        terminal=terminal,
        out=out,
    )


def attach_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sema-rpc attach",
        description="Follow a session another sema-rpc process hosts (`serve`, `--listen`, "
        "`run --listen`): the earlier conversation, then the live stream; consent asked "
        "here; typed lines sent as a prompt (idle) or a steer (working). Ctrl-C interrupts "
        "the turn; Ctrl-D detaches and the session goes on.",
    )
    parser.add_argument(
        "session", nargs="?", default=None, help="the session id (or a unique prefix)"
    )
    parser.add_argument(
        "--endpoint",
        default=None,
        help="unix:PATH or tcp:127.0.0.1:PORT (default: every live server in $SEMA_ROOT/run)",
    )
    parser.add_argument(
        "--token-file", default=None, help="the token a TCP listener wrote (its <pid>.token)"
    )
    parser.add_argument(
        "--choose",
        action="store_true",
        help="ask which session on stdin even when it is not a terminal",
    )
    parser.add_argument("--log-level", default=None)
    args = parser.parse_args(argv)
    from sema_rpc.log import setup_logging
    from sema_rpc.runner import _Output

    setup_logging(args.log_level)
    out = _Output("text")
    try:
        return asyncio.run(attach_main_async(args, out))
    except AttachError as exc:
        out.flush()
        print(f"sema-rpc attach: {exc}", file=sys.stderr, flush=True)
        return NOT_FOUND
    except KeyboardInterrupt:
        return 130
