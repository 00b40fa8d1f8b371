"""`sema-rpc run`: one prompt through a real server, driven by the Python client.

`run` hosts the server in its own process, on its own event loop, and talks to it with
`sema_client.SemaClient` over two OS pipes in JSONL framing: the framing, the dispatch and
the wire transcript are the ones an editor gets from a spawned server, without a second
interpreter's start-up. The high-rate deltas (text, thinking, tool output) go from that
pipe to the output as read, without the client's parse (`_DeltaShortcut`). `--spawn` (or `SEMA_RUN_SPAWN=1`) spawns `python -m sema_rpc
--jsonl` instead, for debugging the subprocess path; the output is the same either way.

Stdout carries only the output below: before anything else runs, fd 1 is kept for it and
everything else (a stray `print()` from a library, a child process inheriting fd 1, the
server's logging) goes to stderr. `--format jsonl` prints every notification as received on
the wire (one JSON object per line), then the prompt's response message
(`{"jsonrpc":"2.0","id":…,"result":{…}}`). `--format text` streams the answer text to
stdout and one line per tool call to stderr (`→ title` on start, `✗ title: error` on
error). The exit code follows the stop reason (EXIT_CODES); 2 for usage and
configuration errors (no model, a model whose API key is not set, an unknown provider or
model, a bad working directory, an unreadable models.json): one line on stderr naming
what to set.

Without `--cwd`, the session works in the current directory — except for a bundled
recording (`replay/demo`), which works in the workspace it was recorded in
(`sema_rpc/data/demo-workspace`), so its tools find the files its answers talk about.

Permissions: without `--yes` the client declares no `permissions` capability, so a call
that needs consent (a write, a non-read-only command, a path outside the workspace) is
refused and the model gets a tool error saying why. `--yes` sets the permission mode to
`bypass`; paths outside the workspace stay refused even then (bypass never extends past
the workspace, and nobody is there to ask).

The project's own MCP servers (`.sema/mcp.json`: programs the repository names) are not
started, `--yes` or not: `--trust-project` starts them for this run (`sema-rpc trust add
DIR` for good).

`--record DIR` records as the server's `--record DIR` does: `DIR/<run>/wire.jsonl` and the
session's cassette, replayable with `sema-rpc replay DIR/<run>`.

Ctrl-C sends `session/interrupt` and waits for the prompt's answer (exit 130); a second
Ctrl-C quits, as SIGTERM and SIGHUP do: the server's orderly end (the turn interrupted,
every command group killed), bounded so the process is gone within `STOP_DEADLINE_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sema_rpc.core.processes import STOP_DEADLINE_S, hard_stop, hard_stop_after, on_stop_signals
from sema_rpc.protocol import ErrorCode

if TYPE_CHECKING:
    from sema_client import SemaClient

USAGE_ERROR = 2
EXIT_CODES = {"end_turn": 0, "command": 0, "error": 1, "max_turns": 3, "interrupted": 130}
"""The exit code of each stop reason."""

# JSON-RPC errors from session/create or session/prompt that mean "fix your invocation or
# configuration" rather than "the turn failed".
_CONFIG_ERROR_CODES = {
    ErrorCode.INVALID_PARAMS,
    ErrorCode.NO_MODEL_CONFIGURED,
    ErrorCode.CONFIG_ERROR,
}


def _no_model() -> str:
    """The server's NO_MODEL_CONFIGURED text speaks of session/create; here the user typed a command."""
    from sema_rpc.core.config import models_path

    return (
        "no model configured: pass --model (e.g. --model anthropic/claude-sonnet-4-5, or "
        f"--model replay/demo to try it offline), set ANTHROPIC_API_KEY or OPENAI_API_KEY, "
        f"or add a profile to {models_path()}"
    )


