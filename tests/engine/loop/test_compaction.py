"""Compaction in process, with a fake provider: what is kept, the fallback, no loops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.core.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.core.stream import (
    ModelRequest,
    ProviderError,
    ResponseDone,
    ResponseFailed,
    StreamEvent,
)
from sema_rpc.engine.events import EventBus
from sema_rpc.engine.loop.compaction import (
    SUMMARY_HEADER,
    TRUNCATION_NOTICE,
    CompactionState,
    Compactor,
    compact_threshold,
    render_transcript,
)
from sema_rpc.engine.loop.control import INTERRUPT_MESSAGE, TurnControl
from sema_rpc.engine.loop.conversation import Conversation, LoopConfig, LoopHooks, LoopState
from sema_rpc.engine.loop.run_tools import ToolRunner
from sema_rpc.engine.loop.tokens import TokenCounter, TokenTracker
from sema_rpc.tools.base import ToolContext
from sema_rpc.tools.read import ReadTool
from tests.engine._bridge import RecordingBridge


class FakeProvider:
    name = "fake"

    def __init__(self, *answers: str | Message | ProviderError, input_tokens: int = 10):
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []
        self.input_tokens = input_tokens

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # The request's messages are the live history: keep a copy of what was sent.
        self.requests.append(request.replace(messages=list(request.messages)))
        answer = self.answers.pop(0)
        if isinstance(answer, ProviderError):
            yield ResponseFailed(answer)
            return
        message = (
            answer
            if isinstance(answer, Message)
            else Message(role="assistant", content=[TextBlock(text=answer)])
        )
        stop = "tool_use" if message.tool_uses() else "end_turn"
        yield ResponseDone(message, stop, Usage(input_tokens=self.input_tokens, output_tokens=5))

    async def aclose(self) -> None:
        pass


def make(
    provider: FakeProvider, context_length: int = 2000, **kw: Any
) -> tuple[Compactor, RecordingBridge]:
    bridge = RecordingBridge()
    tracker = TokenTracker(TokenCounter(None))  # chars / 2.5
    compactor = Compactor(
        provider=provider,  # type: ignore[arg-type]
        model="m",
        max_tokens=1024,
        context_length=context_length,
        tracker=tracker,
        bus=EventBus("s", bridge),
        control=TurnControl(),
        state=kw.pop("state", CompactionState()),
        threshold=0.75,
        **kw,
    )
    return compactor, bridge


def user(text: str) -> Message:
    return Message.user_text(text)


def assistant(text: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)])


def call(call_id: str, path: str) -> Message:
    return Message(
        role="assistant",
        content=[ToolUseBlock(id=call_id, name="Read", input={"file_path": path})],
    )


def result(call_id: str, text: str) -> Message:
    return Message(role="user", content=[ToolResultBlock(tool_use_id=call_id, content=text)])


def long_conversation() -> list[Message]:
    """~1,900 tokens (estimate) of old exchanges, then the latest input and a tool pair."""
    history: list[Message] = []
    for i in range(6):
        history += [
            user(f"old question {i} " + "q" * 300),
            assistant(f"old answer {i} " + "a" * 900),
        ]
    history += [user("Please fix the bug in b.py"), call("t1", "b.py"), result("t1", "x" * 200)]
    return history


def compact_events(bridge: RecordingBridge) -> list[Any]:
    return [e for e in bridge.events if e.event == "compact:exec"]


async def test_summary_keeps_the_latest_user_message_and_the_recent_tail():
    provider = FakeProvider("S" * 200)
    compactor, bridge = make(provider)
    history = long_conversation()
    latest, tail = history[-3], history[-2:]

    result_ = await compactor.maybe_compact(history)

    assert result_ is not None and result_.strategy == "summary" and result_.trigger == "auto"
    assert history[1:] == tail, "the tool call and its result are kept whole"
    head = history[0]
    assert head.role == "user"
    assert head.content[0].text == SUMMARY_HEADER + "S" * 200  # type: ignore[union-attr]
    assert head.content[1:] == latest.content
    (event,) = compact_events(bridge)
    assert event.token_before > 1500 and event.token_compact < event.token_before
    assert event.compact_rate == round(event.token_compact / event.token_before, 4)
    assert event.err_msg is None
    # The summariser saw the old conversation as a transcript, with the 9 sections asked.
    (request,) = provider.requests
    prompt = request.messages[0].text()
    assert "old question 0" in prompt and "Primary request" in prompt and "Next step" in prompt
    assert request.tools == [] and request.thinking_budget is None


async def test_below_the_threshold_nothing_happens():
    provider = FakeProvider()
    compactor, bridge = make(provider, context_length=200_000)
    history = long_conversation()
    before = list(history)
    assert await compactor.maybe_compact(history) is None
    assert history == before and bridge.events == [] and provider.requests == []


async def test_a_summary_that_does_not_shrink_falls_back_to_truncation_once():
    provider = FakeProvider("S" * 20_000)
    compactor, bridge = make(provider)
    history = long_conversation()
    latest = history[-3]

    result_ = await compactor.maybe_compact(history)

    assert result_ is not None and result_.strategy == "truncate"
    assert result_.err_msg and "did not make the context smaller" in result_.err_msg
    assert len(provider.requests) == 1, "the summary is not retried"
    assert history[0].content[0].text == TRUNCATION_NOTICE  # type: ignore[union-attr]
    assert history[0].content[1:] == latest.content
    assert result_.token_compact < result_.token_before
    assert len(compact_events(bridge)) == 1


async def test_a_failed_summary_call_falls_back_to_truncation():
    provider = FakeProvider(ProviderError("overloaded", "Overloaded"))
    compactor, bridge = make(provider)
    history = long_conversation()
    result_ = await compactor.compact(history, "manual")
    assert result_ is not None and result_.strategy == "truncate"
    assert "the summary call failed: Overloaded" in (result_.err_msg or "")
    assert compact_events(bridge)[0].trigger == "manual"


async def test_a_conversation_that_cannot_shrink_does_not_loop():
    # The latest input alone is over the threshold: nothing can bring it below.
    provider = FakeProvider("S" * 20_000)
    compactor, bridge = make(provider)
    history = [user("hi"), assistant("hello"), user("z" * 5000)]

    first = await compactor.maybe_compact(history)
    assert first is not None and first.strategy == "truncate"
    assert first.token_compact > compactor.limit
    # The next model calls are still over the threshold: no new compaction.
    history += [call("t1", "a.py"), result("t1", "r")]
    assert await compactor.maybe_compact(history) is None
    assert await compactor.maybe_compact(history) is None
    assert len(provider.requests) == 1 and len(compact_events(bridge)) == 1

    # Once the prompt measures below the threshold, compaction is armed again.
    history[:] = [user("small")]
    assert await compactor.maybe_compact(history) is None
    assert compactor.state.armed


async def test_nothing_to_compact():
    provider = FakeProvider()
    compactor, bridge = make(provider)
    history = [user("only this " * 10)]
    result_ = await compactor.compact(history, "manual")
    assert result_ is not None and result_.strategy == "none" and not result_.changed
    assert result_.err_msg == "nothing to compact"
    assert provider.requests == []
    assert compact_events(bridge)[0].strategy == "none"


async def test_interrupt_during_the_summary_leaves_the_history_alone():
    provider = FakeProvider("S")
    compactor, bridge = make(provider)
    compactor.control.interrupt()
    history = long_conversation()
    before = list(history)
    assert await compactor.compact(history, "manual") is None
    assert history == before and compact_events(bridge) == []


async def test_instructions_reach_the_summary_prompt_and_interrupt_notes_are_not_user_input():
    provider = FakeProvider("short summary")
    compacted = []
    compactor, _ = make(provider, on_compacted=compacted.append)
    history = long_conversation()
    history[-1] = Message(
        role="user", content=[*history[-1].content, TextBlock(text=INTERRUPT_MESSAGE)]
    )
    await compactor.compact(history, "manual", instructions="Keep the file names")
    assert "Keep the file names" in provider.requests[0].messages[0].text()
    # The latest *real* input is carried, not the interrupt note.
    assert history[0].content[1].text == "Please fix the bug in b.py"  # type: ignore[union-attr]
    assert len(compacted) == 1 and compacted[0].messages == history


def test_transcript_is_bounded_and_keeps_the_first_request():
    messages = [user("the original request")] + [
        assistant("x" * 1000) if i % 2 else result("t", "y" * 5000) for i in range(50)
    ]
    text = render_transcript(messages, 5000)
    assert len(text) < 6000
    assert text.startswith("User: the original request")
    assert "messages omitted" in text
    assert "characters cut" in text


@pytest.mark.parametrize(("raw", "value"), [("", 0.75), ("0.5", 0.5), ("2", 0.75), ("x", 0.75)])
def test_threshold_setting(monkeypatch, raw, value):
    monkeypatch.setenv("SEMA_COMPACT_THRESHOLD", raw)
    assert compact_threshold() == value


# ---- a turn whose tool batch is larger than the window ------------------------------------


def reading_turn(tmp_path: Path, provider: FakeProvider, context_length: int) -> Conversation:
    """A main-agent loop with the real Read tool over eight 2,000-line files."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for i in range(8):
        (workspace / f"f{i}.txt").write_text("".join(f"line {i} {n}\n" for n in range(1, 2001)))
    bridge, control = RecordingBridge(), TurnControl()
    bus = EventBus("s", bridge)
    tracker = TokenTracker(TokenCounter(None))
    runner = ToolRunner(
        tools={"Read": ReadTool()},
        context=ToolContext(working_dir=workspace, session_id="s"),
        policy=PermissionPolicy("default", RuleStore(workspace), client_can_answer=False),
        bus=bus,
        control=control,
    )
    compactor = Compactor(
        provider=provider,  # type: ignore[arg-type]
        model="m",
        max_tokens=1024,
        context_length=context_length,
        tracker=tracker,
        bus=bus,
        control=control,
        threshold=0.75,
    )
    return Conversation(
        "main",
        LoopHooks(
            provider=provider,  # type: ignore[arg-type]
            bus=bus,
            runner=runner,
            control=control,
            tokens=tracker,
            compactor=compactor,
        ),
        LoopState(
            history=[user("an earlier question"), assistant("an earlier answer " + "a" * 20_000)],
            config=LoopConfig(
                model="m",
                system_prompt="You are a test.",
                tool_specs=[],
                max_tokens=1024,
                context_length=context_length,
            ),
        ),
    )


