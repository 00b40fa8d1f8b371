"""One attached session at the terminal: its stream printed, its requests asked, typed
lines sent as prompts or steers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from sema_rpc.attach.answers import history_lines, permission_answer, plan_answer, question_answer
from sema_rpc.attach.discovery import AttachError, initialize, open_client

if TYPE_CHECKING:
    from sema_client import SemaClient


class Terminal:
    """The lines typed at the terminal, as an asyncio queue (None at end of input).

    A daemon thread reads stdin: it works for a terminal and a pipe alike, and leaves the
    terminal's blocking mode alone."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()

    def start(self, stream: Any = None) -> None:
        stream = stream if stream is not None else sys.stdin
        threading.Thread(
            target=self._read, args=(stream,), daemon=True, name="attach-stdin"
        ).start()

    def _read(self, stream: Any) -> None:
        while True:
            try:
                line = stream.readline()
            except (OSError, ValueError):
                line = ""
            with contextlib.suppress(RuntimeError):  # the loop is closed: we are leaving
                self._loop.call_soon_threadsafe(self.lines.put_nowait, line or None)
            if not line:
                return


class Attached:
    """One attached session: the stream printed, asks answered, typed lines sent."""

    def __init__(self, client: SemaClient, session_id: str, terminal: Terminal, out: Any):
        self.client = client
        self.session_id = session_id
        self.terminal = terminal
        self.out = out
        self.state = "idle"
        self.last_seq = 0
        self.asks: asyncio.Queue[tuple[str, dict[str, Any], asyncio.Future[Any]]] = asyncio.Queue()
        self.asking: asyncio.Future[Any] | None = None
        self.line_waiter: asyncio.Future[str | None] | None = None
        self.detached = asyncio.Event()
        self.tasks: set[asyncio.Task[Any]] = set()

    # ---- printing ---------------------------------------------------------------------
    def note(self, line: str) -> None:
        self.out.end_line()
        self.out.note(line)

    def on_message(self, message: dict[str, Any], raw: bytes) -> None:
        """Notifications the typed events do not cover (and the seq guard)."""
        method = message.get("method")
        params = message.get("params")
        if "id" in message or not isinstance(method, str) or not isinstance(params, dict):
            return
        if params.get("sessionId") not in (None, self.session_id):
            return
        if method == "request:resolved":
            who = params.get("answeredBy") or "another client"
            outcome = params.get("outcome")
            self.note(f"✓ answered by {who}" + (f": {outcome}" if isinstance(outcome, str) else ""))

    def on_event(self, event: Any) -> None:
        if event.session_id != self.session_id:
            return
        seq = getattr(event, "seq", 0) or 0
        if seq:
            if seq <= self.last_seq:
                return  # already shown (a replay overlapping the live stream)
            self.last_seq = seq
        name = event.event
        if name == "state:update":
            self.state = event.state
            if event.state == "idle":
                self.out.end_line()
        elif name == "mode:update":
            self.note(f"mode: {event.mode}")
        else:
            self.out.on_event(event)

    # ---- asks -------------------------------------------------------------------------
    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        """A server→client request, answered from the terminal (one at a time)."""
        if params.get("sessionId") not in (None, "", self.session_id):
            from sema_client import SemaRpcError

            from sema_rpc.protocol import ErrorCode

            raise SemaRpcError(ErrorCode.INVALID_REQUEST, "not the attached session")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.asks.put((method, params, future))
        try:
            return await future
        except asyncio.CancelledError:
            # The server withdrew it: another client answered, or the turn ended.
            if not future.done():
                future.cancel()
            raise

    async def run_asks(self) -> None:
        while True:
            method, params, future = await self.asks.get()
            if future.done():
                continue
            self.asking = future
            try:
                answer = await self._answer(method, params, future)
            except asyncio.CancelledError:
                if future.cancelled():
                    self.note("(withdrawn: answered elsewhere or the turn ended)")
                    continue
                raise
            finally:
                self.asking = None
            if not future.done():
                future.set_result(answer)

    async def _line(self, future: asyncio.Future[Any]) -> str | None:
        """The next typed line for an ask; cancelled when the ask is withdrawn."""
        self.line_waiter = asyncio.get_running_loop().create_future()
        waiter = self.line_waiter
        done, _ = await asyncio.wait({waiter, future}, return_when=asyncio.FIRST_COMPLETED)
        self.line_waiter = None
        if waiter in done:
            return waiter.result()
        waiter.cancel()
        raise asyncio.CancelledError

    async def _answer(
        self, method: str, params: dict[str, Any], future: asyncio.Future[Any]
    ) -> Any:
        if method == "tool:permission:request":
            options = list(params.get("options") or ["allow_once", "reject"])
            self.note(f"? {params.get('title') or params.get('toolName')}")
            content = str(params.get("content") or "").rstrip()
            if content:
                rows = content.splitlines()
                for row in rows[:20]:
                    self.out.note(f"  {row}")
                if len(rows) > 20:
                    self.out.note(f"  … ({len(rows) - 20} more lines)")
            always = " [a]lways" + (
                f" ({params['alwaysRule']})" if params.get("alwaysRule") else ""
            )
            hint = "allow? [y]es once" + (always if "allow_always" in options else "") + " [n]o"
            self.out.note(f"  {hint} (or type why not)")
            while True:
                line = await self._line(future)
                if line is None:
                    return {"decision": "reject"}
                answer = permission_answer(line, options)
                if answer is not None:
                    return answer
                self.out.note(f"  {hint}")
        if method == "ask:question:request":
            answers: dict[str, str] = {}
            for question in params.get("questions") or []:
                self.note(f"? {question.get('question')}")
                for i, option in enumerate(question.get("options") or [], 1):
                    desc = f" — {option.get('description')}" if option.get("description") else ""
                    self.out.note(f"  {i}. {option.get('label')}{desc}")
                several = " (several: 1,3)" if question.get("multiSelect") else ""
                self.out.note(f"  a number{several}, or your own answer")
                while True:
                    line = await self._line(future)
                    if line is None:
                        return {"answers": answers}
                    choice = question_answer(line, question)
                    if choice is not None:
                        answers[str(question.get("question"))] = choice
                        break
            return {"answers": answers}
        if method == "plan:exit:request":
            options = list(params.get("options") or ["startEditing", "keepPlanning"])
            self.note(f"? the plan ({params.get('planFilePath')}):")
            for row in str(params.get("planContent") or "").rstrip().splitlines()[:40]:
                self.out.note(f"  {row}")
            keys = {
                "startEditing": "[s]tart editing",
                "clearContextAndStart": "[c]lear the context and start",
                "keepPlanning": "[k]eep planning",
            }
            hint = " / ".join(keys[o] for o in options if o in keys) + " (or type what to change)"
            self.out.note(f"  {hint}")
            while True:
                line = await self._line(future)
                if line is None:
                    return {"decision": "keepPlanning"}
                answer = plan_answer(line, options)
                if answer is not None:
                    return answer
                self.out.note(f"  {hint}")
        raise ValueError(f"cannot answer {method} here")

    # ---- input --------------------------------------------------------------------------
    async def read_input(self) -> None:
        """Typed lines: to the open ask, else a prompt (idle) or a steer (working)."""
        while True:
            line = await self.terminal.lines.get()
            if self.line_waiter is not None and not self.line_waiter.done():
                self.line_waiter.set_result(line)
                continue
            if line is None:
                self.detached.set()
                return
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            delivery = "steer" if self.state == "processing" else "followUp"
            if delivery == "steer":
                self.note("↪ steering the running turn")
            self.state = "processing"
            self._spawn(self._prompt(text, delivery))

    async def _prompt(self, text: str, delivery: str) -> None:
        from sema_client import SemaClientError

        try:
            result = await self.client.request(
                "session/prompt",
                {"sessionId": self.session_id, "input": text, "delivery": delivery},
            )
        except SemaClientError as exc:
            self.note(f"error: {exc}")
            return
        stop = (result or {}).get("stopReason")
        if stop not in (None, "end_turn", "command", "interrupted"):  # interrupted: said already
            self.note(f"({stop})")

    def interrupt(self) -> None:
        """Ctrl-C: interrupt the running turn (nothing runs: say how to leave)."""
        if self.state != "processing":
            self.note("(nothing runs; Ctrl-D detaches)")
            return
        self.note("^C interrupting…")
        self._spawn(self._interrupt())

    async def _interrupt(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.request("session/interrupt", {"sessionId": self.session_id})

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def attach_session(
    endpoint: str,
    session_id: str,
    *,
    token_file: str | None,
    terminal: Terminal,
    out: Any,
) -> int:
    """Attach to `session_id` at `endpoint` and follow it until end of input or until
    the server goes away. Returns the exit code."""
    from sema_client import SemaClientError

    client, token = await open_client(endpoint, token_file=token_file)
    attached = Attached(client, session_id, terminal, out)
    for method in ("tool:permission:request", "ask:question:request", "plan:exit:request"):
        client.on_request(method, functools.partial(attached.ask, method))
    client.on_message(attached.on_message)
    client.on_notification(attached.on_event)
    try:
        await initialize(client, token=token, client_name="sema-rpc attach")
        try:
            earlier = await client.all_messages(session_id)
        except SemaClientError:
            earlier = []
        for row in history_lines([m.wire() for m in earlier]):
            out.note(row)
        try:
            result = await client.request("session/attach", {"sessionId": session_id})
        except SemaClientError as exc:
            raise AttachError(f"cannot attach to {session_id}: {exc}") from exc
        result = result or {}
        attached.state = result.get("state") or "idle"
        attached.last_seq = max(attached.last_seq, int(result.get("lastSeq") or 0))
        pending = len(result.get("pendingRequests") or [])
        queued = int(result.get("queuedPrompts") or 0)
        status = f"attached to {session_id} ({attached.state}"
        status += f", {queued} queued" if queued else ""
        status += f", {pending} waiting for an answer" if pending else ""
        out.note(status + "); type to prompt or steer, Ctrl-C interrupts, Ctrl-D detaches")
        remove = _on_sigint(attached.interrupt)
        asks = asyncio.ensure_future(attached.run_asks())
        reading = asyncio.ensure_future(attached.read_input())
        gone = asyncio.ensure_future(client.wait_closed())
        detached = asyncio.ensure_future(attached.detached.wait())
        try:
            await asyncio.wait({gone, detached}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            remove()
            for task in (asks, reading, gone, detached, *attached.tasks):
                task.cancel()
        if gone.done() and not attached.detached.is_set():
            out.note("the server went away")
            return 1
        with contextlib.suppress(SemaClientError, TimeoutError):
            await asyncio.wait_for(client.request("session/detach", {"sessionId": session_id}), 5)
        out.note(f"detached; {session_id} goes on (sema-rpc attach {session_id})")
        return 0
    finally:
        out.flush()
        await client.close()


def _on_sigint(callback: Any) -> Any:
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError, ValueError):
        return lambda: None
    return lambda: loop.remove_signal_handler(signal.SIGINT)