class _Output:
    """Writes the event stream in the chosen format.

    What a message adds is written at the end of the loop iteration that read it, all
    of it in one `write(2)`: a 20,000-delta answer arrives in a few hundred pipe reads,
    each carrying many lines, and costs as many writes, not one per delta. Nothing
    waits longer than the loop iteration in which it was read; a line on stderr (a tool
    call, an error) first flushes what precedes it on stdout."""

    def __init__(self, output_format: str, stdout: Any = None):
        self.format = output_format
        self.stdout = stdout if stdout is not None else sys.stdout
        self.at_line_start = True
        self.broken = False
        self._pending: list[bytes] = []
        self._scheduled = False

    def _queue(self, data: bytes) -> None:
        self._pending.append(data)
        if not self._scheduled:
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:  # no loop (not from run_once): at once
                self.flush()
                return
            self._scheduled = True

    def flush(self) -> None:
        """Write what is pending, now."""
        self._scheduled = False
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        if self.broken:
            return
        try:
            out = self.stdout.buffer
            out.write(data)
            out.flush()
        except BrokenPipeError:
            self._stdout_gone()

    # ---- jsonl ------------------------------------------------------------------------
    def raw_line(self, raw: bytes) -> None:
        if not self.broken:
            self._queue(raw.rstrip(b"\r\n") + b"\n")

    def on_message(self, message: dict[str, Any], raw: bytes) -> None:
        method = message.get("method")
        if isinstance(method, str) and "id" not in message and not method.startswith("$/"):
            self.raw_line(raw)

    def delta_line(self, raw: bytes) -> None:
        """A delta notification's line (`_DeltaShortcut`), as the client would have handed
        it on: jsonl prints it; text prints a text chunk's delta (the other deltas are
        not printed in text)."""
        if self.format == "jsonl":
            self.raw_line(raw)
        elif raw.startswith(_DELTA_PREFIXES[0]) and not self.broken:
            delta = json.loads(raw)["params"].get("delta")
            if isinstance(delta, str):
                self.text(delta)

    def delta_lines(self, lines: list[bytes]) -> None:
        """`delta_line` for a run of delta lines (without their b"\n"), as read: in jsonl,
        one join for the run instead of a call per line."""
        if self.format != "jsonl":
            for line in lines:
                self.delta_line(line)
        elif not self.broken:
            self._queue(b"\n".join([line.rstrip(b"\r") for line in lines]) + b"\n")

    # ---- text -------------------------------------------------------------------------
    def text(self, delta: str) -> None:
        if self.broken or not delta:
            return
        self._queue(delta.encode(self.stdout.encoding or "utf-8", self.stdout.errors or "strict"))
        self.at_line_start = delta.endswith("\n")

    def end_line(self) -> None:
        if not self.at_line_start:
            self.text("\n")

    def note(self, line: str) -> None:
        self.flush()
        print(line, file=sys.stderr, flush=True)

    def on_event(self, event: Any) -> None:
        name = event.event
        if name == "message:text:chunk":
            self.text(event.delta)
        elif name == "message:complete":
            self.end_line()
        elif name == "tool:execution:start":
            self.end_line()
            self.note(f"→ {event.title}")
        elif name == "tool:execution:error":
            self.end_line()
            first = (event.content.strip().splitlines() or [""])[0]
            self.note(f"✗ {event.title}: {first[:300]}")
        elif name == "session:error":
            self.end_line()
            self.note(f"error: {event.error.message}")
        elif name == "session:interrupted":
            self.end_line()
            self.note("interrupted")
        # config:no_models is not echoed: the prompt's -32012 answer says the same.

    def _stdout_gone(self) -> None:
        # The reader went away (`| head`): stop printing, let the turn finish quietly.
        self.broken = True
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stdout.fileno())


