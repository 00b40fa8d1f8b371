"""The official SDKs as the oracle of the light request path (`transport: "http"`).

- every shared cassette, served verbatim, gives the same events (deltas, tool starts, the
  assembled message, stop reason, usage) through the light path and through the SDK;
- the same faults (error statuses, `event: error`, cut and malformed streams, refused
  connections) give the same ProviderError (kind, status, code, message) on both;
- the same ModelRequest reaches the model server as the same request (method, path,
  headers except the SDKs' telemetry, JSON body);
- the constants the light path copies (`http.SDK_PARITY`) and its retry decisions are
  the installed SDKs' own, so an SDK upgrade that changes them fails here.
"""

from __future__ import annotations

import json
import random
from email.utils import formatdate
from typing import Any

import httpx2
import pytest

from sema_rpc.core.stream import ProviderError, ResponseDone, ResponseFailed, StreamEvent
from sema_rpc.providers import http
from sema_rpc.providers.anthropic import AnthropicProvider
from sema_rpc.providers.openai_chat import OpenAIChatProvider
from sema_rpc.providers.openai_responses import OpenAIResponsesProvider
from tests.providers.helpers import ANTHROPIC, CASSETTES, CHAT, collect, request
from tests.support.ports import refusing_port
from tests.support.scripted_llm import Reply, ScriptedLLM

RESPONSES = sorted(p.stem for p in CASSETTES.glob("openai_responses_*.sse"))
CLASSES: dict[str, Any] = {
    "anthropic": AnthropicProvider,
    "openai": OpenAIChatProvider,
    "openai-responses": OpenAIResponsesProvider,
}


@pytest.fixture(scope="module")
def llm() -> Any:
    with ScriptedLLM() as server:
        yield server


def _url(kind: str, llm: ScriptedLLM) -> str:
    return llm.url if kind == "anthropic" else llm.openai_url


async def _both(
    kind: str, llm: ScriptedLLM, reply: Reply, retries: int = 0
) -> tuple[list[StreamEvent], list[StreamEvent], list[Any]]:
    """The same reply through the light path and the SDK: both event lists, and the
    requests the model server saw (light first)."""
    out: list[list[StreamEvent]] = []
    llm.reset()
    for transport in ("http", "sdk"):
        llm.script(reply)
        provider = CLASSES[kind](
            "test-key", _url(kind, llm), max_retries=retries, transport=transport
        )
        out.append((await collect(provider)).events)
        await provider.aclose()
    return out[0], out[1], list(llm.requests)


def _kind_of(name: str) -> str:
    if name.startswith("anthropic_"):
        return "anthropic"
    return "openai-responses" if name.startswith("openai_responses_") else "openai"


@pytest.mark.parametrize("name", [*ANTHROPIC, *CHAT, *RESPONSES])
async def test_every_cassette_parses_the_same_on_both_paths(llm: ScriptedLLM, name: str) -> None:
    reply = Reply.raw(CASSETTES / f"{name}.sse", piece_size=61)
    light, sdk, _ = await _both(_kind_of(name), llm, reply)
    assert light == sdk
    final = light[-1]
    if isinstance(final, ResponseDone) and (final.message.text() or final.message.thinking()):
        assert len(light) > 1  # text and thinking stream as deltas before the terminal event


def _faults(kind: str) -> list[tuple[str, Reply]]:
    faults = [
        ("400", Reply.error(400, message="messages: field required")),
        ("400-overflow", Reply.error(400, message="prompt is too long: 210000 tokens")),
        ("401", Reply.error(401, message="invalid x-api-key")),
        ("404", Reply.error(404)),
        ("429", Reply.error(429)),
        ("500", Reply.error(500)),
        ("529", Reply.error(529, error_type="overloaded_error")),
        ("text-body", Reply.raw(b"upstream connect error", status=502, content_type="text/plain")),
        ("cut", Reply.cut("Partial ans")),
        ("cut-abrupt", Reply.cut("Partial ans", abrupt=True)),
        ("mid-stream-overloaded", Reply.mid_stream_error("Half", error_type="overloaded_error")),
        ("mid-stream-api-error", Reply.mid_stream_error("Half", error_type="api_error")),
    ]
    if kind != "openai-responses":
        faults.append(("malformed", Reply.raw(b"event: x\ndata: {not json\n\n")))
    return faults


FAULT_CASES = [(kind, label) for kind in CLASSES for label, _ in _faults(kind)]


@pytest.mark.parametrize(("kind", "label"), FAULT_CASES)
async def test_faults_fail_the_same_on_both_paths(llm: ScriptedLLM, kind: str, label: str) -> None:
    reply = dict(_faults(kind))[label]
    light, sdk, requests = await _both(kind, llm, reply)
    assert isinstance(light[-1], ResponseFailed)
    assert light == sdk
    assert len(requests) == 2  # one each: max_retries=0


