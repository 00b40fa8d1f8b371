"""The in-process engine API: one conversation, driven step by step from Python.

For people who embed the agent in their own workflow engine and want to decide when the
model is called and which tool calls run, without a server, a wire or a session store:

    from sema_rpc.engine.api import ConversationManager
    from sema_rpc.providers.scripted import ScriptedProvider, ScriptedReply

    chat = ConversationManager(provider=provider, model="claude-sonnet-4-5", workspace=path)
    chat.add_user_text("Summarise README.md")
    response = await chat.call_model()            # ResponseDone | ResponseFailed
    while isinstance(response, ResponseDone) and response.message.tool_uses():
        await chat.run_tools()                    # the last response's calls; results appended
        if (await chat.token_check()).should_compact: ...
        response = await chat.call_model()

    outcome = await chat.run_turn("Now fix the typo")   # or the whole agent loop at once

    chat.set_model("gpt")            # a models.json profile (or provider/model-id): the
                                     # next model call uses it, also inside run_turn
    chat.usage.session.cost_usd      # tokens and cost so far (None: a model without a price)

It is a thin stateful wrapper over the pieces the server uses: the loop
(`conversation.Conversation`), the tool runner (`run_tools.ToolRunner`: read-only
batches run concurrently, any other batch serially, results in the model's order,
every failure an error result), the token tracker (`tokens.TokenTracker`) and the
compactor. Failures are values: a failed model call returns `ResponseFailed`, a failed
tool an error `ToolResultBlock`, a failed turn `TurnOutcome("error")`.

Consent: without a `bridge` that answers permission requests, a call that needs the
user's consent (a write, a non-read-only Bash command) is refused with a message the
model reads, unless `permission_mode` allows it (`acceptEdits` for file edits, `bypass`
for everything). Paths stay confined to `workspace` either way.

Events (text chunks, tool starts and results, usage) go to `bridge.notify` as the
protocol's `*Params` models, as they would go out on the wire.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sema_rpc.core.catalog import Price, builtin_price
from sema_rpc.core.config import ModelProfile
from sema_rpc.core.errors import DomainError
from sema_rpc.core.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    new_message_id,
)
from sema_rpc.core.policy.permissions import PermissionPolicy, RuleStore
from sema_rpc.core.stream import Provider, ProviderError, ResponseDone, ResponseFailed, ToolSpec
from sema_rpc.engine.events import ClientBridge, EventBus
from sema_rpc.engine.loop.compaction import (
    MIN_MESSAGES,
    CompactionState,
    Compactor,
    compact_threshold,
)
from sema_rpc.engine.loop.control import TurnControl
from sema_rpc.engine.loop.conversation import (
    Conversation,
    LoopConfig,
    LoopHooks,
    LoopState,
    TurnOutcome,
)
from sema_rpc.engine.loop.run_tools import ToolRunner
from sema_rpc.engine.loop.tokens import ESTIMATE, TokenTracker, counter_for_model
from sema_rpc.engine.loop.usage import UsageMeter, metered
from sema_rpc.engine.models import available_models, loop_settings, profile_for
from sema_rpc.engine.store.curated import append_curated
from sema_rpc.protocol import EventParams, ModelListResult, UsageTotals, WireModel
from sema_rpc.tools.base import Tool, ToolContext
from sema_rpc.tools.registry import builtin_tools

Role = Literal["user", "assistant"]
TokenSource = Literal["provider", "tokenizer", "estimate"]


class StepInProgress(DomainError):
    """A step was started while another one of the same conversation runs (steps are
    sequential: they share one history)."""


class _NoClient:
    """The default bridge: events are dropped and no request is answered."""

    def notify(self, event: EventParams) -> None:
        pass

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        return None


@dataclass(frozen=True, slots=True)
class TokenCheck:
    """The prompt's size before the next model call, and whether to compact."""

    tokens: int
    """System prompt + tool definitions + every message."""
    context_length: int
    threshold: float
    source: TokenSource
    """`provider`: the last response's usage, plus local counts for the messages after
    it; `tokenizer`: counted locally with the model's encoding; `estimate`: chars/2.5
    (no tokenizer available offline)."""
    messages: int

    @property
    def limit(self) -> int:
        return int(self.context_length * self.threshold)

    @property
    def should_compact(self) -> bool:
        """The compaction signal: above contextLength × threshold with at least three
        messages, the rule the server applies before each model call."""
        return self.tokens > self.limit and self.messages >= MIN_MESSAGES


