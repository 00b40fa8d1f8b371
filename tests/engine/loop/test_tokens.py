"""Token accounting: provider usage first, tiktoken for the rest, chars/2.5 without it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sema_rpc.core.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from sema_rpc.engine.loop import tokens
from sema_rpc.engine.loop.tokens import (
    MESSAGE_OVERHEAD,
    TokenCounter,
    TokenTracker,
    counter_for_model,
    encoding_for_model,
    tiktoken_cache_file,
)
from tests.support.shared_data import tiktoken_dir

TIKTOKEN = tiktoken_dir()
assert (TIKTOKEN / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4").is_file(), (
    f"shared tiktoken cache not found at {TIKTOKEN} (set SEMA_SHARED_DIR)"
)


@pytest.fixture
def real_cache(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(TIKTOKEN))
    monkeypatch.delenv("SEMA_TIKTOKEN", raising=False)
    return TIKTOKEN


@pytest.fixture
def no_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    empty = tmp_path / "no-tiktoken"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    monkeypatch.delenv("SEMA_TIKTOKEN", raising=False)
    return empty


def loaded(model: str) -> TokenCounter:
    counter = counter_for_model(model)
    counter.load()
    return counter


@pytest.mark.parametrize(
    ("model", "encoding", "text", "expected"),
    [
        ("claude-sonnet-4-5", "cl100k_base", "hello world", 2),
        ("gpt-4", "cl100k_base", "tiktoken is great!", 6),
        ("gpt-4o", "o200k_base", "hello world", 2),
        ("openai/gpt-4.1", "o200k_base", "tiktoken is great!", 6),
    ],
)
def test_real_encodings_from_the_shared_cache(real_cache, model, encoding, text, expected):
    counter = loaded(model)
    assert encoding_for_model(model) == encoding
    assert counter.name == encoding
    assert counter.count_text(text) == expected


def test_message_count_covers_every_block(real_cache):
    counter = loaded("claude-test")
    enc_count = counter.count_text
    message = Message(
        role="assistant",
        content=[
            TextBlock(text="Reading the file."),
            ToolUseBlock(id="t1", name="Read", input={"file_path": "a.py"}),
        ],
    )
    expected = (
        MESSAGE_OVERHEAD
        + enc_count("Reading the file.")
        + enc_count("Read")
        + enc_count('{"file_path": "a.py"}')
    )
    assert counter.count_message(message) == expected
    # Special-token text is ordinary text here: never an error.
    assert counter.count_text("<|endoftext|>") > 1


def test_without_encodings_the_estimate_is_chars_over_2_5(no_cache):
    started = time.perf_counter()
    counter = loaded("claude-test")
    assert time.perf_counter() - started < 0.5, "no download attempt, no wait"
    assert counter.name == "estimate"
    assert counter.count_text("x" * 25) == 10
    result = Message(role="user", content=[ToolResultBlock(tool_use_id="t", content="y" * 250)])
    assert counter.count_message(result) == 100 + MESSAGE_OVERHEAD


def test_a_corrupt_cache_file_is_not_used_and_not_replaced(no_cache):
    path = tiktoken_cache_file("cl100k_base")
    assert path is not None and path.parent == no_cache
    path.write_bytes(b"garbage, not a BPE file")
    counter = loaded("claude-test")
    assert counter.name == "estimate"
    assert path.read_bytes() == b"garbage, not a BPE file", "tiktoken must not touch it"


@pytest.mark.parametrize("setting", ["off", "0", "false"])
def test_sema_tiktoken_off_forces_the_estimate(real_cache, monkeypatch, setting):
    monkeypatch.setenv("SEMA_TIKTOKEN", setting)
    counter = loaded("gpt-4o")
    assert counter.name == "estimate"
    assert counter.count_text("hello world") == 4  # 11 chars / 2.5


def test_empty_cache_dir_means_no_cache_and_no_download(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tiktoken_cache_file("cl100k_base") is None
    assert loaded("claude-test").name == "estimate"


class CountingCounter(TokenCounter):
    """The estimate, recording which messages it was asked to count."""

    def __init__(self) -> None:
        super().__init__(None)
        self.counted: list[Message] = []

    def count_message(self, message: Message) -> int:
        self.counted.append(message)
        return super().count_message(message)


def user(text: str) -> Message:
    return Message.user_text(text)


def assistant(text: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)])


def test_tracker_uses_the_provider_figure_and_counts_only_what_came_after():
    counter = CountingCounter()
    tracker = TokenTracker(counter)
    tracker.set_overhead("system prompt " * 10)
    history = [user("a" * 100), assistant("b" * 100)] * 500
    history.append(user("question"))
    reply = assistant("answer")
    tracker.record_response(history, reply, prompt_tokens=50_000, output_tokens=20)
    history.append(reply)
    assert counter.counted == []

    tool_results = user("r" * 250)
    history.append(tool_results)
    assert tracker.count(history) == 50_020 + 100 + MESSAGE_OVERHEAD
    assert counter.counted == [tool_results], "only the message after the provider figure"

    # A second count costs nothing new; a merged last message is recounted alone.
    assert tracker.count(history) == 50_020 + 104
    assert len(counter.counted) == 1
    history[-1] = Message(role="user", content=[*tool_results.content, TextBlock(text="z" * 25)])
    assert tracker.count(history) == 50_020 + 100 + 10 + MESSAGE_OVERHEAD
    assert len(counter.counted) == 2


def test_tracker_after_the_history_is_replaced_counts_locally():
    tracker = TokenTracker(TokenCounter(None))
    tracker.set_overhead("s" * 250)  # 100 tokens
    history = [user("a" * 25), assistant("b" * 25)]
    reply = assistant("c")
    tracker.record_response(history, reply, 9_000, 10)
    history.append(reply)
    assert tracker.count(history) == 9_010
    history[:] = [user("summary " * 10)]  # compaction: the provider figure no longer applies
    assert tracker.count(history) == 100 + 32 + MESSAGE_OVERHEAD
    assert tracker.mark_for(reply) == (3, 9_010)
    tracker.reset()
    assert tracker.count([]) == 100


def test_overhead_is_counted_once_per_content():
    counter = CountingCounter()
    tracker = TokenTracker(counter)
    calls = []
    original = counter.count_text

    def spy(text: str) -> int:
        calls.append(len(text))
        return original(text)

    counter.count_text = spy  # type: ignore[method-assign]
    tracker.set_overhead("x" * 1000)
    tracker.set_overhead("x" * 1000)
    assert calls == [1000, 0]  # the system prompt, and no tools
    assert tracker.overhead == 400


async def test_count_async_loads_the_encoding_and_offloads_a_large_backlog(no_cache):
    tokens._encodings.clear()
    tracker = TokenTracker(counter_for_model("claude-test"))
    history = [user("x" * 25) if i % 2 == 0 else assistant("y" * 25) for i in range(200)]
    assert await tracker.count_async(history) == 200 * (10 + MESSAGE_OVERHEAD)
    assert tracker.counter.ready


def test_running_sum_without_provider_figures_matches_a_fresh_count() -> None:
    """A provider that never reports usage: each count adds only the new messages, and
    every kind of history change (append, merge into the last, compaction) stays exact."""

    def msg(role: str, text: str) -> Message:
        return Message(role=role, content=[TextBlock(text=text)])

    tracker = TokenTracker()
    history = [
        msg("user" if i % 2 == 0 else "assistant", f"message {i} " * (i % 7 + 1)) for i in range(50)
    ]

    def fresh() -> int:
        return TokenTracker().count(history)

    assert tracker.count(history) == fresh()
    history.append(msg("user", "one more"))
    assert tracker.count(history) == fresh()
    history[-1] = msg("user", "one more, merged with another input")
    assert tracker.count(history) == fresh()
    history[:] = [msg("user", "summary"), *history[-3:]]  # compaction replaces the list
    assert tracker.count(history) == fresh()
    history.append(msg("assistant", "after"))
    assert tracker.count(history) == fresh()


def test_an_interrupted_requests_estimate_counts_each_block_as_its_compact_json() -> None:
    """What an interrupted response is charged for reading: the request's text and each
    block as the compact JSON pydantic writes for it (an image as 6,000 characters)."""
    from sema_rpc.core.messages import ImageBlock
    from sema_rpc.core.stream import ModelRequest
    from sema_rpc.engine.loop.tokens import CHARS_PER_TOKEN
    from sema_rpc.engine.loop.usage import interrupted_usage

    blocks = [
        TextBlock(text='résumé\u2028 “quoted” and "escaped"'),
        ToolUseBlock(
            id="t1", name="Read", input={"file_path": "é/x.py", "limit": 1.5, "l": [1, None]}
        ),
        ToolResultBlock(tool_use_id="t1", content="line\n" * 40, is_error=False),
    ]
    image = ImageBlock.model_validate(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}
    )
    request = ModelRequest(
        model="m", system="sys" * 10, messages=[Message(role="user", content=[*blocks, image])]
    )
    chars = 30 + sum(len(b.model_dump_json()) for b in blocks) + 6000
    usage = interrupted_usage(request, streamed_chars=250)
    assert usage.input_tokens == int(chars / CHARS_PER_TOKEN)
    assert usage.output_tokens == int(250 / CHARS_PER_TOKEN)
