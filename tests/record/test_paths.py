"""Replay's path mapping (`sema-rpc replay --cwd`): recorded working dirs rewritten in the
model's streamed tool calls, checked by parsing the rewritten streams with the real SDKs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sema_rpc.providers.replay import ReplayProvider
from sema_rpc.record.paths import PathMap, rewrite_cassette_paths
from tests.providers.helpers import CASSETTES, collect
from tests.support.scripted_llm import Reply

OLD, NEW = "/home/me/proj", "/tmp/fresh/proj"
FORMATS = {"anthropic": "anthropic", "openai-chat": "openai", "openai-responses": "responses"}


def test_only_whole_paths_are_rewritten() -> None:
    paths = PathMap({OLD: NEW})
    assert paths.apply(f"{OLD}/a.py {OLD} {OLD}2/b.py {OLD}.bak") == (
        f"{NEW}/a.py {NEW} {OLD}2/b.py {OLD}.bak"
    )
    assert paths.apply_json({"k": [f"{OLD}/x"]}) == {"k": [f"{NEW}/x"]}
    inside = PathMap({OLD: f"{OLD}/copy"})  # the new folder inside the old one
    assert inside.apply(f"{OLD}/a.py") == f"{OLD}/copy/a.py"


@pytest.mark.parametrize("provider", list(FORMATS))
async def test_a_path_cut_across_argument_fragments_is_rewritten(
    provider: str, tmp_path: Path
) -> None:
    args = {"file_path": f"{OLD}/src/app.py", "content": f"see {OLD}2 and {OLD}"}
    reply = Reply.tools([("Write", args)], text="Writing.")
    before, after = reply.render(FORMATS[provider])
    body = b"".join(before + after).decode()
    cut = json.dumps(args)
    assert cut not in body, "the scripted server streams the arguments in pieces"
    line = json.dumps({"provider": provider, "request": {"cwd": OLD}, "body": body})
    rewritten = rewrite_cassette_paths(line, PathMap({OLD: NEW}))
    assert json.loads(rewritten)["request"] == {"cwd": NEW}
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(rewritten + "\n")
    [tool] = (await collect(ReplayProvider(cassette))).done.message.tool_uses()
    assert tool.input == {"file_path": f"{NEW}/src/app.py", "content": f"see {OLD}2 and {NEW}"}


@pytest.mark.parametrize(
    "name",
    [
        "anthropic_parallel_tool_use_1",
        "openai_chat_parallel_tool_calls_1",
        "openai_responses_reasoning_summary_1",
    ],
)
async def test_a_stream_without_the_path_parses_the_same(name: str, tmp_path: Path) -> None:
    sse = CASSETTES / f"{name}.sse"
    provider = ReplayProvider(sse)
    line = json.dumps({"provider": provider.exchanges[0].provider, "body": sse.read_text()})
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(rewrite_cassette_paths(line, PathMap({OLD: NEW})) + "\n")
    original, rewritten = await collect(provider), await collect(ReplayProvider(cassette))
    assert rewritten.events == original.events