class ConversationManager:
    """One conversation with a provider and a set of tools on a workspace.

    `tools`: default the built-in tools (Read, Write, Edit, Glob, Grep, Bash, TodoWrite).
    `threshold`: the compaction threshold, default `SEMA_COMPACT_THRESHOLD` or 0.75.
    `compacts`: whether `run_turn` compacts automatically (with `provider` summarising).
    """

    def __init__(
        self,
        *,
        provider: Provider,
        model: str,
        workspace: Path,
        tools: Sequence[Tool] | None = None,
        system_prompt: str = "",
        context_length: int = 200_000,
        max_tokens: int = 8192,
        max_turns: int = 100,
        thinking_budget: int | None = None,
        permission_mode: str = "default",
        bridge: ClientBridge | None = None,
        client_can_answer: bool | None = None,
        threshold: float | None = None,
        compacts: bool = True,
        session_id: str = "embedded",
        price: Price | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self.usage = UsageMeter()
        """Tokens and cost of every model call (compaction included): `usage.session` the
        conversation's running totals, `usage.turn` the last step's (`run_turn`,
        `call_model`). Priced with `price` (USD per million tokens), default the built-in
        list price of `model`; None when unknown."""
        self._price = price if price is not None else builtin_price(model)
        provider = metered(provider, self.usage, self._price)
        chosen = list(builtin_tools() if tools is None else tools)
        self.tools: dict[str, Tool] = {t.name: t for t in chosen}
        self.bus = EventBus(session_id, bridge or _NoClient())
        self.control = TurnControl()
        self.tokens = TokenTracker(counter_for_model(model))
        self.threshold = compact_threshold() if threshold is None else threshold
        self.context = ToolContext(working_dir=self.workspace, session_id=session_id)
        can_answer = bridge is not None if client_can_answer is None else client_can_answer
        runner = ToolRunner(
            tools=self.tools,
            context=self.context,
            policy=PermissionPolicy(permission_mode, RuleStore(self.workspace), can_answer),
            bus=self.bus,
            control=self.control,
        )
        config = LoopConfig(
            model=model,
            system_prompt=system_prompt,
            tool_specs=[ToolSpec(t.name, t.description, t.input_schema()) for t in chosen],
            max_tokens=max_tokens,
            context_length=context_length,
            thinking_budget=thinking_budget,
            max_turns=max_turns,
            compacts=compacts,
        )
        self._compaction = CompactionState()
        self._steering: list[ContentBlock] = []
        self._running = False
        hooks = LoopHooks(
            provider=provider,
            bus=self.bus,
            runner=runner,
            control=self.control,
            tokens=self.tokens,
            take_steering=self._take_steering,
            totals=self._totals,
        )
        self.loop = Conversation("main", hooks, LoopState(history=[], config=config))
        self._new_compactor()

    # ------------------------------------------------------------------ messages

    def add_message(self, message: Message) -> None:
        """Append a message. A user message after a user message is merged into it (the
        history alternates, as every provider requires). A message without an id gets one."""
        if message.id is None:
            message.id = new_message_id()
        append_curated(self.loop.state.history, message)

    def add_user_text(self, text: str) -> None:
        self.add_message(Message.user_text(text))

    def get_messages(self) -> list[Message]:
        """A copy of the history: changing it changes nothing here."""
        return [m.model_copy(deep=True) for m in self.loop.state.history]

    def recent(self, n: int) -> list[Message]:
        """Copies of the last `n` messages (all of them when there are fewer)."""
        if n <= 0:
            return []
        return [m.model_copy(deep=True) for m in self.loop.state.history[-n:]]

    def by_role(self, role: Role) -> list[Message]:
        """Copies of the messages of one role, in order (tool results are `user`)."""
        return [m.model_copy(deep=True) for m in self.loop.state.history if m.role == role]

    def clear_messages(self) -> None:
        """Forget the conversation: no message, no token figure, no record of which files
        were read (an Edit needs a fresh Read again). Provider, model, tools, system
        prompt, permission rules and settings are kept."""
        self.loop.state.history.clear()
        self.tokens.reset()
        self.context.read_files.clear()
        self._compaction = CompactionState()
        self._new_compactor()
        self._steering.clear()

    # ------------------------------------------------------------------ models

    def list_models(self) -> ModelListResult:
        """The models of `$SEMA_ROOT/models.json` (and the environment's default), as
        `model/list` lists them. Raises ConfigError for a broken models.json."""
        return available_models()

    def set_model(
        self, name: str, thinking: bool | None = None, *, provider: Provider | None = None
    ) -> ModelProfile:
        """Use another model from the next model call on (inside a running `run_turn`
        too: the call after the current one). `name`: a models.json profile or
        `provider/model-id`, resolved as `session/setModel` does; `thinking` overrides
        the profile's. `provider`: the connection to use, default the profile's own.
        Raises InvalidArgument for an unknown name (listing the profiles), ConfigError
        when the model cannot run (no API key)."""
        profile = profile_for(name, thinking)
        if provider is None:
            from sema_rpc.providers.registry import provider_for

            provider = provider_for(profile)
        self._price = profile.price
        self.loop.switch_model(
            metered(provider, self.usage, profile.price), None, **loop_settings(profile)
        )
        self._new_compactor()
        return profile

    @property
    def message_count(self) -> int:
        return len(self.loop.state.history)

    # ------------------------------------------------------------------ steps

    async def call_model(self) -> ResponseDone | ResponseFailed:
        """One model call over the current history. The response streams through the
        provider (text and thinking chunks go to the bridge as events); a complete
        response joins the history and its usage becomes the token figure. A failure
        returns `ResponseFailed` and changes nothing; so does `interrupt()` during the
        stream (kind `stream_cut`, message "interrupted")."""
        self.tokens.set_overhead(
            self.loop.state.config.system_prompt, self.loop.state.config.tool_specs
        )
        with self._step():
            result = await self.loop.call_model()
        if result is None:
            return ResponseFailed(ProviderError("stream_cut", "interrupted"))
        return result

    async def run_tool(self, call: ToolUseBlock) -> ToolResultBlock:
        """Run one tool call; its result joins the history (see `run_tools`)."""
        (result,) = await self.run_tools([call])
        return result

    async def run_tools(self, calls: Sequence[ToolUseBlock] | None = None) -> list[ToolResultBlock]:
        """Run a batch of tool calls: default the last assistant message's calls. A
        batch whose every call is read-only runs concurrently, any other serially; the
        results come back in the calls' order, one per call, every failure (unknown tool,
        invalid input, refused permission, a tool that raises) as an error result. They
        join the history as one user message, cut to their share of the context window."""
        if calls is None:
            last = self.loop.state.history[-1] if self.loop.state.history else None
            calls = last.tool_uses() if last is not None and last.role == "assistant" else []
        if not calls:
            return []
        with self._step():
            return await self.loop.run_tools(list(calls))

    async def run_turn(self, prompt: str | list[ContentBlock]) -> TurnOutcome:
        """The whole agent loop for one user input, as the server runs a prompt: model
        call, tool batch, repeat until the model stops calling tools (`end_turn`),
        `max_turns` is reached, `interrupt()` is called (`interrupted`) or the provider
        fails (`error`, with the detail). Compacts automatically when `compacts`."""
        content: list[ContentBlock] = (
            [TextBlock(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        with self._step():
            return await self.loop.query(content)

    def steer(self, text: str) -> None:
        """Input for the running turn: it joins after the current tool batch (never
        between a call and its result)."""
        self._steering.append(TextBlock(text=text))

    def interrupt(self) -> bool:
        """Stop the running step (model call, tool batch or turn) at its next checkpoint
        (see engine/loop/control.py). False when no step is running or it was already
        interrupted: an interrupt never carries over to the next step."""
        if not self._running:
            return False
        return self.control.interrupt("user")

    async def token_check(self) -> TokenCheck:
        """The prompt's size now: the provider's last usage first, then the tokenizer
        for the messages after it, then chars/2.5 when no tokenizer is available."""
        config = self.loop.state.config
        self.tokens.set_overhead(config.system_prompt, config.tool_specs)
        history = self.loop.state.history
        tokens = await self.tokens.count_async(history)
        source: TokenSource
        if self.tokens.provider_covered(history) > 0:
            source = "provider"
        elif self.tokens.counter.name != ESTIMATE:
            source = "tokenizer"
        else:
            source = "estimate"
        return TokenCheck(tokens, config.context_length, self.threshold, source, len(history))

    # ------------------------------------------------------------------ internals

    @contextmanager
    def _step(self) -> Iterator[None]:
        """One step at a time; each gets its own TurnControl (an interrupt ends that
        step only) and its own turn totals."""
        if self._running:
            raise StepInProgress("a step of this conversation is already running")
        self._fresh_control()
        self.usage.start_turn()
        self._running = True
        try:
            yield
        finally:
            self._running = False

    def _fresh_control(self) -> None:
        control = TurnControl()
        self.control = control
        hooks = self.loop.hooks
        hooks.runner.control = control
        if hooks.compactor is not None:
            hooks.compactor.control = control
        self.loop.hooks = hooks.replace(control=control)

    def _new_compactor(self) -> None:
        """A compactor for the loop's model and the conversation's compaction state."""
        config = self.loop.state.config
        compactor = Compactor(
            provider=self.loop.hooks.provider,
            model=config.model,
            max_tokens=config.max_tokens,
            context_length=config.context_length,
            tracker=self.tokens,
            bus=self.bus,
            control=self.control,
            state=self._compaction,
            threshold=self.threshold,
        )
        self.loop.hooks = self.loop.hooks.replace(compactor=compactor)

    def _totals(self) -> tuple[UsageTotals, UsageTotals]:
        return (
            UsageTotals.model_validate(self.usage.turn.as_dict()),
            UsageTotals.model_validate(self.usage.session.as_dict()),
        )

    async def _take_steering(self) -> list[Message]:
        taken, self._steering = self._steering, []
        return [Message(role="user", content=taken, kind="prompt")] if taken else []
