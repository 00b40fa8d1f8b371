"""Bash through the editor's terminal (`terminal/*`) when the client offers it, so the
editor shows a live terminal embedded in the tool call.

Only where the command runs changes: Bash's checks (network programs, `cd` outside the
workspace), its consent and its timeout stay the engine's, and the command is run as
Bash runs it (`/bin/bash -c`, in the session's directory, pagers off, git's safety
settings). A command run by the editor is not a child of this server: it is outside
any confinement this server applies to the processes it starts (`routes_bash_to_terminal`
is the one place that decides, protocol/acp.md says why).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from sema_rpc.protocol import RpcError
from sema_rpc.tools.base import ToolContext, ToolOutput

if TYPE_CHECKING:
    from sema_rpc.acp.state import AcpPeer
    from sema_rpc.engine.session.session import Session

log = logging.getLogger(__name__)

OUTPUT_BYTE_LIMIT = 100_000
"""`outputByteLimit` asked of the editor: what the model gets at most (Bash's own cap)."""


def routes_bash_to_terminal(server: AcpPeer, session: Session) -> bool:
    """Whether this session's Bash runs in the editor's terminal: when the client
    advertises `terminal`. The process is then the editor's: the OS sandbox still holds
    (the command is wrapped in it, see `BashTool.call`), consent and path checks are the
    same, but the server's process supervisor does not hold it: the editor's terminal
    ends it (`terminal/kill`, `terminal/release`, and the editor's own exit)."""
    return server.capabilities.terminal


class AcpTerminalRunner:
    """`CommandRunner` (tools/base.py) over the client's `terminal/*` methods."""

    def __init__(self, server: AcpPeer, session_id: str):
        self.server = server
        self.session_id = session_id

    async def run(
        self, argv: list[str], env: dict[str, str], timeout_ms: int, ctx: ToolContext
    ) -> ToolOutput:
        server, sid = self.server, self.session_id
        try:
            created = await server.request(
                "terminal/create",
                {
                    "sessionId": sid,
                    "command": argv[0],
                    "args": argv[1:],
                    "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                    "cwd": str(ctx.working_dir),
                    "outputByteLimit": OUTPUT_BYTE_LIMIT,
                },
            )
            terminal_id = str(created["terminalId"])
        except (RpcError, KeyError, TypeError) as exc:
            message = exc.message if isinstance(exc, RpcError) else "no terminalId"
            return ToolOutput(
                content=f"The editor could not start the command: {message}",
                summary="Could not start",
                is_error=True,
            )
        server.terminal_started(sid, ctx.tool_call_id, terminal_id)
        ref = {"sessionId": sid, "terminalId": terminal_id}
        timed_out = False
        try:
            try:
                exit_status = await asyncio.wait_for(
                    server.request("terminal/wait_for_exit", ref), timeout_ms / 1000
                )
            except TimeoutError:
                timed_out = True
                await _quietly(server.request("terminal/kill", ref))
                exit_status = None
            output = await server.request("terminal/output", ref)
        except asyncio.CancelledError:  # interrupted: the command stops with the turn
            await asyncio.shield(_stop(server, ref))
            raise
        except RpcError as exc:
            await asyncio.shield(_stop(server, ref))
            return ToolOutput(
                content=f"The editor's terminal failed: {exc.message}",
                summary="Failed",
                is_error=True,
            )
        await _quietly(server.request("terminal/release", ref))
        return _output(output, exit_status, timed_out, timeout_ms)


async def _stop(server: AcpPeer, ref: dict[str, Any]) -> None:
    await _quietly(server.request("terminal/kill", ref))
    await _quietly(server.request("terminal/release", ref))


async def _quietly(request: Any) -> None:
    try:
        await asyncio.wait_for(request, 10)
    except (RpcError, TimeoutError) as exc:
        log.warning("terminal request failed: %s", exc)


def _output(output: Any, exit_status: Any, timed_out: bool, timeout_ms: int) -> ToolOutput:
    """The command's result as Bash words it (the model reads the same either way)."""
    output = output if isinstance(output, dict) else {}
    text = str(output.get("output", "")).rstrip("\n")
    if output.get("truncated"):
        text = "[… earlier output cut]\n" + text
    if timed_out:
        content = f"Command timed out after {timeout_ms / 1000:g} s and was killed."
        if text:
            content += f" Output so far:\n{text}"
        return ToolOutput(content=content, summary="Timed out", is_error=True)
    status = exit_status if isinstance(exit_status, dict) else output.get("exitStatus") or {}
    code, signal = status.get("exitCode"), status.get("signal")
    parts = [text] if text else []
    if signal:
        parts.append(f"Exit code: {code if code is not None else 1} (killed by {signal})")
    elif isinstance(code, int) and code != 0:
        parts.append(f"Exit code: {code}")
    content = "\n\n".join(parts) if parts else "(no output)"
    ok = not signal and code in (0, None)
    return ToolOutput(content=content, summary="Done" if ok else f"Exit code {code}")


def install_terminal(server: AcpPeer, session: Session) -> None:
    """Lend the session's Bash the editor's terminal, when `routes_bash_to_terminal`."""
    if routes_bash_to_terminal(server, session):
        session.services.command_runner = AcpTerminalRunner(server, session.id)
    else:
        session.services.command_runner = None
