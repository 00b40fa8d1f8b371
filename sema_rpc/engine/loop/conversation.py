"""Conversation: the agent loop.

    user message → stream the model → (tool calls? run the batch, feed results back, repeat)
                                     → (no tool call: the turn ends)

The loop knows nothing of JSON-RPC. It emits typed events on the session's EventBus and
returns a `TurnOutcome`. Failures at its boundary are values: a provider failure ends
the turn with stop reason `error` (and a `session:error` event), a tool failure is an
error tool result. An exception escaping `query()` is a bug.

Interrupt checkpoints (see control.py): 1 after the model response (or during its
stream), 2 after the tool batch, 3 before each tool and 4 during a tool (in run_tools).

The history is the *curated* one (what the model sees); `on_message` hands every
completed message to the session's persistence (the *comprehensive* history).
Before each model call the main agent may compact the history (compaction.py); a
"prompt is too long" answer from the provider triggers a compaction and a retry. A turn
never compacts twice without a model response in between: a second "too long" after a
compaction ends the turn with a `context_length_exceeded` error. Each batch's tool
results are cut to their share of the context window before they join the history
(budget.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from collections.abc import Set as AbstractSet
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from sema_rpc.core.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    new_message_id,
)
from sema_rpc.core.stream import (
    ModelRequest,
    Provider,
    ProviderError,
    ResponseDone,
    ResponseFailed,
    TextDelta,
    ThinkingDelta,
    ToolSpec,
)
from sema_rpc.engine.events import EventBus, delta_events
from sema_rpc.engine.loop.budget import batch_budgets, cap_results
from sema_rpc.engine.loop.compaction import CompactionResult, Compactor
from sema_rpc.engine.loop.control import CANCEL_MESSAGE, INTERRUPT_MESSAGE, TurnControl
from sema_rpc.engine.loop.run_tools import ToolRunner
from sema_rpc.engine.loop.tokens import TokenTracker
from sema_rpc.engine.store.curated import append_curated
from sema_rpc.plain_record import FrozenRecord, Record
from sema_rpc.protocol import (
    ConversationUsageParams,
    MessageCompleteParams,
    SessionErrorDetail,
    SessionErrorParams,
    SessionInterruptedParams,
    StopReasonWire,
    TextChunkParams,
    ThinkingChunkParams,
    TokenUsage,
    ToolCallSummary,
    UsageTotals,
)
from sema_rpc.tools.base import RebuildContext, Tool

if TYPE_CHECKING:
    from sema_rpc.engine.loop.continuation import Continuation


async def _no_steering() -> list[Message]:
    return []


async def _nothing_to_wait_for() -> None:
    pass


def _ignore_message(_m: Message) -> None:
    pass


# Plain classes rather than dataclasses: every session loads this module, and a dataclass
# costs its creation. The frozen ones are copied with changes by their `replace`.


class TurnOutcome(Record):
    _fields = ("stop_reason", "error")

    stop_reason: StopReasonWire
    error: SessionErrorDetail | None

    def __init__(
        self, stop_reason: StopReasonWire, error: SessionErrorDetail | None = None
    ) -> None:
        self.stop_reason = stop_reason
        self.error = error


class ContextRebuild(Record):
    _fields = ("system_prompt", "tool_specs", "tools", "plan_mode", "restart_with")

    system_prompt: str
    tool_specs: list[ToolSpec]
    tools: dict[str, Tool]
    plan_mode: bool
    restart_with: list[ContentBlock] | None
    """clearContextAndStart: the history restarts from this user message."""

    def __init__(
        self,
        system_prompt: str,
        tool_specs: list[ToolSpec],
        tools: dict[str, Tool],
        plan_mode: bool,
        restart_with: list[ContentBlock] | None = None,
    ) -> None:
        self.system_prompt = system_prompt
        self.tool_specs = tool_specs
        self.tools = tools
        self.plan_mode = plan_mode
        self.restart_with = restart_with


class LoopConfig(FrozenRecord):
    """What the loop's next model request asks for. Replaced whole: a context rebuild
    (system prompt, tools) or a model switch makes a new one."""

    _fields = (
        "model",
        "system_prompt",
        "tool_specs",
        "max_tokens",
        "context_length",
        "thinking_budget",
        "max_turns",
        "emits_usage",
        "compacts",
    )

    model: str
    system_prompt: str
    tool_specs: list[ToolSpec]
    max_tokens: int
    context_length: int
    thinking_budget: int | None
    max_turns: int
    emits_usage: bool
    """Only the main agent reports `conversation:usage`."""
    compacts: bool
    """Only the main agent compacts its history (and needs a `compactor` to do so)."""

    def __init__(
        self,
        model: str,
        system_prompt: str,
        tool_specs: list[ToolSpec],
        max_tokens: int,
        context_length: int,
        thinking_budget: int | None = None,
        max_turns: int = 100,
        emits_usage: bool = True,
        compacts: bool = True,
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "model", model)
        set_field(self, "system_prompt", system_prompt)
        set_field(self, "tool_specs", tool_specs)
        set_field(self, "max_tokens", max_tokens)
        set_field(self, "context_length", context_length)
        set_field(self, "thinking_budget", thinking_budget)
        set_field(self, "max_turns", max_turns)
        set_field(self, "emits_usage", emits_usage)
        set_field(self, "compacts", compacts)


class LoopHooks(FrozenRecord):
    """The loop's collaborators and hooks: what it calls, never what it changes. Frozen;
    a model switch mid-turn gives the loop new hooks (`Conversation.switch_model`)."""

    _fields = (
        "provider",
        "bus",
        "runner",
        "control",
        "tokens",
        "compactor",
        "on_message",
        "persisted",
        "on_rebuild",
        "totals",
        "take_steering",
        "continuation",
    )

    provider: Provider
    bus: EventBus
    runner: ToolRunner
    control: TurnControl
    tokens: TokenTracker
    """The prompt's size: provider usage first, local counts for the rest (tokens.py)."""
    compactor: Compactor | None
    on_message: Callable[[Message], None]
    """Called once for each message as it completes (persistence hooks in here).
    Contract: does not raise (a failed write is the store's to log and retry)."""
    persisted: Callable[[], Awaitable[None]]
    """Resolves once every message handed to `on_message` is stored. Awaited before each
    model request and each tool batch, so a crash loses at most the message in flight.
    Contract: does not raise."""
    on_rebuild: Callable[[RebuildContext], ContextRebuild] | None
    """Applies a tool's RebuildContext result (see `_rebuild`). Contract: does not raise."""
    totals: Callable[[], tuple[UsageTotals, UsageTotals]] | None
    """The turn's and the session's running token and cost totals, for
    `conversation:usage` (None: the event carries only the context snapshot)."""
    take_steering: Callable[[], Awaitable[list[Message]]]
    """Inputs sent with `delivery: steer` while this turn runs (prepared as user messages,
    kind `prompt`, each with its id); they join it after a batch. Contract: does not raise
    (an exception would escape the turn as a bug, not end it as a value)."""
    continuation: Callable[[Message, TurnControl], Awaitable[Continuation | None]] | None
    """The continuation check (continuation.py), when the session has it on: asked about
    a reply without a tool call; a Continuation continues the turn once with its nudge.
    Contract: does not raise."""

    def __init__(
        self,
        provider: Provider,
        bus: EventBus,
        runner: ToolRunner,
        control: TurnControl,
        tokens: TokenTracker | None = None,
        compactor: Compactor | None = None,
        on_message: Callable[[Message], None] = _ignore_message,
        persisted: Callable[[], Awaitable[None]] = _nothing_to_wait_for,
        on_rebuild: Callable[[RebuildContext], ContextRebuild] | None = None,
        totals: Callable[[], tuple[UsageTotals, UsageTotals]] | None = None,
        take_steering: Callable[[], Awaitable[list[Message]]] = _no_steering,
        continuation: Callable[[Message, TurnControl], Awaitable[Continuation | None]]
        | None = None,
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "provider", provider)
        set_field(self, "bus", bus)
        set_field(self, "runner", runner)
        set_field(self, "control", control)
        set_field(self, "tokens", TokenTracker() if tokens is None else tokens)
        set_field(self, "compactor", compactor)
        set_field(self, "on_message", on_message)
        set_field(self, "persisted", persisted)
        set_field(self, "on_rebuild", on_rebuild)
        set_field(self, "totals", totals)
        set_field(self, "take_steering", take_steering)
        set_field(self, "continuation", continuation)