def _forward_stderr(chunk: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.buffer.write(chunk)
        sys.stderr.flush()


async def run_once(
    prompt: str,
    *,
    model: str | None,
    working_dir: str,
    output_format: str,
    permission_mode: str,
    yes: bool = False,
    sandbox: str | None = None,
    log_level: str | None = None,
    record_dir: str | None = None,
    spawn: bool = False,
    trust_project: bool = False,
    listen: str | None = None,
    stdout: Any = None,
    after_first_answer: Callable[[], None] | None = None,
) -> int:
    """Run one prompt through a server in this process (a spawned one with `spawn`);
    returns the process exit code.

    `record_dir`: the wire transcript + cassette go there (the server's `--record`).
    `stdout`: the text stream the output goes to (default `sys.stdout`).
    `after_first_answer`: called once the prompt's answer is out (cli: start-up ends).
    `listen`: other clients may attach to the session there (the server's `--listen`)."""
    from sema_client import SemaClient, SemaConnectionError, SemaRpcError

    out = _Output(output_format, stdout)
    argv = [sys.executable, "-m", "sema_rpc", "--jsonl"]
    if log_level:
        argv += ["--log-level", log_level]
    if record_dir:
        argv += ["--record", record_dir]
    if trust_project:
        argv += ["--trust-project"]
    if listen:
        argv += ["--listen", listen]
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    client: SemaClient | None = None
    session_id: str | None = None
    interrupts = 0
    background: set[asyncio.Task[None]] = set()

    def on_signal(signum: int) -> None:
        # First Ctrl-C during a turn: interrupt it and wait for the answer. Before the
        # turn, a second time, SIGTERM or SIGHUP: quit — the server's orderly end, which
        # kills every command group, bounded by a hard stop within STOP_DEADLINE_S.
        nonlocal interrupts
        interrupts += 1
        if signum != signal.SIGINT or client is None or session_id is None or interrupts > 1:
            if interrupts > 2 or (signum != signal.SIGINT and interrupts > 1):
                hard_stop(128 + signum)
            hard_stop_after(STOP_DEADLINE_S - 0.3, 128 + signum)
            if main is not None:
                main.cancel()
            return
        out.end_line()
        out.note("^C interrupting… (Ctrl-C again to quit)")
        task = loop.create_task(_interrupt(client, session_id))
        background.add(task)
        task.add_done_callback(background.discard)

    remove_handlers = on_stop_signals(on_signal)

    responses: dict[Any, bytes] = {}

    def tap(message: dict[str, Any], raw: bytes) -> None:
        if "method" not in message and "id" in message:
            responses[message["id"]] = raw
        elif output_format == "jsonl":
            out.on_message(message, raw)

    code = 1
    server_task: asyncio.Task[int] | None = None
    try:
        if spawn:
            client = await SemaClient.spawn(argv, jsonl=True, stderr_callback=_forward_stderr)
        else:
            started = await _in_process_server(record_dir, listen, out)
            if started is None:
                return USAGE_ERROR
            client, server_task = started
        client.on_message(tap)
        if output_format != "jsonl":
            client.on_notification(out.on_event)
        await client.initialize(client_info="sema-rpc run")
        extra = {"sandbox": sandbox} if sandbox else {}
        ready = await client.create_session(
            working_dir, model=model, permission_mode="bypass" if yes else permission_mode, **extra
        )
        session_id = ready.session_id
        if listen:
            out.note(f"sema-rpc: session {session_id} (sema-rpc attach {session_id})")
        prompt_id = client.new_id()
        try:
            result = await client.prompt(ready.session_id, prompt, msg_id=prompt_id)
        finally:
            if output_format == "jsonl" and prompt_id in responses:
                out.raw_line(responses[prompt_id])
        out.end_line()
        code = EXIT_CODES.get(result.stop_reason, 1)
        if after_first_answer is not None:
            after_first_answer()
    except SemaRpcError as exc:
        out.note(
            f"sema-rpc: {_no_model() if exc.code == ErrorCode.NO_MODEL_CONFIGURED else exc.message}"
        )
        code = USAGE_ERROR if exc.code in _CONFIG_ERROR_CODES else 1
    except SemaConnectionError as exc:
        out.note(f"sema-rpc: {exc}")
        code = 1
    except OSError as exc:
        out.note(f"sema-rpc: could not start the server: {exc}")
        code = 1
    except asyncio.CancelledError:
        code = 130
        if main is not None:
            main.uncancel()
    finally:
        out.flush()
        remove_handlers()
        if client is not None:
            await client.close()
        if server_task is not None:
            # Closing the client closed the server's input: it interrupts what still runs,
            # answers, flushes and returns. A second Ctrl-C that cancelled us does not
            # cancel this wait: the history and the recording are written either way.
            with contextlib.suppress(Exception):
                await asyncio.shield(asyncio.wait_for(server_task, 15))
            if not server_task.done():
                server_task.cancel()
    return code


async def _in_process_server(
    record_dir: str | None, listen: str | None, out: _Output
) -> tuple[SemaClient, asyncio.Task[int]] | None:
    """A server task on this loop, connected to a client by two OS pipes (JSONL); with
    `listen`, its listener open too (None when it cannot listen: the reason is on stderr).
    The deltas the server writes go to `out` directly (`_DeltaShortcut`)."""
    from sema_client import SemaClient
    from sema_client.framing import STREAM_LIMIT

    from sema_rpc.rpc.server import serve

    host = None
    if listen:
        from sema_rpc.rpc.listen import ListenError
        from sema_rpc.rpc.shared import SharedHost

        host = SharedHost(one_shot=True)
        try:
            listener = await host.listen(listen)
        except (ListenError, OSError) as exc:
            print(f"sema-rpc: cannot listen: {exc}", file=sys.stderr, flush=True)
            return None
        print(f"sema-rpc: listening on {listener.endpoint}", file=sys.stderr, flush=True)

    loop = asyncio.get_running_loop()
    c2s_r, c2s_w = os.pipe()
    s2c_r, s2c_w = os.pipe()
    server_in = os.fdopen(c2s_r, "rb", buffering=0)
    server_out = os.fdopen(s2c_w, "wb", buffering=0)

    async def run_server() -> int:
        try:
            return await serve(
                server_in,
                server_out,
                jsonl=True,
                record_dir=record_dir,
                one_shot=True,
                host=host,
            )
        finally:
            server_out.close()  # the client sees the end of the stream
            server_in.close()

    server_task = loop.create_task(run_server(), name="sema-rpc-server")
    reader = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(s2c_r, "rb", 0)
    )
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop),
        os.fdopen(c2s_w, "wb", 0),
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    client = SemaClient(_DeltaShortcut(reader, out), writer, jsonl=True)  # type: ignore[arg-type]
    client.start()
    return client, server_task


