"""An ACP editor for tests: the official ACP Python SDK's client side (`connect_to_agent`)
driving `sema-rpc --acp` over real pipes (a server from `tests/support/server_forks.py`),
with every message in both directions validated against the ACP v1 JSON Schema
(schema/acp/schema.v1.json).

    async with AcpEditor.start(env) as editor:
        await editor.conn.initialize(protocol_version=1, client_capabilities=...)
        ...
        editor.updates(session_id)            # raw `update` objects, in order
        editor.permission_answers.append("allow_once")
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from acp import connect_to_agent
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    DeniedOutcome,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.transports import default_environment

from tests.support.server_forks import spawn_server

REPO = Path(__file__).resolve().parents[2]
ACP_STREAM_LIMIT = 64 * 1024
"""The SDK's `spawn_agent_process` reads the agent's stdout with asyncio's default limit."""
SCHEMA_PATH = REPO / "schema" / "acp" / "schema.v1.json"

_REQUESTS = {
    # client → agent
    "initialize": ("InitializeRequest", "InitializeResponse"),
    "authenticate": ("AuthenticateRequest", "AuthenticateResponse"),
    "session/new": ("NewSessionRequest", "NewSessionResponse"),
    "session/load": ("LoadSessionRequest", "LoadSessionResponse"),
    "session/list": ("ListSessionsRequest", "ListSessionsResponse"),
    "session/resume": ("ResumeSessionRequest", "ResumeSessionResponse"),
    "session/close": ("CloseSessionRequest", "CloseSessionResponse"),
    "session/delete": ("DeleteSessionRequest", "DeleteSessionResponse"),
    "session/prompt": ("PromptRequest", "PromptResponse"),
    "session/set_mode": ("SetSessionModeRequest", "SetSessionModeResponse"),
    "session/set_config_option": (
        "SetSessionConfigOptionRequest",
        "SetSessionConfigOptionResponse",
    ),
    # agent → client
    "session/request_permission": ("RequestPermissionRequest", "RequestPermissionResponse"),
    "fs/read_text_file": ("ReadTextFileRequest", "ReadTextFileResponse"),
    "fs/write_text_file": ("WriteTextFileRequest", "WriteTextFileResponse"),
    "elicitation/create": ("CreateElicitationRequest", "CreateElicitationResponse"),
    "terminal/create": ("CreateTerminalRequest", "CreateTerminalResponse"),
    "terminal/output": ("TerminalOutputRequest", "TerminalOutputResponse"),
    "terminal/wait_for_exit": ("WaitForTerminalExitRequest", "WaitForTerminalExitResponse"),
    "terminal/kill": ("KillTerminalRequest", "KillTerminalResponse"),
    "terminal/release": ("ReleaseTerminalRequest", "ReleaseTerminalResponse"),
}
_UNSTABLE = {
    # methods the v1 schema does not have yet: checked with the SDK's models
    "session/fork": ("ForkSessionRequest", "ForkSessionResponse"),
}
_NOTIFICATIONS = {
    "session/update": "SessionNotification",
    "session/cancel": "CancelNotification",
    "$/cancel_request": "CancelRequestNotification",
}


_WHOLE = ""
_VALIDATORS: dict[str, jsonschema.Draft202012Validator] = {}
_SHAPES_CHECKED: set[tuple[Any, ...]] = set()


