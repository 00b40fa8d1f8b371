"""Command line: `sema-rpc` (serve on stdio), `sema-rpc --jsonl`, `sema-rpc --acp` (the Agent
Client Protocol), `sema-rpc run "prompt"`.

Kept free of heavy imports: the server's first answer must not wait for SDKs. A stdio
server answers a plainly valid first `initialize` before it imports asyncio
(`_read_first`); the event loop and the server start after that answer.

Start-up runs with the garbage collector off (it allocates hundreds of thousands of
long-lived objects, nothing cyclic worth collecting); once the first prompt is answered
(`run`) or the first session is created (server), they are frozen out of the collector's
way and it is turned back on. After an orderly end (turns answered, history synced, HTTP
clients closed, answers written, recording closed, logging shut down, both std streams
flushed) the process leaves with `os._exit`, sparing the interpreter's teardown of every
module; any other way out goes through the normal `sys.exit`.
"""

from __future__ import annotations

import gc
import io
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sema_rpc.rpc.frames import First


def _no_pydantic_plugins() -> None:
    """pydantic looks for plugins the first time it builds a validator: it imports
    `importlib.metadata` and reads the entry points of every installed distribution
    (tens of ms, on the way to the first answer). This process takes none: a plugin
    found in the environment (an observability one, say) would see every wire message
    the server validates — prompts, file contents, tool output — and that data must not
    leave through it. So pydantic's plugin loader is replaced, before pydantic is used,
    by one that finds none (`pydantic.plugin._loader.get_plugins`, the one name pydantic
    imports from it; what `PYDANTIC_DISABLE_PLUGINS=__all__` does, without the import
    and without putting the variable in the environment of the commands we run)."""
    if "pydantic.plugin._loader" in sys.modules:
        return
    import types

    loader = types.ModuleType("pydantic.plugin._loader")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules[loader.__name__] = loader