_DELTA_PREFIXES = tuple(
    b'{"jsonrpc":"2.0","method":"%s",' % m.encode()
    for m in ("message:text:chunk", "message:thinking:chunk", "tool:execution:update")
)
"""How the server's high-rate delta notifications begin (its compact JSON: `jsonrpc`,
then `method`, then `params`)."""


class _DeltaShortcut:
    """The server's output as the client reads it (`read`), minus the high-rate delta
    notifications, which go straight to the output (`_Output.delta_line`).

    In `run`, this process reads its own server, and the client (the only one on this
    pipe) has nothing to do with a delta but hand it to the output: its line would be
    parsed, dispatched and (text) validated into a typed event, 20,000 times for a long
    answer. Here the pipe is read in large chunks, a delta line goes to the output as it
    comes, and every other line reaches the client in the order written — so the output
    is the same, message for message and in the same order, as with every line through
    the client."""

    CHUNK = 1 << 16

    def __init__(self, stream: asyncio.StreamReader, out: _Output):
        self._stream = stream
        self._out = out
        self._lines: list[bytes] = []
        self._next = 0
        self._partial: list[bytes] = []
        self._partial_len = 0

    async def read(self, n: int = -1) -> bytes:
        """StreamReader.read for the client: the next run of lines that are not deltas,
        each with its b"\n" (the deltas before them already handed to the output); b""
        at the end of the stream. It returns at the first delta after such a run, so the
        client handles those lines before the output gets the deltas that follow them."""
        from sema_client.framing import STREAM_LIMIT

        while True:
            lines = self._lines
            count = len(lines)
            i = self._next
            while i < count:
                line = lines[i]
                if line.startswith(_DELTA_PREFIXES):
                    start = i
                    i += 1
                    while i < count and lines[i].startswith(_DELTA_PREFIXES):
                        i += 1
                    self._out.delta_lines(lines[start:i])
                elif not line:
                    i += 1
                else:
                    start = i
                    while i < count and not lines[i].startswith(_DELTA_PREFIXES):
                        i += 1
                    self._next = i
                    return b"\n".join(lines[start:i]) + b"\n"
            chunk = await self._stream.read(self.CHUNK)
            if not chunk:
                rest = b"".join(self._partial)
                self._partial.clear()
                self._lines, self._next = [], 0
                return rest  # an unterminated last line as it is (b"": the end)
            end = chunk.rfind(b"\n")
            if end < 0:
                self._partial.append(chunk)
                self._partial_len += len(chunk)
                if self._partial_len > STREAM_LIMIT:
                    raise ValueError("Separator is not found, and chunk exceed the limit")
                self._lines, self._next = [], 0
                continue
            head = chunk[:end]
            if self._partial:
                self._partial.append(head)
                head = b"".join(self._partial)
                self._partial.clear()
            self._partial_len = len(chunk) - end - 1
            if self._partial_len:
                self._partial.append(chunk[end + 1 :])
            self._lines, self._next = head.split(b"\n"), 0


async def _interrupt(client: SemaClient, session_id: str) -> None:
    with contextlib.suppress(Exception):
        await client.interrupt(session_id)