@pytest.mark.parametrize("kind", list(CLASSES))
async def test_connection_refused_fails_the_same_on_both_paths(kind: str) -> None:
    port = refusing_port()
    url = f"http://127.0.0.1:{port}" + ("" if kind == "anthropic" else "/v1")
    errors: list[ProviderError] = []
    for transport in ("http", "sdk"):
        provider = CLASSES[kind]("k", url, max_retries=0, transport=transport)
        errors.append((await collect(provider)).failed.error)
        await provider.aclose()
    assert errors[0] == errors[1] == ProviderError("connection", "Connection error.")


_TELEMETRY = ("x-stainless-", "user-agent")


@pytest.mark.parametrize("kind", list(CLASSES))
async def test_the_same_request_reaches_the_server(llm: ScriptedLLM, kind: str) -> None:
    from sema_rpc.core.stream import ToolSpec

    # (No temperature: the installed Anthropic SDK's `messages.create` no longer takes it.)
    req = request(
        "read a.py",
        tools=[ToolSpec("Read", "Read a file", {"type": "object", "properties": {}})],
        temperature=None if kind == "anthropic" else 0.3,
    )
    llm.reset()
    for transport in ("http", "sdk"):
        llm.script(Reply.text("ok"))
        provider = CLASSES[kind]("sk-secret", _url(kind, llm), max_retries=0, transport=transport)
        got = await collect(provider, req)
        await provider.aclose()
        assert got.text == "ok", (transport, got.events)
    light, sdk = llm.requests

    def shape(r: Any) -> tuple[str, dict[str, str], Any]:
        headers = {k: v for k, v in r.headers.items() if not k.startswith(_TELEMETRY)}
        return r.path, headers, r.body

    assert shape(light) == shape(sdk)
    assert light.headers["x-stainless-retry-count"] == sdk.headers["x-stainless-retry-count"]


# ---- constants and retry decisions ----------------------------------------------------


def test_parity_constants_match_the_installed_sdks() -> None:
    import anthropic
    import openai
    from anthropic import _constants as ac
    from openai import _constants as oc

    sdk_values: dict[str, Any] = {
        "anthropic.ANTHROPIC_API_VERSION": ac.ANTHROPIC_API_VERSION,
        "anthropic.base_url": str(anthropic.AsyncAnthropic(api_key="k").base_url).rstrip("/"),
        "openai.base_url": str(openai.AsyncOpenAI(api_key="k").base_url).rstrip("/"),
        "timeout": ac.DEFAULT_TIMEOUT.read,
        "connect_timeout": ac.DEFAULT_TIMEOUT.connect,
        "max_connections": ac.DEFAULT_CONNECTION_LIMITS.max_connections,
        "max_keepalive_connections": ac.DEFAULT_CONNECTION_LIMITS.max_keepalive_connections,
        "max_retries": ac.DEFAULT_MAX_RETRIES,
        "initial_retry_delay": ac.INITIAL_RETRY_DELAY,
        "max_retry_delay": ac.MAX_RETRY_DELAY,
        "openai.max_retry_after": oc.MAX_RETRY_AFTER_DELAY,
    }
    assert http.SDK_PARITY == sdk_values
    # Both SDKs agree where the light path uses one value for both.
    assert (oc.DEFAULT_TIMEOUT.read, oc.DEFAULT_TIMEOUT.connect) == (600, 5.0)
    assert oc.DEFAULT_MAX_RETRIES == ac.DEFAULT_MAX_RETRIES
    assert (oc.INITIAL_RETRY_DELAY, oc.MAX_RETRY_DELAY) == (0.5, 8.0)
    assert oc.DEFAULT_CONNECTION_LIMITS.max_connections == MAXC
    # The client is built with them.
    client = http.new_client()
    assert client.timeout == ac.DEFAULT_TIMEOUT
    assert client.follow_redirects is True


MAXC = http.MAX_CONNECTIONS

HEADER_CASES: list[dict[str, str]] = [
    {},
    {"retry-after-ms": "1500"},
    {"retry-after-ms": "nope", "retry-after": "2"},
    {"retry-after": "2.5"},
    {"retry-after": "0"},
    {"retry-after": "-3"},
    {"retry-after": "300"},
    {"retry-after": "bogus"},
    {"x-should-retry": "true"},
    {"x-should-retry": "false"},
    {"x-should-retry": "maybe"},
    {"x-should-retry": "true", "retry-after": "500"},
]
STATUSES = [400, 401, 404, 408, 409, 413, 422, 429, 500, 502, 503, 529]


