"""The default framing (LSP Content-Length), driven by pytest-lsp's client over real pipes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.lsp_client import SemaLspClient, config
from tests.support.scripted_llm import Reply, ScriptedLLM


@pytest.fixture
async def lsp_client(server_env: dict[str, str]) -> AsyncIterator[SemaLspClient]:
    client = await config(server_env).start()
    assert isinstance(client, SemaLspClient)
    yield client
    await client.stop()


async def test_content_length_session_round_trip(
    lsp_client: SemaLspClient, scripted_llm: ScriptedLLM, workspace
):
    init = await lsp_client.call(
        "initialize", {"protocolVersion": 1, "clientInfo": {"name": "pytest-lsp"}}
    )
    assert init["protocolVersion"] == 1
    assert "session/prompt" in init["capabilities"]["methods"]

    ready = await lsp_client.call(
        "session/create", {"workingDir": str(workspace), "model": "anthropic/claude-x"}
    )
    sid = ready["sessionId"]
    scripted_llm.script(
        Reply.tools(
            [("Glob", {"pattern": "src/*.py"}), ("Read", {"file_path": "README.md"})],
            text="Looking.",
        ),
        Reply.text(
            "Eight modules and a README — ünïcödé and a line\u2028separator survive.", chunks=5
        ),
    )
    result = await lsp_client.call("session/prompt", {"sessionId": sid, "input": "What is here?"})

    assert result["stopReason"] == "end_turn"
    methods = [m for m, _ in lsp_client.notifications]
    assert methods[0] == "session:ready"
    assert methods.count("tool:execution:complete") == 2
    text = "".join(p["delta"] for m, p in lsp_client.notifications if m == "message:text:chunk")
    assert text == "Looking.Eight modules and a README — ünïcödé and a line\u2028separator survive."
    assert (await lsp_client.wait_for("conversation:usage"))["usage"]["maxTokens"] > 0

    assert await lsp_client.call("shutdown", None) == {}
    lsp_client.protocol.notify("exit", None)