class LoopState(Record):
    """What the loop changes as it runs: the curated history, the request it makes next
    and the last context figure."""

    _fields = ("history", "config", "last_usage")

    history: list[Message]
    config: LoopConfig
    last_usage: TokenUsage

    def __init__(
        self, history: list[Message], config: LoopConfig, last_usage: TokenUsage | None = None
    ) -> None:
        self.history = history
        self.config = config
        self.last_usage = TokenUsage() if last_usage is None else last_usage


class Conversation:
    """One agent's loop: its hooks (frozen) apart from its state (mutable)."""

    def __init__(self, agent_id: str, hooks: LoopHooks, state: LoopState) -> None:
        self.agent_id = agent_id
        self.hooks = hooks
        self.state = state

    def switch_model(
        self, provider: Provider, compactor: Compactor | None, **settings: Any
    ) -> None:
        """A model switch: the next model call (and compaction) use the new model;
        `settings` are the new model's `LoopConfig` fields."""
        self.hooks = self.hooks.replace(provider=provider, compactor=compactor)
        self.state.config = self.state.config.replace(**settings)

    async def query(
        self, user_content: list[ContentBlock], message_id: str | None = None
    ) -> TurnOutcome:
        """Run one turn for a prompt's input; it joins the history as a `prompt` message
        with id `message_id` (a fresh one when None)."""
        self.hooks.tokens.set_overhead(
            self.state.config.system_prompt, self.state.config.tool_specs
        )
        self._append(
            Message(
                role="user", content=user_content, id=message_id or new_message_id(), kind="prompt"
            )
        )
        # No two compactions without a model response in between: a compaction keeps the
        # batch the model waits for, so a response after it is progress; without one, a
        # second compaction could only shrink the same thing again (a loop).
        compacted = False
        continued = False  # the continuation check continues a turn at most once
        for _ in range(self.state.config.max_turns):
            if self._compacting and not compacted:
                assert self.hooks.compactor is not None
                compacted = self._compacted(
                    await self.hooks.compactor.maybe_compact(self.state.history)
                )
            with self.hooks.control.cancellable():  # a disk that hangs must not hold an interrupt
                await self.hooks.persisted()
            streamed = await self.call_model()
            if isinstance(streamed, ResponseFailed):
                if (
                    streamed.error.kind == "context_length_exceeded"
                    and self._compacting
                    and not self.hooks.control.interrupted
                ):
                    if compacted:
                        return self._fail(self._does_not_fit(streamed.error))
                    assert self.hooks.compactor is not None
                    result = await self.hooks.compactor.compact(self.state.history, "overflow")
                    if self._compacted(result):
                        compacted = True
                        continue
                return self._fail(streamed.error)
            if streamed is None:  # interrupted while streaming (or compacting)
                return self._interrupted(1)
            compacted = False
            message = streamed.message
            tool_uses = message.tool_uses()
            # What a client is told is complete survives a crash: the message (with the
            # tool calls it lists) is written and synced before `message:complete` goes
            # out. An interrupt still stops a wait on a disk that hangs.
            with self.hooks.control.cancellable():
                await self.hooks.persisted()
            self._emit(
                MessageCompleteParams(
                    reasoning=message.thinking(),
                    content=message.text(),
                    has_tool_calls=bool(tool_uses),
                    tool_calls=[
                        ToolCallSummary(id=t.id, name=t.name, args=t.input) for t in tool_uses
                    ],
                    stop_reason=streamed.stop_reason,
                    message_id=message.id,
                )
            )
            if self.state.config.emits_usage:
                self._emit(self._usage_event())

            if self.hooks.control.observe(1):
                if tool_uses:
                    self._append(
                        Message(
                            role="user",
                            content=[
                                ToolResultBlock(
                                    tool_use_id=t.id, content=CANCEL_MESSAGE, is_error=True
                                )
                                for t in tool_uses
                            ],
                        )
                    )
                return self._interrupted(1)
            if not tool_uses:
                if self.hooks.continuation is None or continued:
                    return TurnOutcome("end_turn")
                go_on = await self.hooks.continuation(message, self.hooks.control)
                if self.hooks.control.observe(1):
                    return self._interrupted(1)
                if go_on is None:
                    return TurnOutcome("end_turn")
                continued = True
                from sema_rpc.protocol import TurnContinuedParams

                self._emit(TurnContinuedParams(sentence=go_on.sentence, nudge=go_on.nudge))
                self._append(Message(role="user", content=[TextBlock(text=go_on.nudge)]))
                continue

            await self.run_tools(tool_uses, truncated=set(streamed.raw_tool_inputs))
            if self.hooks.control.observe(2):
                return self._interrupted(2)
            for rebuild in self.hooks.runner.controls:
                if self.hooks.on_rebuild is not None:
                    self._rebuild(self.hooks.on_rebuild(rebuild))
            # After the whole batch, never between a call and its result.
            for steered in await self.hooks.take_steering():
                self._append(steered)
        return TurnOutcome("max_turns")

    async def call_model(self) -> ResponseDone | ResponseFailed | None:
        """One model call over the history: deltas go out as events; a complete response
        updates the token figures from its usage and joins the history. None when the
        turn was interrupted before the response completed (nothing joins)."""
        streamed = await self._stream_response()
        if isinstance(streamed, ResponseDone):
            self._account(streamed.usage, streamed.message)
            self._append(streamed.message)
        return streamed

    async def run_tools(
        self,
        calls: list[ToolUseBlock],
        truncated: AbstractSet[str] = frozenset(),
    ) -> list[ToolResultBlock]:
        """Run one batch (ToolRunner: read-only batches concurrently, others serially,
        results in the model's order, failures as error results), cut the results to
        their share of the window and append them to the history as one user message."""
        with self.hooks.control.cancellable():
            await self.hooks.persisted()
        last = (
            self.state.history[-1] if self.state.history else None
        )  # the message that made the calls
        caller = last.id if last is not None and last.role == "assistant" else None
        results = await self.hooks.runner.run_batch(calls, truncated=truncated, message_id=caller)
        results = await self._within_budget(results)
        self._append(Message(role="user", content=results))
        return results

    async def _within_budget(self, results: list[ToolResultBlock]) -> list[ToolResultBlock]:
        """The batch's results cut to their share of the context window (budget.py)."""
        per_result, per_batch = batch_budgets(self.state.config.context_length)
        counter = self.hooks.tokens.counter
        await counter.ensure_loaded()

        def cap() -> list[ToolResultBlock]:
            return cap_results(
                results,
                per_result=per_result,
                per_batch=per_batch,
                counter=counter,
                context_length=self.state.config.context_length,
            )

        if sum(len(r.content) for r in results) > 200_000:  # tokenizing takes a while
            return await asyncio.to_thread(cap)
        return cap()

    def _does_not_fit(self, error: ProviderError) -> ProviderError:
        tokens = self.hooks.tokens.count(self.state.history)
        return error.replace(
            message=(
                f"The conversation does not fit the model's context window even after "
                f"compaction (about {tokens:,} tokens; contextLength {self.state.config.context_length:,})"
                f", so the turn stops instead of compacting again. Start a new session or "
                f"/clear, ask for less at once, or set the profile's contextLength in "
                f"models.json if the model's window is different. The provider said: "
                f"{error.message}"
            ),
        )

    def _rebuild(self, rebuilt: ContextRebuild) -> None:
        """Context rebuild: the mode changed mid-turn (ExitPlanMode), so the tools and
        the system prompt follow; clearContextAndStart also restarts the history from the plan."""
        self.state.config = self.state.config.replace(
            system_prompt=rebuilt.system_prompt, tool_specs=rebuilt.tool_specs
        )
        self.hooks.runner.tools = rebuilt.tools
        self.hooks.runner.plan_mode = rebuilt.plan_mode
        if rebuilt.restart_with is not None:
            self.state.history.clear()
            self._append(Message(role="user", content=rebuilt.restart_with, kind="prompt"))
        self.hooks.tokens.set_overhead(
            self.state.config.system_prompt, self.state.config.tool_specs
        )

    async def _stream_response(self) -> ResponseDone | ResponseFailed | None:
        request = ModelRequest(
            model=self.state.config.model,
            system=self.state.config.system_prompt,
            messages=self.state.history,
            tools=self.state.config.tool_specs,
            max_tokens=self.state.config.max_tokens,
            thinking_budget=self.state.config.thinking_budget,
        )
        outcome: ResponseDone | ResponseFailed | None = None
        # The response's id is known before its first chunk: every chunk carries it.
        message_id = new_message_id()
        text_chunk = delta_events(TextChunkParams, message_id=message_id)
        thinking_chunk = delta_events(ThinkingChunkParams, message_id=message_id)
        with self.hooks.control.cancellable():
            async with aclosing(self.hooks.provider.stream(request)) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        self._emit(text_chunk(event.text))
                    elif isinstance(event, ThinkingDelta):
                        self._emit(thinking_chunk(event.text))
                    elif isinstance(event, ResponseDone | ResponseFailed):
                        outcome = event
        if isinstance(outcome, ResponseDone):
            outcome.message.id = message_id
        if self.hooks.control.interrupted and not isinstance(outcome, ResponseDone):
            return None
        if outcome is None:
            return ResponseFailed(
                ProviderError("stream_cut", "the model stream ended without a response")
            )
        return outcome

    @property
    def _compacting(self) -> bool:
        return self.hooks.compactor is not None and self.state.config.compacts

    def _compacted(self, result: CompactionResult | None) -> bool:
        if result is None or not result.changed:
            return False
        tokens = result.token_compact
        self.state.last_usage = TokenUsage(
            use_tokens=tokens, max_tokens=self.state.config.context_length, prompt_tokens=tokens
        )
        return True

    def _append(self, message: Message) -> None:
        # Consecutive user messages (a prompt after an error, an interrupt note) are merged
        # so the history always alternates, as every provider requires (each keeps its id:
        # `parts`). Persistence gets the message as it completed, with its id; the loader
        # merges the same way.
        if message.id is None:
            message.id = new_message_id()
        append_curated(self.state.history, message)
        self.hooks.on_message(message)

    def _interrupted(self, checkpoint: int) -> TurnOutcome:
        self.hooks.control.observe(checkpoint)
        if self.hooks.control.reason != "refuse":
            self._append(
                Message(role="user", content=[TextBlock(text=INTERRUPT_MESSAGE)], kind="notice")
            )
        self._emit(
            SessionInterruptedParams(
                content=INTERRUPT_MESSAGE
                if self.hooks.control.reason != "refuse"
                else "Tool use rejected",
                checkpoint=self.hooks.control.checkpoint or checkpoint,
            )
        )
        if self.state.config.emits_usage:
            # The context is what the next request will read: the history as it stands
            # (a response cut short reported no figure of its own).
            used = self.hooks.tokens.count(self.state.history)
            if used > self.state.last_usage.use_tokens:
                self.state.last_usage = TokenUsage(
                    use_tokens=used, max_tokens=self.state.config.context_length, prompt_tokens=used
                )
            self._emit(self._usage_event())
        return TurnOutcome("interrupted")

    def _fail(self, error: ProviderError) -> TurnOutcome:
        kind = {
            "context_length_exceeded": "context_length_exceeded",
            "invalid_request": "model_error",
            "not_found": "model_error",
            "authentication": "model_error",
        }.get(error.kind, "api_error")
        detail = SessionErrorDetail(
            code=error.kind,
            message=error.message,
            details={"status": error.status, "providerCode": error.code},
        )
        self._emit(SessionErrorParams(type=kind, error=detail))
        return TurnOutcome("error", detail)

    def _account(self, usage: Usage, message: Message) -> None:
        """Record the response's usage before `message` joins the history (so its
        persisted entry carries the provider's figure)."""
        prompt = usage.prompt_tokens
        if prompt > 0:
            self.hooks.tokens.record_response(
                self.state.history, message, prompt, usage.output_tokens
            )
        else:  # the provider reported nothing (e.g. Azure without include_usage)
            prompt = self.hooks.tokens.count(self.state.history)
        self.state.last_usage = TokenUsage(
            use_tokens=prompt + usage.output_tokens,
            max_tokens=self.state.config.context_length,
            prompt_tokens=prompt,
        )

    def _usage_event(self) -> ConversationUsageParams:
        turn, session = self.hooks.totals() if self.hooks.totals is not None else (None, None)
        return ConversationUsageParams(usage=self.state.last_usage, turn=turn, session=session)

    def _emit(self, event) -> None:
        self.hooks.bus.emit(event, agent_id=self.agent_id)
