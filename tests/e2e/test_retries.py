"""The providers' retry policy over real HTTP, seen from the client: which answers the
server retries (and how long it waits), which it reports at once, for every provider.

The scripted model server answers with the statuses and headers a provider sends; what
is asserted is what a client sees (the prompt's result, `session:error`) and how many
requests reached the model server.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from tests.support.ports import refusing_port
from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

pytestmark = pytest.mark.asyncio

MODELS = {
    "anthropic": "anthropic/claude-test",
    "openai": "openai/gpt-test",
    "openai-responses": "openai-responses/gpt-test",
}
BOUND_S = 30.0


async def _prompt(client: WireClient, workspace: Path, provider: str) -> tuple[str, dict]:
    await client.initialize()
    sid = (await client.create_session(workspace, model=MODELS[provider]))["sessionId"]
    result = await client.call(
        "session/prompt", {"sessionId": sid, "input": "hello"}, timeout=BOUND_S
    )
    return sid, result


def _text(client: WireClient, sid: str) -> str:
    return "".join(e.params["delta"] for e in client.events("message:text:chunk", sid))


@pytest.mark.parametrize("provider", list(MODELS))
async def test_429_waits_for_retry_after_then_answers(
    provider: str, server_env, scripted_llm: ScriptedLLM, workspace: Path
) -> None:
    scripted_llm.script(
        Reply.error(429, retry_after_ms=None, headers={"retry-after": "1"}),
        Reply.text("Answer after the rate limit."),
    )
    async with WireClient(env=server_env) as client:
        started = time.monotonic()
        sid, result = await _prompt(client, workspace, provider)
        assert result["stopReason"] == "end_turn"
        assert _text(client, sid) == "Answer after the rate limit."
        assert client.events("session:error", sid) == []
    reqs = scripted_llm.requests
    assert len(reqs) == 2
    # The second attempt came no earlier than the server asked (the default backoff
    # would have waited at most 0.5 s).
    assert reqs[1].at - reqs[0].at >= 0.95
    assert time.monotonic() - started >= 0.95


@pytest.mark.parametrize("status", [529, 503, 500, 408, 409])
@pytest.mark.parametrize("provider", list(MODELS))
async def test_transient_statuses_are_retried(
    provider: str, status: int, server_env, scripted_llm: ScriptedLLM, workspace: Path
) -> None:
    scripted_llm.script(Reply.error(status), Reply.error(status), Reply.text("Third time."))
    async with WireClient(env=server_env) as client:  # SEMA_MAX_RETRIES=2
        sid, result = await _prompt(client, workspace, provider)
        assert result["stopReason"] == "end_turn"
        assert _text(client, sid) == "Third time."
    assert len(scripted_llm.requests) == 3
    # The production path sent them (not an SDK), telling the model server the attempt.
    assert not any(
        r.headers["user-agent"].startswith(("AsyncAnthropic/", "AsyncOpenAI/"))
        for r in scripted_llm.requests
    )
    assert [r.headers.get("x-stainless-retry-count") for r in scripted_llm.requests] == [
        "0",
        "1",
        "2",
    ]


@pytest.mark.parametrize("provider", list(MODELS))
async def test_retries_are_bounded_by_sema_max_retries(
    provider: str, server_env, scripted_llm: ScriptedLLM, workspace: Path
) -> None:
    scripted_llm.script(*(Reply.error(503, message="busy, try later") for _ in range(5)))
    env = {**server_env, "SEMA_MAX_RETRIES": "1"}
    async with WireClient(env=env) as client:
        sid, result = await _prompt(client, workspace, provider)
        assert result["stopReason"] == "error"
        assert result["error"]["code"] == "server_error"
        (error,) = client.events("session:error", sid)
        assert error.params["error"]["code"] == "server_error"
        assert "busy, try later" in error.params["error"]["message"]
    assert len(scripted_llm.requests) == 2


@pytest.mark.parametrize("provider", list(MODELS))
async def test_400_is_reported_at_once(
    provider: str, server_env, scripted_llm: ScriptedLLM, workspace: Path
) -> None:
    scripted_llm.script(Reply.error(400, message="messages: field required"), Reply.text("no"))
    async with WireClient(env=server_env) as client:
        sid, result = await _prompt(client, workspace, provider)
        assert result["stopReason"] == "error"
        assert result["error"]["code"] == "invalid_request"
        (error,) = client.events("session:error", sid)
        assert error.params["error"]["message"] == "messages: field required"
    assert len(scripted_llm.requests) == 1


@pytest.mark.parametrize("provider", list(MODELS))
async def test_x_should_retry_overrides_the_status(
    provider: str, server_env, scripted_llm: ScriptedLLM, workspace: Path
) -> None:
    # `false` stops the retry of a 503; `true` retries a 400.
    scripted_llm.script(Reply.error(503, headers={"x-should-retry": "false"}), Reply.text("no"))
    async with WireClient(env=server_env) as client:
        sid, result = await _prompt(client, workspace, provider)
        assert result["stopReason"] == "error"
        assert result["error"]["code"] == "server_error"
    assert len(scripted_llm.requests) == 1

    scripted_llm.reset()
    scripted_llm.script(
        Reply.error(400, headers={"x-should-retry": "true"}), Reply.text("Retried anyway.")
    )
    async with WireClient(env=server_env) as client:
        sid, result = await _prompt(client, workspace, provider)
        assert result["stopReason"] == "end_turn"
        assert _text(client, sid) == "Retried anyway."
    assert len(scripted_llm.requests) == 2


def _refusing_url(openai: bool) -> str:
    """A local address where nothing listens: connections are refused."""
    port = refusing_port()
    return f"http://127.0.0.1:{port}" + ("/v1" if openai else "")


@pytest.mark.parametrize("provider", list(MODELS))
async def test_connection_refused_is_retried_with_backoff(
    provider: str, server_env, workspace: Path
) -> None:
    url = _refusing_url(provider != "anthropic")
    env = {**server_env, "ANTHROPIC_BASE_URL": url, "OPENAI_BASE_URL": url}
    elapsed: dict[str, float] = {}
    for retries in ("0", "2"):
        async with WireClient(env={**env, "SEMA_MAX_RETRIES": retries}) as client:
            await client.initialize()
            # A first prompt in another session loads the provider (seconds of imports on
            # a loaded machine), so the timed one below measures the retries alone.
            warm = (await client.create_session(workspace, model=MODELS[provider]))["sessionId"]
            await client.call("session/prompt", {"sessionId": warm, "input": "hi"}, timeout=BOUND_S)
            sid = (await client.create_session(workspace, model=MODELS[provider]))["sessionId"]
            started = time.monotonic()
            result = await client.call(
                "session/prompt", {"sessionId": sid, "input": "hello"}, timeout=BOUND_S
            )
            elapsed[retries] = time.monotonic() - started
            assert result["stopReason"] == "error"
            assert result["error"]["code"] == "connection"
            (error,) = client.events("session:error", sid)
            assert error.params["error"]["message"] == "Connection error."
    # Two retries wait 0.5 s and 1 s less up to 25 % jitter: at least 1.125 s in all.
    assert elapsed["2"] >= 1.1
    assert elapsed["2"] - elapsed["0"] >= 1.0


async def test_initialize_imports_no_provider_code(server_env) -> None:
    env = {**server_env, "PYTHONPROFILEIMPORTTIME": "1"}
    async with WireClient(env=env) as client:
        await client.initialize()
        # The models load right after the answer: wait for their import to be logged
        # (seconds on a loaded machine) before reading what was imported.
        for _ in range(400):
            log = client.stderr.decode("utf-8", "replace")
            if "| sema_rpc.protocol\n" in log:
                break
            await asyncio.sleep(0.05)
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in log.splitlines() if "import time:" in line
    }
    assert "sema_rpc.protocol" in imported  # the log is the server's
    heavy = {
        m
        for m in imported
        if m.split(".")[0] in ("anthropic", "openai", "httpx2", "httpcore2", "mcp", "mcp_types")
        or m.startswith("sema_rpc.providers")
        or m.startswith("sema_rpc.engine")
    }
    assert heavy == set()


@pytest.mark.parametrize("provider", list(MODELS))
async def test_a_transport_sdk_profile_goes_through_the_sdk_with_the_same_policy(
    provider: str, server_env, scripted_llm: ScriptedLLM, workspace: Path
) -> None:
    root = Path(server_env["SEMA_ROOT"])
    model = MODELS[provider].split("/", 1)[1]
    profile = {"provider": provider, "modelName": model, "transport": "sdk"}
    (root / "models.json").write_text(json.dumps({"profiles": {"via-sdk": profile}}))
    scripted_llm.script(Reply.error(529), Reply.text("Through the SDK."))
    async with WireClient(env=server_env) as client:
        await client.initialize()
        sid = (await client.create_session(workspace, model="via-sdk"))["sessionId"]
        result = await client.call(
            "session/prompt", {"sessionId": sid, "input": "hello"}, timeout=BOUND_S
        )
        assert result["stopReason"] == "end_turn"
        assert _text(client, sid) == "Through the SDK."
    # The official SDK sent them (its user agent), and retried the 529 once.
    agents = [r.headers["user-agent"] for r in scripted_llm.requests]
    assert len(agents) == 2
    assert all(a.startswith(("AsyncAnthropic/", "AsyncOpenAI/")) for a in agents)
    assert scripted_llm.requests[1].headers["x-stainless-retry-count"] == "1"


async def test_an_unknown_transport_is_a_configuration_error(server_env, workspace: Path) -> None:
    root = Path(server_env["SEMA_ROOT"])
    profile = {"provider": "anthropic", "modelName": "m", "transport": "grpc"}
    (root / "models.json").write_text(json.dumps({"profiles": {"odd": profile}}))
    async with WireClient(env=server_env) as client:
        await client.initialize()
        with pytest.raises(RpcFailure) as err:
            await client.create_session(workspace, model="odd")
        assert err.value.error["code"] == -32014
        assert '"transport" must be one of http, sdk' in err.value.error["message"]