def startup_done() -> None:
    """End of start-up: freeze what start-up allocated, turn the collector back on."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


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
    args = _plain_serve_args(argv) or _parse_serve_args(argv)
    if args.trust_project:
        from sema_rpc.core.trust import trust_project_once

        trust_project_once()
    if args.version:
        import sema_rpc

        print(f"sema-rpc {sema_rpc.__version__} (protocol {sema_rpc.PROTOCOL_VERSION})")
        return 0

    protocol_out = _protect_stdout()
    # `--listen` opens its listener before the stdio client is read: no early answer.
    first = None if args.listen is not None else _read_first(protocol_out, args.acp, args.jsonl)
    if first is not None and first.stopped:  # a stop signal while waiting for it
        _fast_exit(128 + first.stopped, protocol_out)
    from sema_rpc.log import setup_logging  # after: nothing before logs, and logging costs

    setup_logging(args.log_level)
    if args.acp:
        return _serve_acp(protocol_out, first)
    import asyncio

    from sema_rpc.rpc.server import serve

    async def serving() -> int:
        # A server that never creates a session still gets its collector back.
        asyncio.get_running_loop().call_later(_GC_FALLBACK_S, startup_done)
        stop = _stop_on_signals()
        host = None
        if args.listen is not None:
            host = await _open_host(args.listen, one_shot=False)
            if host is None:
                return USAGE_ERROR
        code = await serve(
            sys.stdin.buffer,
            protocol_out,  # type: ignore[arg-type]
            jsonl=args.jsonl,
            record_dir=args.record,
            after_first_session=startup_done,
            stop=stop.event,
            host=host,
            first=first,
        )
        return _stopped_code(stop, code)

    try:
        code = asyncio.run(serving())
    except KeyboardInterrupt:
        return 130
    _fast_exit(code, protocol_out)
    return code  # not reached


def _plain_serve_args(argv: list[str]) -> Any:
    """The stdio server's command line as editors give it (nothing, `--jsonl` or `--acp`),
    without argparse (its import and a parser cost the path to `initialize`); None for
    any other, which argparse parses."""
    if argv not in ([], ["--jsonl"], ["--acp"]):
        return None
    import types

    return types.SimpleNamespace(
        jsonl=argv == ["--jsonl"], acp=argv == ["--acp"], log_level=None, record=None,
        trust_project=False, listen=None, version=False,
    )  # fmt: skip


def _parse_serve_args(argv: list[str]) -> Any:
    import argparse

    parser = argparse.ArgumentParser(
        prog="sema-rpc",
        description="Agent backend over stdio JSON-RPC 2.0 (LSP framing; --jsonl for one message per line).",
        epilog="Subcommands: `sema-rpc run PROMPT` runs one prompt and prints the event stream; "
        "`sema-rpc login` stores a model key (`logout` removes it, `status` shows where "
        "keys come from); "
        "`sema-rpc serve` hosts sessions for socket clients (see --listen); "
        "`sema-rpc replay DIR` replays a recorded transcript and prints the difference; "
        "`sema-rpc view RECORDING_OR_HISTORY -o session.html` renders a session as one HTML page; "
        "`sema-rpc attach [SESSION]` follows a session another sema-rpc process hosts; "
        "`sema-rpc trust list|add|revoke` manages which projects may start the programs their "
        ".sema/mcp.json names.",
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
    parser.add_argument(
        "--acp",
        action="store_true",
        help="speak the Agent Client Protocol (v1, one JSON message per line) instead of "
        "sema-rpc's own protocol (Zed, JetBrains, Neovim ACP plugins)",
    )
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="start the MCP servers a project's .sema/mcp.json defines without asking, for "
        "this process's sessions (nothing is stored; `sema-rpc trust add DIR` trusts for good)",
    )
    parser.add_argument(
        "--listen",
        metavar="ENDPOINT",
        default=None,
        help="also accept clients on a socket, sharing this server's sessions: `unix` "
        "($SEMA_ROOT/run/<pid>.sock), `unix:PATH`, or `tcp:127.0.0.1:PORT` (a token file "
        "beside it); they attach to sessions with session/attach",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    args = parser.parse_args(argv)
    if args.listen is not None and args.acp:
        parser.error("--listen speaks sema-rpc's own protocol: not with --acp")
    return args


def _read_first(protocol_out: Any, acp: bool, jsonl: bool) -> First:
    """The stdio server's first message, read before the event loop (frames.read_first,
    with the dialect's framing): a plainly valid `initialize` is answered at once, with
    the bytes the server would write; anything else is left to the server."""
    from sema_rpc.rpc.frames import read_first

    if acp:
        from sema_rpc.acp.advert import initialize_answer
    else:
        from sema_rpc.rpc.initialize import initialize_answer
    return read_first(0, protocol_out, jsonl=jsonl or acp, answer=initialize_answer)


async def _open_host(spec: str, *, one_shot: bool) -> Any:
    """A listening server's host with its listener open (`--listen`), its endpoint on
    stderr; None (the reason on stderr) when it cannot listen."""
    from sema_rpc.rpc.listen import ListenError
    from sema_rpc.rpc.shared import SharedHost

    host = SharedHost(one_shot=one_shot)
    try:
        listener = await host.listen(spec)
    except (ListenError, OSError) as exc:
        print(f"sema-rpc: cannot listen: {exc}", file=sys.stderr, flush=True)
        return None
    print(f"sema-rpc: listening on {listener.endpoint}", file=sys.stderr, flush=True)
    return host


def sockets_main(argv: list[str]) -> int:
    """`sema-rpc serve`: sessions hosted for socket clients only, until a stop signal."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="sema-rpc serve",
        description="Host sessions for clients that connect to a socket (no stdio client): "
        "they create or attach to sessions; the sessions live as long as this process. "
        "Stops on SIGTERM, SIGINT or SIGHUP (running turns interrupted, history written).",
    )
    parser.add_argument(
        "--listen",
        metavar="ENDPOINT",
        default="unix",
        help="`unix` ($SEMA_ROOT/run/<pid>.sock, the default), `unix:PATH`, or "
        "`tcp:127.0.0.1:PORT` (PORT 0: any; clients present the token of "
        "$SEMA_ROOT/run/<pid>.token)",
    )
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="start the MCP servers a project's .sema/mcp.json defines without asking",
    )
    parser.add_argument("--log-level", default=None)
    args = parser.parse_args(argv)
    if args.trust_project:
        from sema_rpc.core.trust import trust_project_once

        trust_project_once()
    from sema_rpc.log import setup_logging

    setup_logging(args.log_level)
    out = _protect_stdout()
    import asyncio

    async def serving() -> int:
        stop = _stop_on_signals()
        host = await _open_host(args.listen, one_shot=False)
        if host is None:
            return USAGE_ERROR
        startup_done()
        await stop.event.wait()
        await host.shutdown()
        host.close_listeners()
        await host.aclose()
        return _stopped_code(stop, 0)

    try:
        code = asyncio.run(serving())
    except KeyboardInterrupt:
        return 130
    _fast_exit(code, out)
    return code  # not reached


