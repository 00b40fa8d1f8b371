"""session/prompt with content blocks (text, image, resource) over real pipes: what each
provider's request body carries, what is refused (-32602, nothing kept), and what the
history keeps."""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_llm import Reply, ScriptedLLM
from tests.support.wire_client import RpcFailure, WireClient

pytestmark = pytest.mark.asyncio

PROFILES = {
    "claude-vision": {"provider": "anthropic", "modelName": "claude-test", "images": True},
    "chat-vision": {"provider": "openai", "modelName": "gpt-test", "images": True},
    "responses-vision": {
        "provider": "openai-responses",
        "modelName": "gpt-test",
        "images": True,
    },
    "text-only": {"provider": "anthropic", "modelName": "claude-test", "images": False},
}


def png(width: int = 2, height: int = 1) -> bytes:
    """A real (tiny, grey) PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = png()
PNG_B64 = base64.b64encode(PNG).decode()


@pytest.fixture
def env(server_env: dict[str, str]) -> dict[str, str]:
    root = Path(server_env["SEMA_ROOT"])
    (root / "models.json").write_text(json.dumps({"profiles": PROFILES}))
    return server_env


async def session(client: WireClient, workspace: Path, model: str, **params: Any) -> str:
    await client.initialize()
    ready = await client.create_session(workspace, model=model, **params)
    return ready["sessionId"]


async def prompt(client: WireClient, sid: str, content: Any) -> dict[str, Any]:
    return await client.call("session/prompt", {"sessionId": sid, "input": content})


def history_file(env: dict[str, str], sid: str) -> Path:
    return Path(env["SEMA_ROOT"]) / "history" / f"{sid}.jsonl"


def user_parts(body: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """The content parts of the request's last user message, in the provider's format."""
    if model == "responses-vision":
        items = [i for i in body["input"] if i.get("type") == "message" and i["role"] == "user"]
        return items[-1]["content"]
    message = body["messages"][-1]
    assert message["role"] == "user"
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def image_parts(body: dict[str, Any], model: str) -> list[dict[str, Any]]:
    kind = {"claude-vision": "image", "chat-vision": "image_url"}.get(model, "input_image")
    return [p for p in user_parts(body, model) if p["type"] == kind]


def expected_image(model: str) -> dict[str, Any]:
    url = f"data:image/png;base64,{PNG_B64}"
    if model == "claude-vision":
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
        }
    if model == "chat-vision":
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "input_image", "image_url": url, "detail": "auto"}


@pytest.mark.parametrize("source", ["data", "path"])
@pytest.mark.parametrize("model", ["claude-vision", "chat-vision", "responses-vision"])
async def test_an_image_reaches_the_model_in_its_providers_format(
    env, scripted_llm: ScriptedLLM, workspace: Path, model: str, source: str
):
    (workspace / "shots").mkdir()
    (workspace / "shots" / "button.png").write_bytes(PNG)
    image = (
        {"type": "image", "data": PNG_B64, "mediaType": "image/png"}
        if source == "data"
        else {"type": "image", "path": "shots/button.png"}
    )
    scripted_llm.script(Reply.text("A grey button."), Reply.text("Still grey."))
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, model)
        result = await prompt(
            client, sid, [{"type": "text", "text": "What is in this picture?"}, image]
        )
        assert result["stopReason"] == "end_turn"
        # The next prompt sends the conversation again: the image is part of it.
        await prompt(client, sid, "And its colour?")

    first, second = (r.body for r in scripted_llm.requests)
    parts = user_parts(first, model)
    texts = [p.get("text") for p in parts if p["type"] in ("text", "input_text")]
    assert texts[0] == "What is in this picture?"
    assert image_parts(first, model) == [expected_image(model)]
    # In the input's order: the question, then the image (reminders may follow).
    kinds = [p["type"] for p in parts]
    assert kinds.index(expected_image(model)["type"]) == 1
    sent_again = [p for parts in _all_user_parts(second, model) for p in parts]
    assert expected_image(model) in sent_again
    # Kept in the history file, the bytes once, as base64.
    text = history_file(env, sid).read_text()
    assert text.count(PNG_B64) == 1
    assert os.stat(history_file(env, sid)).st_mode & 0o777 == 0o600


def _all_user_parts(body: dict[str, Any], model: str) -> list[list[dict[str, Any]]]:
    if model == "responses-vision":
        return [i["content"] for i in body["input"] if i.get("role") == "user"]
    return [m["content"] for m in body["messages"] if m["role"] == "user"]  # type: ignore[misc]


async def test_a_resumed_session_sends_its_image_again(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(Reply.text("A grey button."), Reply.text("Yes, that button."))
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        await prompt(client, sid, [{"type": "image", "data": PNG_B64, "mediaType": "image/png"}])
    async with WireClient(env=env) as client:
        await session(client, workspace, "claude-vision", sessionId=sid)
        await prompt(client, sid, "Same button as before?")

    resumed = scripted_llm.requests[1].body
    assert image_parts({"messages": resumed["messages"][:1]}, "claude-vision") == [
        expected_image("claude-vision")
    ]


async def test_a_resource_reaches_the_model(env, scripted_llm: ScriptedLLM, workspace: Path):
    uri = (workspace / "src" / "mod3.py").as_uri()
    scripted_llm.script(Reply.text("It sets VALUE_3."))
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        await prompt(
            client,
            sid,
            [
                {"type": "text", "text": "Compare these two."},
                {"type": "resource", "uri": uri},  # read by the server
                {"type": "resource", "uri": "untitled:scratch", "text": "UNSAVED = 42"},
            ],
        )
    parts = [p["text"] for p in user_parts(scripted_llm.requests[0].body, "claude-vision")]
    assert parts[0] == "Compare these two."
    assert parts[1].startswith(f'<resource uri="{uri}"') and "VALUE_3 = 3" in parts[1]
    assert 'path="src/mod3.py"' in parts[1]
    assert parts[2].startswith('<resource uri="untitled:scratch"') and "UNSAVED = 42" in parts[2]


async def test_an_image_for_a_model_without_images_is_refused_and_not_kept(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    scripted_llm.script(Reply.text("Hello."))
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "text-only")
        with pytest.raises(RpcFailure) as failure:
            await prompt(
                client,
                sid,
                [
                    {"type": "text", "text": "SECRET-QUESTION about this"},
                    {"type": "image", "data": PNG_B64, "mediaType": "image/png"},
                ],
            )
        assert failure.value.code == -32602
        assert "does not take images" in failure.value.error["message"]
        assert "text-only" in failure.value.error["message"]
        assert not scripted_llm.requests  # nothing ran

        # The session serves on; the refused input is nowhere in what follows.
        await prompt(client, sid, "Hi")
    body = scripted_llm.requests[0].body
    assert len(body["messages"]) == 1
    assert "SECRET-QUESTION" not in json.dumps(body)
    assert "SECRET-QUESTION" not in history_file(env, sid).read_text()
    assert PNG_B64 not in history_file(env, sid).read_text()


@pytest.mark.parametrize(
    "block, message",
    [
        ({"type": "image", "path": "../outside.png"}, "outside the workspace"),
        ({"type": "image", "path": "link.png"}, "outside the workspace"),  # symlink out
        ({"type": "image", "path": "README.md"}, "not a PNG, JPEG, GIF or WebP"),
        ({"type": "image", "path": "missing.png"}, "does not exist"),
        ({"type": "image", "data": "bm90IGFuIGltYWdl", "mediaType": "image/png"}, "not a PNG"),
        ({"type": "image", "data": "%%%", "mediaType": "image/png"}, "not valid base64"),
        ({"type": "image", "data": PNG_B64, "mediaType": "image/tiff"}, "not supported"),
        ({"type": "image", "data": PNG_B64}, "mediaType"),
        ({"type": "image"}, "either `data`"),
        ({"type": "video", "data": PNG_B64}, "video"),
        ({"type": "resource", "uri": "https://example.invalid/x"}, "only a file:// uri"),
        ({"type": "resource", "uri": "file:///etc/hostname"}, "outside the workspace"),
    ],
)
async def test_unusable_blocks_are_refused_before_anything_runs(
    env, scripted_llm: ScriptedLLM, workspace: Path, tmp_path: Path, block: dict, message: str
):
    (tmp_path / "outside.png").write_bytes(PNG)
    (workspace / "link.png").symlink_to(tmp_path / "outside.png")
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        with pytest.raises(RpcFailure) as failure:
            await prompt(client, sid, [{"type": "text", "text": "look"}, block])
        assert failure.value.code == -32602
        # A block the server cannot use: the message says why; a malformed one: the
        # params' validation details (`data`) say which field.
        error = failure.value.error
        assert message in error["message"] + json.dumps(error.get("data"))
        scripted_llm.script(Reply.text("Still here."))
        assert (await prompt(client, sid, "Hi"))["stopReason"] == "end_turn"
    assert len(scripted_llm.requests) == 1
    assert len(scripted_llm.requests[0].body["messages"]) == 1


async def test_an_image_over_the_size_limit_is_refused_with_the_limit(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    big = PNG + b"\x00" * 4_000_000  # the header says PNG; the size is what matters
    (workspace / "big.png").write_bytes(big)
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        for block in (
            {"type": "image", "path": "big.png"},
            {"type": "image", "data": base64.b64encode(big).decode(), "mediaType": "image/png"},
        ):
            with pytest.raises(RpcFailure) as failure:
                await prompt(client, sid, [block])
            assert failure.value.code == -32602
            assert "the limit is 3,932,160 bytes" in failure.value.error["message"]
    assert not scripted_llm.requests


async def test_text_blocks_keep_slash_commands_and_references(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    commands = workspace / ".sema" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text("Explain this screenshot: $ARGUMENTS")
    scripted_llm.script(Reply.text("Explained."))
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        await prompt(
            client,
            sid,
            [
                {"type": "text", "text": "/explain see @README.md"},
                {"type": "image", "data": PNG_B64, "mediaType": "image/png"},
            ],
        )
        refs = client.events("file:reference", sid)
        # /compact with an image is refused: a command takes text only.
        with pytest.raises(RpcFailure) as failure:
            await prompt(
                client,
                sid,
                [
                    {"type": "text", "text": "/compact"},
                    {"type": "image", "data": PNG_B64, "mediaType": "image/png"},
                ],
            )
        assert failure.value.code == -32602
    parts = user_parts(scripted_llm.requests[0].body, "claude-vision")
    assert parts[0] == {"type": "text", "text": "Explain this screenshot: see @README.md"}
    assert parts[1] == expected_image("claude-vision")
    assert any("A tiny project." in p.get("text", "") for p in parts[2:])
    assert [r["name"] for e in refs for r in e.params["references"]] == ["README.md"]


async def test_a_steer_with_an_image_joins_the_running_turn_and_prompts_keep_their_order(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    import asyncio

    (workspace / "shot.png").write_bytes(PNG)
    scripted_llm.script(
        Reply.tools([("Bash", {"command": "sleep 0.5; echo built"})]),
        Reply.text("Built, and I see the screenshot."),
        Reply.text("First follow-up."),
        Reply.text("Second follow-up."),
    )
    async with WireClient(env=env) as client:
        await client.initialize()
        ready = await client.create_session(
            workspace, model="claude-vision", permissionMode="bypass"
        )
        sid = ready["sessionId"]
        main = asyncio.ensure_future(prompt(client, sid, "build it"))
        await client.wait_for("tool:execution:start", lambda p: p["sessionId"] == sid)
        steer = asyncio.ensure_future(
            client.call(
                "session/prompt",
                {
                    "sessionId": sid,
                    "input": [
                        {"type": "text", "text": "like this"},
                        {"type": "image", "path": "shot.png"},
                    ],
                    "delivery": "steer",
                },
            )
        )
        # Back to back: one with an image to read, one plain; they run in this order.
        first = asyncio.ensure_future(
            prompt(
                client,
                sid,
                [{"type": "text", "text": "one"}, {"type": "image", "path": "shot.png"}],
            )
        )
        second = asyncio.ensure_future(prompt(client, sid, "two"))
        results = await asyncio.wait_for(asyncio.gather(main, steer, first, second), 20)
    assert [r["stopReason"] for r in results] == ["end_turn"] * 4
    joined = scripted_llm.requests[1].body["messages"][-1]["content"]
    assert [b["type"] for b in joined] == ["tool_result", "text", "image"]
    assert joined[2] == expected_image("claude-vision")
    assert user_parts(scripted_llm.requests[2].body, "claude-vision")[0]["text"] == "one"
    assert user_parts(scripted_llm.requests[3].body, "claude-vision")[0]["text"] == "two"


async def test_an_empty_list_and_too_many_images_are_refused(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    image = {"type": "image", "data": PNG_B64, "mediaType": "image/png"}
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        for content, message in (([], "empty list"), ([image] * 21, "more than 20 images")):
            with pytest.raises(RpcFailure) as failure:
                await prompt(client, sid, content)
            assert failure.value.code == -32602
            assert message in failure.value.error["message"]
    assert not scripted_llm.requests


async def test_session_messages_shows_an_image_by_type_and_path_never_its_bytes(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    (workspace / "shot.png").write_bytes(PNG)
    scripted_llm.script(Reply.text("A grey button."))
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        answer = await prompt(
            client,
            sid,
            [{"type": "text", "text": "What is this?"}, {"type": "image", "path": "shot.png"}],
        )
        page = await client.call("session/messages", {"sessionId": sid})

    user = next(m for m in page["messages"] if m["id"] == answer["messageId"])
    assert user["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "mediaType": "image/png", "path": "shot.png"},
    ]
    assert PNG_B64 not in json.dumps(page)


async def test_a_malformed_block_with_a_big_payload_gets_a_small_error(
    env, scripted_llm: ScriptedLLM, workspace: Path
):
    big = "A" * 3_000_000  # an unknown block type: the whole block is the refused value
    async with WireClient(env=env) as client:
        sid = await session(client, workspace, "claude-vision")
        with pytest.raises(RpcFailure) as failure:
            await prompt(client, sid, [{"type": "picture", "data": big}])
        error = failure.value.error
        assert failure.value.code == -32602
        echoed = json.dumps(error.get("data"))
        assert big not in echoed and len(echoed) < 20_000, "the error does not echo megabytes"
        assert "3,0" in echoed, "the size of what was cut is told"
        scripted_llm.script(Reply.text("Still here."))
        assert (await prompt(client, sid, "Hi"))["stopReason"] == "end_turn"