def eight_reads() -> Message:
    return Message(
        role="assistant",
        content=[
            ToolUseBlock(id=f"r{i}", name="Read", input={"file_path": f"f{i}.txt"})
            for i in range(8)
        ],
    )


async def test_a_batch_of_eight_big_reads_survives_compaction(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "root"))
    provider = FakeProvider(
        eight_reads(), "SUMMARY of the earlier talk.", "Read them all.", input_tokens=9000
    )
    conversation = reading_turn(tmp_path, provider, context_length=20_000)

    outcome = await conversation.query([TextBlock(text="read the eight files")])

    assert outcome.stop_reason == "end_turn"
    assert len(provider.requests) == 3
    assert provider.requests[1].tools == [] and provider.requests[1].system.startswith(
        "You summarise"
    )
    answering = provider.requests[2].messages
    assert [m.role for m in answering] == ["user", "assistant", "user"]
    assert answering[0].content[0].text.startswith(SUMMARY_HEADER)  # type: ignore[union-attr]
    results = answering[2].content
    assert [r.tool_use_id for r in results] == [f"r{i}" for i in range(8)]  # type: ignore[union-attr]
    counter = conversation.hooks.tokens.counter
    for i, block in enumerate(results):
        assert isinstance(block, ToolResultBlock) and not block.is_error
        assert block.content.startswith(f"     1\tline {i} 1\n")
        assert block.content.endswith(f"line {i} 2000")
        assert "cut here" in block.content
        assert counter.count_text(block.content) <= 20_000 // 16 + 100  # a fair share + note
    # What the model saw fits the window, below the threshold.
    assert conversation.hooks.tokens.count(answering) < 15_000


async def test_a_turn_never_compacts_twice_without_a_model_response(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "root"))
    too_long = ProviderError("context_length_exceeded", "prompt is too long", status=400)
    provider = FakeProvider(eight_reads(), "SUMMARY.", too_long, "never asked", input_tokens=9000)
    conversation = reading_turn(tmp_path, provider, context_length=20_000)

    outcome = await conversation.query([TextBlock(text="read the eight files")])

    assert outcome.stop_reason == "error" and outcome.error is not None
    assert outcome.error.code == "context_length_exceeded"
    assert "even after compaction" in outcome.error.message
    assert len(provider.requests) == 3 and provider.answers == ["never asked"]
