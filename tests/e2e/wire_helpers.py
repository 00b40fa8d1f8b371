"""Helpers for the issue-5 end-to-end tests: an editor that answers every server→client
request, and readers for what the scripted model server was sent (Anthropic format)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.wire_client import WireClient

MODEL = "anthropic/claude-test"

_DEFAULTS: dict[str, dict[str, Any]] = {
    "tool:permission:request": {"decision": "reject"},
    "ask:question:request": {"answers": {}},
    "plan:exit:request": {"decision": "keepPlanning"},
}


class Editor:
    """Answers server→client requests from per-method queues and records what it was asked.

    `Editor(permission=[...], question=[...], plan=[...])`; an empty queue answers with a
    refusal (reject / no answers / keepPlanning)."""

    def __init__(
        self,
        *,
        permission: list[dict[str, Any]] | None = None,
        question: list[dict[str, Any]] | None = None,
        plan: list[dict[str, Any]] | None = None,
    ):
        self.queues = {
            "tool:permission:request": list(permission or []),
            "ask:question:request": list(question or []),
            "plan:exit:request": list(plan or []),
        }
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, method: str, params: dict[str, Any]) -> Any:
        self.asked.append((method, params))
        queue = self.queues[method]
        return queue.pop(0) if queue else _DEFAULTS[method]

    def of(self, method: str) -> list[dict[str, Any]]:
        return [p for m, p in self.asked if m == method]


async def start_client(
    env: dict[str, str], editor: Editor | None = None, **capabilities: bool
) -> WireClient:
    client = await WireClient(env=env, on_server_request=editor).start()
    await client.initialize(**capabilities)
    return client


async def new_session(client: WireClient, workspace: Path, **params: Any) -> str:
    ready = await client.create_session(workspace, model=MODEL, **params)
    return ready["sessionId"]


async def prompt(client: WireClient, sid: str, text: str, timeout: float = 20) -> dict[str, Any]:
    return await client.call("session/prompt", {"sessionId": sid, "input": text}, timeout=timeout)


# ---------------------------------------------------------------- what the model was sent


def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def texts(message: dict[str, Any]) -> list[str]:
    """The text blocks of one message, in order."""
    return [b["text"] for b in blocks(message) if b.get("type") == "text"]


def last_user(body: dict[str, Any]) -> dict[str, Any]:
    message = body["messages"][-1]
    assert message["role"] == "user"
    return message


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of the last (user) message."""
    return [b for b in blocks(last_user(body)) if b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


def dump(body: dict[str, Any]) -> str:
    """The whole request as text, for "is this anywhere in what the model saw" checks."""
    return json.dumps(body, ensure_ascii=False)
