"""The agent loop (Conversation.query) run in-process: scripted model, real tool runner,
real tools on a temp workspace. Each test takes milliseconds."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sema_rpc.core.messages import Message, TextBlock, ToolResultBlock, Usage
from sema_rpc.engine.loop.control import CANCEL_MESSAGE, INTERRUPT_MESSAGE
from sema_rpc.protocol import (
    CompactExecParams,
    MessageCompleteParams,
    SessionErrorParams,
    SessionInterruptedParams,
    TextChunkParams,
)
from sema_rpc.providers.scripted import ScriptedReply
from tests.engine.loop.support import call, manager


def _results(message: Message) -> list[ToolResultBlock]:
    return [b for b in message.content if isinstance(b, ToolResultBlock)]


async def test_end_turn(ws: Path) -> None:
    chat, provider, bridge, _ = manager(ws, [ScriptedReply(text="Hello there.")])
    outcome = await chat.run_turn("hi")
    assert outcome.stop_reason == "end_turn"
    assert [(m.role, m.text()) for m in chat.get_messages()] == [
        ("user", "hi"),
        ("assistant", "Hello there."),
    ]
    chunks = "".join(e.delta for e in bridge.events if isinstance(e, TextChunkParams))
    assert chunks == "Hello there."
    assert len(provider.requests) == 1


async def test_real_tools_run_serially_in_the_models_order(ws: Path) -> None:
    """Write then Read of the same new file in one batch: serial, so Read sees it."""
    (ws / "old.txt").write_text("old\n")
    chat, provider, _, _ = manager(
        ws,
        [
            ScriptedReply.tool_calls(
                call("w", "Write", file_path="new.txt", content="fresh\n"),
                call("r", "Read", file_path="new.txt"),
                call("g", "Glob", pattern="*.txt"),
            ),
            ScriptedReply(text="Done."),
        ],
    )
    assert (await chat.run_turn("go")).stop_reason == "end_turn"
    assert (ws / "new.txt").read_text() == "fresh\n"
    results = _results(provider.requests[1].messages[-1])
    assert [r.tool_use_id for r in results] == ["w", "r", "g"]
    assert not any(r.is_error for r in results)
    assert "fresh" in results[1].content
    assert "new.txt" in results[2].content and "old.txt" in results[2].content


async def test_read_only_batch_runs_concurrently_results_in_model_order(ws: Path) -> None:
    chat, provider, _, log = manager(
        ws,
        [
            ScriptedReply.tool_calls(
                call("a", "Look", label="a", delay=0.02),
                call("b", "Look", label="b"),
                call("c", "Read", file_path="missing.txt"),
            ),
            ScriptedReply(text="ok"),
        ],
    )
    await chat.run_turn("look")
    assert log[:2] == ["start a", "start b"]  # b started before a finished
    assert log.index("end b") < log.index("end a")
    results = _results(provider.requests[1].messages[-1])
    assert [r.tool_use_id for r in results] == ["a", "b", "c"]  # the model's order
    assert [r.is_error for r in results] == [False, False, True]  # a failure is a result


async def test_batch_with_a_write_runs_serially(ws: Path) -> None:
    chat, _, _, log = manager(
        ws,
        [
            ScriptedReply.tool_calls(
                call("a", "Look", label="a", delay=0.02),
                call("b", "Poke", label="b"),
                call("c", "Look", label="c"),
            ),
            ScriptedReply(text="ok"),
        ],
    )
    await chat.run_turn("go")
    assert log == ["start a", "end a", "start b", "end b", "start c", "end c"]


async def test_unknown_tool_and_invalid_input_are_error_results(ws: Path) -> None:
    chat, provider, _, _ = manager(
        ws,
        [
            ScriptedReply.tool_calls(call("x", "Nope"), call("y", "Read", file_path=3)),
            ScriptedReply(text="sorry"),
        ],
    )
    assert (await chat.run_turn("go")).stop_reason == "end_turn"
    x, y = _results(provider.requests[1].messages[-1])
    assert x.is_error and "No such tool: Nope" in x.content
    assert y.is_error and "Invalid input for Read" in y.content


async def test_interrupt_while_streaming_is_checkpoint_1(ws: Path) -> None:
    hold = asyncio.Event()
    chat, _, bridge, _ = manager(ws, [ScriptedReply(text="thinking about it", hold=hold)])
    turn = asyncio.create_task(chat.run_turn("go"))
    while not any(isinstance(e, TextChunkParams) for e in bridge.events):
        await asyncio.sleep(0)
    chat.interrupt()
    outcome = await turn
    assert outcome.stop_reason == "interrupted"
    (event,) = [e for e in bridge.events if isinstance(e, SessionInterruptedParams)]
    assert event.checkpoint == 1
    assert [m.role for m in chat.get_messages()] == ["user"]  # nothing half-streamed joins
    assert chat.get_messages()[0].content[-1] == TextBlock(text=INTERRUPT_MESSAGE)


async def test_interrupt_after_the_response_answers_its_calls(ws: Path) -> None:
    """Checkpoint 1 with calls: the response is complete when the interrupt lands (the
    client interrupts as it reads message:complete); its calls never run and each gets
    a cancel result, so the history stays valid for the next turn."""
    reply = ScriptedReply.tool_calls(call("a", "Poke", label="a"), text="Poking")
    chat, _, bridge, log = manager(ws, [reply, ScriptedReply(text="next")])
    bridge.hook = lambda e: isinstance(e, MessageCompleteParams) and chat.interrupt()
    outcome = await chat.run_turn("go")
    assert outcome.stop_reason == "interrupted" and log == []
    (event,) = [e for e in bridge.events if isinstance(e, SessionInterruptedParams)]
    assert event.checkpoint == 1
    roles = [m.role for m in chat.get_messages()]
    assert roles == ["user", "assistant", "user"]
    (result,) = _results(chat.get_messages()[-1])
    assert (result.tool_use_id, result.content, result.is_error) == ("a", CANCEL_MESSAGE, True)
    assert chat.get_messages()[-1].content[-1] == TextBlock(text=INTERRUPT_MESSAGE)


async def test_interrupt_as_the_batch_ends_is_checkpoint_2(ws: Path) -> None:
    chat, provider, bridge, _ = manager(
        ws, [ScriptedReply.tool_calls(call("a", "Poke", label="a", interrupt=True))]
    )
    outcome = await chat.run_turn("go")
    assert outcome.stop_reason == "interrupted"
    (event,) = [e for e in bridge.events if isinstance(e, SessionInterruptedParams)]
    assert event.checkpoint == 2
    (result,) = _results(chat.get_messages()[-1])
    assert result.content == "done a" and not result.is_error  # the work was done
    assert len(provider.requests) == 1  # no model call after the interrupt


async def test_interrupt_between_calls_is_checkpoint_3(ws: Path) -> None:
    chat, _, bridge, log = manager(
        ws,
        [
            ScriptedReply.tool_calls(
                call("a", "Poke", label="a", interrupt=True),
                call("b", "Write", file_path="x.txt", content="x"),
            )
        ],
    )
    assert (await chat.run_turn("go")).stop_reason == "interrupted"
    (event,) = [e for e in bridge.events if isinstance(e, SessionInterruptedParams)]
    assert event.checkpoint == 3
    a, b = _results(chat.get_messages()[-1])
    assert (a.is_error, b.content, b.is_error) == (False, CANCEL_MESSAGE, True)
    assert not (ws / "x.txt").exists() and log == ["start a", "end a"]


async def test_interrupt_during_a_tool_is_checkpoint_4(ws: Path) -> None:
    chat, _, bridge, log = manager(
        ws, [ScriptedReply.tool_calls(call("a", "Poke", label="a", block=True))]
    )
    turn = asyncio.create_task(chat.run_turn("go"))
    while log != ["start a"]:
        await asyncio.sleep(0)
    chat.interrupt()
    assert (await turn).stop_reason == "interrupted"
    (event,) = [e for e in bridge.events if isinstance(e, SessionInterruptedParams)]
    assert event.checkpoint == 4
    (result,) = _results(chat.get_messages()[-1])
    assert result.content == CANCEL_MESSAGE and result.is_error


async def test_steer_joins_after_the_whole_batch(ws: Path) -> None:
    chat, provider, _, _ = manager(
        ws,
        [
            ScriptedReply.tool_calls(
                call("a", "Poke", label="a", steer="also check b"),
                call("b", "Poke", label="b"),
            ),
            ScriptedReply(text="ok"),
        ],
    )
    assert (await chat.run_turn("go")).stop_reason == "end_turn"
    sent = provider.requests[1].messages[-1]
    kinds = [b.type for b in sent.content]
    assert kinds == ["tool_result", "tool_result", "text"]  # never between a call and its result
    assert sent.content[-1] == TextBlock(text="also check b")


async def test_max_turns(ws: Path) -> None:
    replies = [ScriptedReply.tool_calls(call(f"c{i}", "Look", label=str(i))) for i in range(5)]
    chat, provider, _, _ = manager(ws, replies, max_turns=3)
    assert (await chat.run_turn("loop")).stop_reason == "max_turns"
    assert len(provider.requests) == 3
    assert chat.get_messages()[-1].role == "user"  # the last batch's results are kept


async def test_provider_failure_is_a_value(ws: Path) -> None:
    chat, _, bridge, _ = manager(
        ws, [ScriptedReply.failure("overloaded", "try later", partial_text="Half")]
    )
    outcome = await chat.run_turn("go")
    assert outcome.stop_reason == "error"
    assert outcome.error is not None and outcome.error.code == "overloaded"
    assert outcome.error.message == "try later"
    (event,) = [e for e in bridge.events if isinstance(e, SessionErrorParams)]
    assert event.type == "api_error"
    assert [m.role for m in chat.get_messages()] == ["user"]  # nothing partial is stored


async def test_exhausted_script_ends_the_turn_as_an_error(ws: Path) -> None:
    chat, _, _, _ = manager(ws, [])
    outcome = await chat.run_turn("go")
    assert outcome.stop_reason == "error" and outcome.error is not None
    assert "no reply left" in outcome.error.message


async def test_compaction_triggers_before_the_model_call(ws: Path) -> None:
    big = "word " * 1500  # 3000 tokens at chars/2.5; the tool definitions are ~5000 more
    chat, provider, bridge, _ = manager(
        ws,
        [ScriptedReply(text="SUMMARY: the user talked a lot."), ScriptedReply(text="Fine.")],
        context_length=10_000,
        threshold=0.75,
    )
    chat.add_user_text(big)
    chat.add_message(Message(role="assistant", content=[TextBlock(text=big)]))
    before = await chat.token_check()
    assert before.tokens > before.limit == 7500
    assert before.source == "estimate"  # no provider figure yet, tokenizer off: chars/2.5
    assert not before.should_compact  # fewer than three messages: nothing to summarise
    outcome = await chat.run_turn("and now?")
    assert outcome.stop_reason == "end_turn"
    assert len(provider.requests) == 2  # the summary call, then the turn's call
    assert any(isinstance(e, CompactExecParams) for e in bridge.events)
    sent = provider.requests[1].messages
    assert "SUMMARY: the user talked a lot." in sent[0].text()
    assert big not in "".join(m.text() for m in sent)
    assert chat.get_messages()[-1].text() == "Fine."
    after = await chat.token_check()
    assert after.tokens < after.limit and not after.should_compact


async def test_usage_from_the_response_drives_the_token_figure(ws: Path) -> None:
    chat, _, _, _ = manager(
        ws,
        [ScriptedReply(text="ok", usage=Usage(input_tokens=1200, output_tokens=30))],
    )
    await chat.run_turn("hi")
    check = await chat.token_check()
    assert (check.source, check.tokens) == ("provider", 1230)
