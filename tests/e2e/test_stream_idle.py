"""A model stream that stops sending: the stream idle timeout ends the turn, over real pipes.

The scripted model server streams part of an answer and then holds the connection open
without sending anything (its `gate` is never opened), as a stalled provider does.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.asyncio

IDLE_S = 1.0
BOUND_S = 12.0
"""The prompt is answered well within this (the machine running the tests may be slow)."""

MODELS = {
    "anthropic": "anthropic/claude-test",
    "openai": "openai/gpt-test",
    "openai-responses": "openai-responses/gpt-test",
}


@pytest.fixture
def stall() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()  # let the server's handler finish


@pytest.mark.parametrize("provider", list(MODELS))
async def test_a_stream_that_stalls_after_text_ends_the_turn_with_an_idle_timeout_error(
    provider: str, server_env, scripted_llm: ScriptedLLM, workspace, stall
):
    env = {**server_env, "SEMA_STREAM_IDLE_TIMEOUT": str(IDLE_S)}
    scripted_llm.script(
        Reply.text("Part of an answer", chunks=3, gate=stall),
        Reply.text("A complete answer."),
    )
    async with WireClient(env=env) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model=MODELS[provider]))["sessionId"]
        started = time.monotonic()
        result = await client.call(
            "session/prompt", {"sessionId": sid, "input": "hello"}, timeout=BOUND_S
        )
        elapsed = time.monotonic() - started

        assert result["stopReason"] == "error"
        assert result["error"]["code"] == "idle_timeout"
        assert IDLE_S * 0.9 <= elapsed < BOUND_S
        (error,) = client.events("session:error", sid)
        assert error.params["type"] == "api_error"
        assert error.params["error"]["code"] == "idle_timeout"
        message = error.params["error"]["message"]
        assert message.startswith("Idle timeout: the model stream stalled")
        assert "nothing arrived for 1 s after part of the answer had streamed" in message
        assert "SEMA_STREAM_IDLE_TIMEOUT" in message
        # The partial text reached the client once; the stalled stream was not retried.
        chunks = "".join(e.params["delta"] for e in client.events("message:text:chunk", sid))
        assert chunks == "Part of an answer"
        assert len(scripted_llm.requests) == 1

        # The session goes on.
        result = await client.call("session/prompt", {"sessionId": sid, "input": "again"})
        assert result["stopReason"] == "end_turn"


class SilentServer:
    """Accepts connections and never answers: a provider that stalls before responding."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                self.accepted.append(conn)

    def close(self) -> None:
        for conn in self.accepted:
            conn.close()
        self.sock.close()


async def test_a_provider_that_never_starts_answering_is_retried_then_fails(server_env, workspace):
    silent = SilentServer()
    env = {
        **server_env,
        "SEMA_STREAM_IDLE_TIMEOUT": str(IDLE_S),
        "SEMA_MAX_RETRIES": "1",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{silent.port}",
    }
    try:
        async with WireClient(env=env) as client:
            await client.initialize()
            sid = (await client.create_session(workspace, model="anthropic/claude-test"))[
                "sessionId"
            ]
            result = await client.call(
                "session/prompt", {"sessionId": sid, "input": "hello"}, timeout=BOUND_S
            )
            assert result["stopReason"] == "error"
            (error,) = client.events("session:error", sid)
            assert error.params["error"]["code"] == "idle_timeout"
            message = error.params["error"]["message"]
            assert "did not start answering: nothing arrived for 1 s (tried 2 times)" in message
            assert len(silent.accepted) == 2, "the SDK's retry applies before the stream starts"
    finally:
        silent.close()