class SchemaCheck:
    """Validates each message against the ACP schema: the envelope against the whole
    protocol, params and results against the definition of their method."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, Any], str] = {}
        """(direction of the request, id) → method, to validate the answer."""
        self.errors: list[str] = []
        self.checked = 0

    @staticmethod
    def _validator(name: str) -> jsonschema.Draft202012Validator:
        """The validator for one definition (`_WHOLE`: the whole protocol), built once per
        process: a validator keeps the `$ref`s it resolved, so reusing it skips most of
        the work of validating the next message."""
        found = _VALIDATORS.get(name)
        if found is None:
            if name == _WHOLE:
                found = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
            else:
                defs = SchemaCheck._validator(_WHOLE).schema["$defs"]
                found = jsonschema.Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{name}"})
            _VALIDATORS[name] = found
        return found

    def _check(self, name: str, value: Any, where: str) -> None:
        for error in self._validator(name).iter_errors(value):
            self.errors.append(f"{where}: {name}: {error.message} at {list(error.path)}")

    def _sdk_check(self, name: str, value: Any, where: str) -> None:
        import acp.schema

        try:
            getattr(acp.schema, name).model_validate(value)
        except Exception as exc:
            self.errors.append(f"{where}: {name}: {exc}")

    def _check_envelope(self, direction: str, message: dict[str, Any], where: str) -> None:
        """The message against the whole protocol (a union of every request, answer and
        notification of either side), once per shape: which side sent it, its members,
        its `jsonrpc`, the type of its id, its method (for an answer, its request's), its
        update's kind. What varies between messages of one shape is their params or result, and the
        exact definition's check below sees those in every message."""
        other = "in" if direction == "out" else "out"
        params = message.get("params")
        update = params.get("update") if isinstance(params, dict) else None
        shape = (
            direction,
            message.get("jsonrpc"),
            tuple(sorted(message)),
            type(message.get("id")).__name__,
            message.get("method") or self._pending.get((other, message.get("id"))),
            update.get("sessionUpdate") if isinstance(update, dict) else None,
        )
        if shape in _SHAPES_CHECKED:
            return
        errors = [error.message for error in self._validator(_WHOLE).iter_errors(message)]
        self.errors.extend(f"{where}: envelope: {error}" for error in errors)
        if not errors:
            _SHAPES_CHECKED.add(shape)

    def message(self, direction: str, message: dict[str, Any]) -> None:
        self.checked += 1
        where = f"{direction} {json.dumps(message)[:300]}"
        self._check_envelope(direction, message, where)
        method = message.get("method")
        if method is not None:
            if method in _UNSTABLE and "id" in message:
                self._sdk_check(_UNSTABLE[method][0], message.get("params"), where)
                self._pending[(direction, message["id"])] = method
                return
            if method.startswith("_"):  # an extension: no schema (protocol/acp.md has its shape)
                if "id" in message:
                    self._pending[(direction, message["id"])] = method
                return
            if "id" in message:
                names = _REQUESTS.get(method)
                if names is None:
                    self.errors.append(f"{where}: unknown request method {method}")
                    return
                self._check(names[0], message.get("params"), where)
                self._pending[(direction, message["id"])] = method
            else:
                name = _NOTIFICATIONS.get(method)
                if name is None:
                    self.errors.append(f"{where}: unknown notification {method}")
                    return
                self._check(name, message.get("params"), where)
            return
        other = "in" if direction == "out" else "out"
        method = self._pending.pop((other, message.get("id")), None)
        if "error" in message:
            self._check("Error", message["error"], where)
            return
        if method is None:
            self.errors.append(f"{where}: an answer to no request")
            return
        if method.startswith("_"):
            return
        if method in _UNSTABLE:
            self._sdk_check(_UNSTABLE[method][1], message.get("result"), where)
            return
        if message.get("result") is None:
            self.errors.append(f"{where}: a null result (must be an object)")
            return
        self._check(_REQUESTS[method][1], message["result"], where)
        if method == "session/prompt" and "usage" in message["result"]:  # unstable: the SDK's
            self._sdk_check("PromptResponse", message["result"], where)


@dataclass
class Editor:
    """The client's side: answers permission requests from a queue, serves files from
    `buffers` (path → text) when asked, records what it was asked."""

    permission_answers: list[str | None] = field(default_factory=list)
    """Option ids to select, in order; None answers `cancelled`. Empty: reject_once."""
    permission_gate: asyncio.Event | None = None
    """When set: a permission request waits for it before answering."""
    buffers: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    permission_asked: asyncio.Event = field(default_factory=asyncio.Event)
    cancel_pending: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by a test after `session/cancel`: a waiting permission answers `cancelled`."""
    form_answers: dict[str, Any] | None = None
    """`elicitation/create` (form): accepted with this content; None declines."""
    forms: list[dict[str, Any]] = field(default_factory=list)
    terminals: dict[str, Any] = field(default_factory=dict)
    """terminal id → (process, output so far, the task reading it)."""
    terminal_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.forms.append(
            {"message": message, "mode": mode.model_dump(by_alias=True, exclude_none=True)}
        )
        if self.form_answers is None:
            return DeclineElicitationResponse(action="decline")
        return AcceptElicitationResponse(action="accept", content=self.form_answers)

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append(
            {
                "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options],
                "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
            }
        )
        self.permission_asked.set()
        if self.permission_gate is not None:
            gate = asyncio.ensure_future(self.permission_gate.wait())
            cancelled = asyncio.ensure_future(self.cancel_pending.wait())
            await asyncio.wait({gate, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            gate.cancel()
            cancelled.cancel()
            if self.cancel_pending.is_set():
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        choice = self.permission_answers.pop(0) if self.permission_answers else "reject_once"
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    # ---- terminal/*: real processes, as an editor's terminal runs them

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self.terminal_calls.append(("create", {"command": command, "args": args, "cwd": cwd}))
        added = {e.name: e.value for e in env or []}
        proc = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env={**os.environ, **added},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        output = bytearray()

        async def pump() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(4096):
                output.extend(chunk)

        self.terminals[terminal_id] = (proc, output, asyncio.ensure_future(pump()))
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _exit_status(self, proc: Any) -> TerminalExitStatus | None:
        rc = proc.returncode
        if rc is None:
            return None
        if rc < 0:
            return TerminalExitStatus(exit_code=None, signal=signal.Signals(-rc).name)
        return TerminalExitStatus(exit_code=rc, signal=None)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        self.terminal_calls.append(("wait_for_exit", {"terminalId": terminal_id}))
        proc, _output, pumping = self.terminals[terminal_id]
        await proc.wait()
        await pumping
        status = self._exit_status(proc)
        assert status is not None
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        self.terminal_calls.append(("output", {"terminalId": terminal_id}))
        proc, output, _pumping = self.terminals[terminal_id]
        return TerminalOutputResponse(
            output=output.decode(errors="replace"),
            truncated=False,
            exit_status=self._exit_status(proc),
        )

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        self.terminal_calls.append(("kill", {"terminalId": terminal_id}))
        proc = self.terminals[terminal_id][0]
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        self.terminal_calls.append(("release", {"terminalId": terminal_id}))
        proc = self.terminals[terminal_id][0]
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        return ReleaseTerminalResponse()

    async def read_text_file(
        self,
        path: str,
        session_id: str,
        limit: int | None = None,
        line: int | None = None,
        **kw: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            text = self.buffers[path]
        else:
            text = Path(path).read_text()
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = (line or 1) - 1
            text = "".join(lines[start : start + limit if limit else None])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(content)  # the editor saves the buffer
        return WriteTextFileResponse()


class AcpSession:
    """A running `sema-rpc --acp` with an SDK connection and a record of the wire."""

    def __init__(self, conn: Any, process: Any, editor: Editor, check: SchemaCheck):
        self.conn = conn
        self.process = process
        self.editor = editor
        self.check = check
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Event()

    def observe(self, event: StreamEvent) -> None:
        direction = "out" if event.direction == StreamDirection.OUTGOING else "in"
        message = json.loads(json.dumps(event.message))
        self.messages.append((direction, message))
        self.check.message(direction, message)
        self.changed.set()

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Every `session/update` the agent sent (of one session), in order."""
        return [
            m["params"]["update"]
            for d, m in self.messages
            if d == "in"
            and m.get("method") == "session/update"
            and (session_id is None or m["params"]["sessionId"] == session_id)
        ]

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates(session_id)]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 15) -> None:
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), timeout)

    async def raw_request(self, method: str, params: dict[str, Any]) -> Any:
        """A request the SDK has no helper for (e.g. `session/delete`)."""
        return await self.conn._conn.send_request(method, params)

    def assert_schema_clean(self) -> None:
        assert self.check.checked > 0
        assert not self.check.errors, "\n".join(self.check.errors[:20])


