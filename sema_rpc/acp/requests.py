"""ACP requests in the engine's terms, and the engine's answers in ACP's: a prompt's
blocks as `session/prompt` params, `_meta.systemPrompt`, a prompt's result, MCP servers."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from sema_rpc.acp import translate
from sema_rpc.acp.wire import McpServer
from sema_rpc.core.errors import is_validation_error
from sema_rpc.protocol import RpcError
from sema_rpc.rpc.errors import INVALID_PARAMS, invalid_params

if TYPE_CHECKING:
    from sema_rpc.acp.state import AcpSession
    from sema_rpc.engine.session.session import Session

log = logging.getLogger("sema_rpc.acp.server")


def prompt_request(
    session: Session, state: AcpSession, blocks: list[dict[str, Any]]
) -> tuple[Any, str | list[dict[str, Any]]]:
    """An ACP prompt as the engine's `session/prompt` params (-32602 when unusable)."""
    from sema_rpc.acp.options import skill_prompt
    from sema_rpc.protocol import SessionPromptParams

    prompt = translate.prompt_input(blocks, state.cwd)
    if isinstance(prompt, str):
        prompt = skill_prompt(prompt, session)
    try:
        request = SessionPromptParams.model_validate({"sessionId": session.id, "input": prompt})
    except ValueError as exc:
        if not is_validation_error(exc):
            raise
        raise invalid_params(exc, "invalid prompt") from exc
    return request, prompt


def client_system_prompt(meta: dict[str, Any] | None) -> tuple[str, str] | None:
    """`_meta.systemPrompt` as claude-agent-acp reads it (and acpx sends it): a string
    replaces our system prompt, `{append: text}` adds to it. Anything else: -32602."""
    value = (meta or {}).get("systemPrompt")
    if value is None:
        return None
    if isinstance(value, str):
        return ("override", value)
    if isinstance(value, dict) and isinstance(value.get("append"), str):
        return ("append", value["append"])
    raise RpcError(INVALID_PARAMS, "_meta.systemPrompt: a string (replaces), or {append: string}")


def with_message_id(result: dict[str, Any], answer: Any) -> dict[str, Any]:
    """`userMessageId`: the prompt's message id (what `session/fork` and
    `_session/rewind` take), as the message-id draft returns it; `usage` (unstable in
    ACP): this turn's tokens."""
    if answer.message_id is not None:
        result["userMessageId"] = answer.message_id
    turn = answer.turn
    if turn is not None:
        counts = (
            turn.input_tokens,
            turn.output_tokens,
            turn.cache_read_tokens,
            turn.cache_write_tokens,
        )
        result["usage"] = {
            "totalTokens": sum(counts),
            "inputTokens": turn.input_tokens,
            "outputTokens": turn.output_tokens,
            "cachedReadTokens": turn.cache_read_tokens,
            "cachedWriteTokens": turn.cache_write_tokens,
        }
    return result


def log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a steered turn failed: %s", task.exception())


def title_of(prompt: str | list[dict[str, Any]]) -> str:
    text = (
        prompt
        if isinstance(prompt, str)
        else " ".join(b["text"] for b in prompt if b["type"] == "text")
    )
    return " ".join(text.split())[:100] or "[attachment]"


def ref(session_id: str) -> Any:
    from sema_rpc.protocol import SessionRef

    return SessionRef(session_id=session_id)


def mcp(server: McpServer) -> dict[str, Any]:
    """An ACP MCP server as `session/create` takes it (stdio runs; http/sse are reported
    failed by the engine, never silently dropped)."""
    if server.command is not None and server.type in (None, "stdio"):
        return {
            "name": server.name,
            "command": server.command,
            "args": server.args,
            "env": server.env,
        }
    return {
        "name": server.name,
        "type": server.type or "http",
        "url": server.url,
        "headers": server.headers,
    }