@pytest.mark.parametrize("sdk_name", ["anthropic", "openai"])
def test_retry_decisions_and_delays_match_the_sdk(sdk_name: str) -> None:
    import importlib

    sdk = importlib.import_module(sdk_name)
    client = (sdk.AsyncAnthropic if sdk_name == "anthropic" else sdk.AsyncOpenAI)(api_key="k")
    options = sdk._models.FinalRequestOptions.construct(method="post", url="/x")
    cap = None if sdk_name == "anthropic" else http.OPENAI_MAX_RETRY_AFTER
    date_in_10s = formatdate(timeval=__import__("time").time() + 10, usegmt=True)
    for extra in [*HEADER_CASES, {"retry-after": date_in_10s}]:
        headers = httpx2.Headers(extra)
        for status in STATUSES:
            response = httpx2.Response(
                status, headers=headers, request=httpx2.Request("POST", "http://x")
            )
            assert http.should_retry(status, headers, cap) == client._should_retry(response), (
                status,
                extra,
            )
        ours_after = http.retry_after(headers)
        sdk_after = client._parse_retry_after_header(headers)
        if ours_after is None or sdk_after is None:
            assert ours_after == sdk_after, extra
        else:
            assert abs(ours_after - sdk_after) < 1.0, extra  # the HTTP date: time passes
        for max_retries, left in ((2, 2), (2, 1), (5, 1), (10, 0)):
            client.max_retries = max_retries
            random.seed(7)
            ours = http.retry_delay(max_retries, left, headers, cap)
            random.seed(7)
            theirs = client._calculate_retry_timeout(left, options, headers)
            assert abs(ours - theirs) < 1.0 if "retry-after" in str(extra) else ours == theirs, (
                extra,
                max_retries,
                left,
                ours,
                theirs,
            )


def test_error_body_parsing_matches_the_sdk() -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="k")
    for status, raw in (
        (400, b'{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}'),
        (502, b"upstream connect error"),
        (500, b""),
        (429, b"[1, 2]"),
    ):
        response = httpx2.Response(status, content=raw, request=httpx2.Request("POST", "http://x"))
        sdk_err = client._make_status_error_from_response(response)
        body, message = http.parse_error_body(status, raw)
        assert (body, message) == (sdk_err.body, str(sdk_err)), raw
        assert json.dumps(body)  # a JSON-safe value for ProviderError


def _anthropic_sse(texts: list[str], *, spaced: bool, tail: bytes = b"") -> bytes:
    """A text answer as the API streams it (compact JSON, or json.dumps's spaces)."""
    separators = (", ", ": ") if spaced else (",", ":")

    def event(name: str, data: dict[str, Any]) -> bytes:
        payload = json.dumps(data, separators=separators, ensure_ascii=False)
        return f"event: {name}\ndata: {payload}\n\n".encode()

    usage = {"input_tokens": 5, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
    out = [
        event("message_start", {"type": "message_start", "message": {**message, "usage": usage}})
    ]
    block = {"type": "text", "text": ""}
    out.append(
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
    )
    for text in texts:
        delta = {"type": "text_delta", "text": text}
        out.append(
            event(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            )
        )
    out.append(tail)
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}
    out.append(event("message_delta", stop))
    out.append(event("message_stop", {"type": "message_stop"}))
    return b"".join(out)


TRICKY_TEXTS = [
    "plain ",
    'a "quote" ',
    "back\\slash ",
    "tab\t",
    "new\nline ",
    "é 日本 😀 ",
    "\u2028",
    "",
    "</x>",
]


@pytest.mark.parametrize("spaced", [False, True])
@pytest.mark.parametrize("piece_size", [61, 1 << 20])
async def test_text_deltas_read_the_same_on_both_paths(
    llm: ScriptedLLM, spaced: bool, piece_size: int
) -> None:
    # The light path reads a plain text delta without the JSON decoder: any text, in
    # either JSON style, in small reads or in one, gives the SDK's events.
    reply = Reply.raw(_anthropic_sse(TRICKY_TEXTS, spaced=spaced), piece_size=piece_size)
    light, sdk, _ = await _both("anthropic", llm, reply)
    assert light == sdk
    final = light[-1]
    assert isinstance(final, ResponseDone) and final.message.text() == "".join(TRICKY_TEXTS)


async def test_a_bad_event_after_deltas_in_the_same_read_fails_as_the_sdk_does(
    llm: ScriptedLLM,
) -> None:
    # Events of one network read are handled one by one: the deltas before a malformed
    # one still stream, then the stream fails the same way on both paths.
    body = _anthropic_sse(
        ["one ", "two "], spaced=False, tail=b"event: content_block_delta\ndata: {nope\n\n"
    )
    light, sdk, _ = await _both("anthropic", llm, Reply.raw(body, piece_size=1 << 20))
    assert light == sdk
    assert isinstance(light[-1], ResponseFailed)
    assert len(light) == 3  # two deltas, then the failure