def _serve_acp(protocol_out: object, first: First | None) -> int:
    import asyncio

    from sema_rpc.acp.front import serve_acp

    async def serving() -> int:
        asyncio.get_running_loop().call_later(_GC_FALLBACK_S, startup_done)
        stop = _stop_on_signals()
        code = await serve_acp(sys.stdin.buffer, protocol_out, stop=stop.event, first=first)  # type: ignore[arg-type]
        return _stopped_code(stop, code)

    try:
        code = asyncio.run(serving())
    except KeyboardInterrupt:
        return 130
    _fast_exit(code, protocol_out)
    return code  # not reached


_GC_FALLBACK_S = 10.0
"""How long a server may run without a session before its collector comes back anyway."""


class _StopEvent:
    """A stop signal came (`event`), and which one (`signum`, 0 until then)."""

    def __init__(self) -> None:
        import asyncio

        self.event = asyncio.Event()
        self.signum = 0


def _stop_on_signals() -> _StopEvent:
    """SIGTERM, SIGINT, SIGHUP: the orderly end that end of input starts, bounded by a
    hard stop (every group killed, the process gone) within STOP_DEADLINE_S; a second
    signal stops at once. Shared by both dialects.

    The process supervisor is imported when a signal comes, not before: nothing of it
    is on the path to `initialize`."""
    import asyncio
    import signal

    stop = _StopEvent()

    def on_signal(signum: int) -> None:
        from sema_rpc.core.processes import STOP_DEADLINE_S, hard_stop, hard_stop_after

        if stop.event.is_set():
            hard_stop(128 + signum)
        stop.signum = signum
        stop.event.set()
        hard_stop_after(STOP_DEADLINE_S - _HARD_STOP_MARGIN_S, 128 + signum)

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # processes.STOP_SIGNALS
        try:
            loop.add_signal_handler(signum, on_signal, signum)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    return stop


_HARD_STOP_MARGIN_S = 0.3
"""The hard stop comes this much before the deadline: killing and exiting take time too."""


def _stopped_code(stop: _StopEvent, code: int) -> int:
    return 128 + stop.signum if stop.event.is_set() else code


def _fast_exit(code: int, *streams: object) -> None:
    """Leave now: the orderly end is done (see the module docstring)."""
    import logging

    processes = sys.modules.get("sema_rpc.core.processes")
    if processes is not None:  # not imported: nothing was ever started
        processes.close_all()  # whatever is still held dies with us, after the guardian's sweep
    logging.shutdown()
    for stream in (*streams, sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        flush = getattr(stream, "flush", None)
        if flush is not None:
            try:
                flush()
            except (OSError, ValueError):
                pass
    os._exit(code)


def run_main(argv: list[str]) -> int:
    import argparse

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
        "--sandbox",
        choices=["read-only", "workspace-write", "off"],
        default=None,
        help="the OS sandbox commands run in (default: workspace-write where the kernel "
        "can, else off). Commands stay inside it even with --yes; `off` lifts it.",
    )
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="start the MCP servers the project's .sema/mcp.json defines (programs the "
        "repository names) for this run. --yes does not: without this flag they are not "
        "started (`sema-rpc trust add DIR` trusts a project for good)",
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="record the wire transcript and the model cassette under DIR/<run>/ "
        "(replay with `sema-rpc replay DIR/<run>`)",
    )
    parser.add_argument(
        "--spawn",
        action="store_true",
        default=os.environ.get("SEMA_RUN_SPAWN") == "1",
        help="run the server as a child process (`sema-rpc --jsonl`) instead of in this "
        "process; for debugging the subprocess path (env SEMA_RUN_SPAWN=1)",
    )
    parser.add_argument(
        "--listen",
        metavar="ENDPOINT",
        default=None,
        help="let other clients watch and approve this run: `unix` "
        "($SEMA_ROOT/run/<pid>.sock), `unix:PATH` or `tcp:127.0.0.1:PORT` (`sema-rpc "
        "attach`, an editor's attach command). Without --yes, a call that needs consent "
        "waits for an attached client to answer",
    )
    parser.add_argument("--log-level", default=None)
    args = parser.parse_args(argv)

    from sema_rpc.log import setup_logging

    setup_logging(args.log_level)
    if args.trust_project:
        from sema_rpc.core.trust import trust_project_once

        trust_project_once()
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    out = _user_stdout()
    import asyncio

    from sema_rpc.core.config import recording_workspace
    from sema_rpc.runner import run_once

    cwd = args.cwd
    if cwd is None:
        cwd = recording_workspace(args.model) or "."

    try:
        code = asyncio.run(
            run_once(
                prompt,
                model=args.model,
                working_dir=os.path.abspath(cwd),
                output_format=args.format,
                permission_mode="bypass" if args.yes else args.permission_mode,
                yes=args.yes,
                sandbox=args.sandbox,
                log_level=args.log_level,
                record_dir=os.path.abspath(args.record) if args.record else None,
                spawn=args.spawn,
                trust_project=args.trust_project,
                listen=args.listen,
                stdout=out,
                after_first_answer=startup_done,
            )
        )
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 130
    _fast_exit(code, out)
    return code  # not reached