@asynccontextmanager
async def acp_agent(
    env: dict[str, str],
    editor: Editor | None = None,
    cwd: Path | None = None,
    *,
    unstable: bool = False,
) -> AsyncIterator[AcpSession]:
    """`unstable`: the SDK handles methods it calls unstable (`elicitation/create`)."""
    editor = editor or Editor()
    check = SchemaCheck()
    holder: list[AcpSession] = []

    def observer(event: StreamEvent) -> None:
        holder[0].observe(event)

    process = await spawn_server(
        ["--acp"],
        env={**default_environment(), **env, "PYTHONUNBUFFERED": "1"},
        cwd=cwd or REPO,
        limit=ACP_STREAM_LIMIT,
        pipe_stderr=False,
    )
    assert process.stdin is not None and process.stdout is not None
    conn = connect_to_agent(
        editor,
        process.stdin,
        process.stdout,
        observers=[observer],
        use_unstable_protocol=unstable,
    )
    try:
        holder.append(AcpSession(conn, process, editor, check))
        try:
            yield holder[0]
        finally:
            holder[0].assert_schema_clean()
    finally:
        await conn.close()
        await _end(process)


async def _end(process: Any) -> None:
    """How the SDK's `spawn_agent_process` ends its agent: stdin closed, then 2 s to leave,
    then SIGTERM, then SIGKILL."""
    with contextlib.suppress(Exception):
        process.stdin.close()
        await process.stdin.wait_closed()
    for escalate in (process.terminate, process.kill):
        try:
            await asyncio.wait_for(process.wait(), 2)
            return
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                escalate()
    await process.wait()
