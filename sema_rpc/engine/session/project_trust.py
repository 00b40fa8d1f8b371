"""The gate before a project's own MCP servers start (core/trust.py says what is trusted).

At `session/create`, the servers `<project>/.sema/mcp.json` defines start only when the
user trusted that definition (stored "trust always", or `--trust-project` for this
process). Otherwise they are held (`session:ready.mcpServers` lists them `untrusted`, with
the command that trusts them) and, when the client answers consent requests, the user is
asked once, before the session's first turn runs: that is when an editor knows the
session and shows consent requests. One question lists every server of the file:

- `allow_once`: they start now, for this session;
- `allow_always`: stored in `$SEMA_ROOT/trust.json`, and they start;
- `reject`, an error or invalid answer, no answer within `SEMA_TRUST_TIMEOUT_S`: not
  started in this session (not asked again in it);
- the turn interrupted while asking: still held, asked again before the next turn.

Nothing of the project's definition runs before the answer: this module only reads.
"""

from __future__ import annotations

import logging
import os
import shlex
from typing import TYPE_CHECKING, Any

from sema_rpc.core import trust
from sema_rpc.core.scopes import move_on_after, run_sync_in_thread
from sema_rpc.engine.session.session import Session, TrustAsk
from sema_rpc.protocol import PermissionRequestParams, PermissionResult

if TYPE_CHECKING:
    from sema_rpc.engine.loop.control import TurnControl
    from sema_rpc.mcp import McpConfig

__all__ = ["TrustAsk", "describe", "gate", "held_reason", "settle"]

log = logging.getLogger(__name__)

DEFAULT_TRUST_TIMEOUT_S = 300.0


def trust_timeout() -> float:
    """Seconds the consent request waits for an answer (env SEMA_TRUST_TIMEOUT_S)."""
    try:
        return float(os.environ.get("SEMA_TRUST_TIMEOUT_S", DEFAULT_TRUST_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TRUST_TIMEOUT_S


def how_to_trust(session: Session) -> str:
    return (
        f"`{trust.TRUST_COMMAND} {shlex.quote(str(session.working_dir))}` trusts it for good; "
        "`--trust-project` (of `sema-rpc` or `sema-rpc run`) for one run"
    )


def gate(session: Session, config: McpConfig) -> TrustAsk | None:
    """Hold the project's servers unless trusted: removes them from `config.servers`
    and returns what to ask (None: nothing held). Blocking (reads the trust file)."""
    servers = config.project_servers()
    if not servers or config.project_file is None or config.project_digest is None:
        return None
    if trust.trusted_for_process() or trust.is_trusted(session.working_dir, config.project_digest):
        return None
    held = {id(s) for s in servers}
    config.servers = [s for s in config.servers if id(s) not in held]
    return TrustAsk(config.project_file, config.project_digest, servers)


def held_reason(session: Session, ask: TrustAsk, can_ask: bool) -> str:
    if can_ask:
        return (
            f"not started: {ask.file} is not trusted yet; the user is asked before the "
            f"first prompt runs ({how_to_trust(session)})"
        )
    return (
        f"not started: {ask.file} names programs and nobody could be asked to trust them; "
        + how_to_trust(session)
    )


def describe(ask: TrustAsk) -> tuple[str, list[dict[str, Any]]]:
    """What the consent request shows: text, and each server as data. Env and header
    values are never shown, only their names."""
    lines = [f"{ask.file} asks to start these programs:", ""]
    data: list[dict[str, Any]] = []
    for cfg in ask.servers:
        if cfg.transport == "stdio":
            lines.append(f"{cfg.name}: {shlex.join([cfg.command, *cfg.args])}")
            lines.append(f"  cwd: {cfg.cwd}")
            if cfg.env:
                lines.append(f"  env: {', '.join(sorted(cfg.env))}")
            data.append(
                {
                    "name": cfg.name,
                    "command": cfg.command,
                    "args": cfg.args,
                    "cwd": cfg.cwd,
                    "env": sorted(cfg.env),
                }
            )
        else:
            lines.append(f"{cfg.name}: {cfg.transport} {cfg.url}")
            if cfg.headers:
                lines.append(f"  headers: {', '.join(sorted(cfg.headers))}")
            data.append(
                {
                    "name": cfg.name,
                    "transport": cfg.transport,
                    "url": cfg.url,
                    "headers": sorted(cfg.headers),
                }
            )
    return "\n".join(lines), data


async def settle(session: Session, control: TurnControl, start_timeout_s: float) -> None:
    """Before a turn: ask about the held servers (once), start them when trusted."""
    ask = session.trust_pending
    manager = session.mcp
    if ask is None or manager is None:
        return
    names = [s.name for s in ask.servers]
    content, servers = describe(ask)
    request = PermissionRequestParams(
        tool_call_id="trust-" + ask.digest.removeprefix("sha256:")[:16],
        tool_name=trust.TRUST_TOOL,
        title=f"MCP servers of this project: {', '.join(names)}",
        input={"file": ask.file, "digest": ask.digest, "servers": servers},
        content=content,
        content_kind="text",
        options=["allow_once", "allow_always", "reject"],
        always_rule=f"{trust.TRUST_TOOL}({ask.file})",
    )
    answer: PermissionResult | None = None
    timed_out = False
    timeout = trust_timeout()
    with control.cancellable() as scope:
        with move_on_after(timeout) as deadline:
            answer = await session.bus.ask(request, PermissionResult)
        timed_out = deadline.cancelled_caught
    if answer is None and scope.cancel_called and not timed_out:
        return  # the turn was interrupted: asked again before the next one
    session.trust_pending = None
    if answer is None or answer.decision == "reject":
        if timed_out:
            why = f"no answer within {timeout:g}s"
        elif answer is None:
            why = "nobody could be asked"
        else:
            why = "refused for this session"
        manager.set_reason(names, f"not started: {ask.file}: {why}; {how_to_trust(session)}")
        session.mcp_status = manager.status()
        return
    if answer.decision == "allow_always":
        await run_sync_in_thread(
            lambda: trust.trust(session.working_dir, ask.digest, file=ask.file, servers=names)
        )
    if session.mcp is not manager or session.disposed:
        return  # the session ended while the user answered: nothing starts
    session.mcp_status = await manager.start(ask.servers, timeout_s=start_timeout_s)
    session.pipeline.mcp_tools = manager.tools()