def trust_main(argv: list[str]) -> int:
    """`sema-rpc trust list|add|revoke`: the projects whose .sema/mcp.json may start."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="sema-rpc trust",
        description="Which projects may start the MCP servers their .sema/mcp.json defines "
        "(stored in $SEMA_ROOT/trust.json, 0600). A changed definition is asked about again.",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="the trusted projects and their definitions")
    add = sub.add_parser("add", help="trust the current .sema/mcp.json of a project for good")
    add.add_argument("dir", nargs="?", default=".", help="the project (default: .)")
    revoke = sub.add_parser("revoke", help="forget a project's trust (--all: every project's)")
    revoke.add_argument("dir", nargs="?", default=None, help="the project (default: .)")
    revoke.add_argument("--all", action="store_true", help="forget every project's trust")
    args = parser.parse_args(argv)
    from pathlib import Path

    from sema_rpc.core import trust

    if args.action == "list":
        listed = trust.list_trusted()
        if not listed:
            print(f"no trusted projects ({trust.trust_path()})")
        for project, entries in listed.items():
            for e in entries:
                names = ", ".join(e.get("servers") or [])
                print(f"{project}\t{e.get('file')}\t{e.get('digest')}\t{names}")
        return 0
    if args.action == "add":
        from sema_rpc.mcp.config import load_mcp_config

        folder = Path(args.dir).resolve()
        config = load_mcp_config(folder)
        servers = config.project_servers()
        if config.project_digest is None or config.project_file is None:
            print(f"sema-rpc trust: {folder} has no .sema/mcp.json servers", file=sys.stderr)
            return USAGE_ERROR
        trust.trust(
            folder,
            config.project_digest,
            file=config.project_file,
            servers=[s.name for s in servers],
        )
        from sema_rpc.engine.session.project_trust import TrustAsk, describe

        text, _ = describe(TrustAsk(config.project_file, config.project_digest, servers))
        print(text)
        print(f"\ntrusted ({config.project_digest}); `sema-rpc trust revoke {folder}` undoes it")
        return 0
    if args.all:
        gone = trust.revoke(None)
    else:
        gone = trust.revoke(Path(args.dir or ".").resolve())
    for project in gone:
        print(f"revoked {project}")
    if not gone:
        print("nothing to revoke")
    return 0


USAGE_ERROR = 2


def _user_stdout() -> io.TextIOWrapper:
    """`run`'s output stream. fd 1 is kept for it alone; everything else that writes to
    stdout (a stray print() on the server's side, a child inheriting fd 1) goes to stderr."""
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    binary = _protect_stdout()
    return io.TextIOWrapper(binary, encoding=encoding, errors=errors, write_through=True)  # type: ignore[arg-type]


_ACCOUNT_COMMANDS = ("login", "logout", "status")


def _account_main(command: str, argv: list[str]) -> int:
    """`sema-rpc login` / `logout` / `status` (sema_rpc/login.py)."""
    from sema_rpc import login

    mains = {"login": login.login_main, "logout": login.logout_main, "status": login.status_main}
    return mains[command](argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _no_pydantic_plugins()
    if not argv or argv[0] not in ("replay", "view", "trust", "attach", *_ACCOUNT_COMMANDS):
        gc.disable()  # until start-up is done (startup_done)
    if argv and argv[0] == "run":
        code = run_main(argv[1:])
    elif argv and argv[0] == "replay":
        from sema_rpc.record.replay import replay_main

        code = replay_main(argv[1:])
    elif argv and argv[0] == "trust":
        code = trust_main(argv[1:])
    elif argv and argv[0] == "attach":
        from sema_rpc.attach.command import attach_main

        code = attach_main(argv[1:])
        _fast_exit(code)  # the thread reading the terminal may sit in a read: leave now
    elif argv and argv[0] == "serve":
        code = sockets_main(argv[1:])
    elif argv and argv[0] == "view":
        from sema_rpc.record.view import view_main

        code = view_main(argv[1:])
    elif argv and argv[0] in _ACCOUNT_COMMANDS:
        code = _account_main(argv[0], argv[1:])
    else:
        code = serve_main(argv)
    sys.exit(code)


if __name__ == "__main__":
    main()
