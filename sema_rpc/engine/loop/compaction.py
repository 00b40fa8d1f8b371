"""Compaction: keep a long conversation inside the model's window.

Before each main-agent model call, when the prompt is larger than contextLength ×
threshold (`SEMA_COMPACT_THRESHOLD`, default 0.75) and the history has at least three
messages, the older history is summarised by the model and replaced:

    [user: summary + the latest real user message's text]  + the recent tail

The tail starts at an assistant message (so tool calls keep their results) and holds at
most a quarter of the window — except the batch the model is waiting for (its last tool
calls and their results), which is always kept, cut to what is left of the window when
the compacted history is still above the threshold. When the summary call fails, or its
result does not make the context smaller, the older history is dropped instead
(truncation, keeping at most half of it) and `compact:exec` says so in `errMsg`. One
compaction never retries itself; when even the fallback leaves the prompt above the
threshold, automatic compaction pauses until the prompt has been measured below it
again, so a conversation that cannot shrink never loops on compaction (and a turn never
compacts twice without a model response in between: conversation.py). The comprehensive history on disk keeps every message; a
compaction writes a marker holding the new curated history.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Literal

from sema_rpc.core.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    new_message_id,
)
from sema_rpc.core.stream import ModelRequest, Provider, ResponseDone, ResponseFailed
from sema_rpc.engine.events import EventBus
from sema_rpc.engine.loop.budget import MIN_RESULT_TOKENS, batch_budgets, cap_results
from sema_rpc.engine.loop.control import CANCEL_MESSAGE, INTERRUPT_MESSAGE, TurnControl
from sema_rpc.engine.loop.tokens import CHARS_PER_TOKEN, TokenTracker
from sema_rpc.plain_record import Record

if TYPE_CHECKING:
    from sema_rpc.protocol import CompactExecParams

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.75
MIN_MESSAGES = 3
TAIL_SHARE = 0.25
"""The kept tail holds at most this share of the context window."""
TRUNCATE_SHARE = 0.5
"""Truncation keeps at most this share of the history's tokens."""
TRANSCRIPT_SHARE = 0.5
"""The transcript sent to the summariser fits in this share of the window."""
TOOL_RESULT_CHARS = 2000

Trigger = Literal["auto", "manual", "overflow"]
Strategy = Literal["summary", "truncate", "none"]

SUMMARY_SYSTEM = (
    "You summarise a conversation between a user and a coding agent so that the agent can "
    "continue the work without the original messages. Be precise and complete; keep file "
    "paths, function names, commands and error messages verbatim."
)

SUMMARY_PROMPT = """Summarise the conversation transcript below. It will replace the \
conversation: the agent continues from your summary alone, followed by the user's latest \
message. Write these sections, in this order:

1. Primary request and intent: everything the user asked for, in detail.
2. Key technical concepts: technologies, frameworks and conventions discussed.
3. Files and code: each file examined, created or modified, why it matters, and the \
important snippets or changes.
4. Errors and fixes: every error met and how it was fixed, including user corrections.
5. Problem solving: problems solved and investigations still open.
6. All user messages: every message the user wrote (not tool results), briefly.
7. Pending tasks: what the user asked for that is not done yet.
8. Current work: precisely what was being done just before this summary.
9. Next step: the next step, in line with the user's latest explicit request; quote it.

Answer with the summary only.{instructions}

<transcript>
{transcript}
</transcript>"""

SUMMARY_HEADER = (
    "This session continues a previous conversation that was compacted to fit the context "
    "window. Summary of the earlier conversation:\n\n"
)
TRUNCATION_NOTICE = (
    "[Earlier messages of this conversation were removed to fit the context window; "
    "a summary could not be made. Ask the user if you need something from them.]"
)
LATEST_REQUEST = "The user's latest message follows."


def compact_threshold() -> float:
    """`SEMA_COMPACT_THRESHOLD` (0 < t ≤ 1), default 0.75."""
    raw = os.environ.get("SEMA_COMPACT_THRESHOLD", "").strip()
    if not raw:
        return DEFAULT_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        log.warning("ignoring SEMA_COMPACT_THRESHOLD=%r (expected 0 < t <= 1)", raw)
        return DEFAULT_THRESHOLD
    return value


# CompactionState and CompactionResult are plain classes: every session loads this
# module, and a dataclass costs its creation there.


class CompactionState:
    """Per session: automatic compaction pauses after one that could not get below the
    threshold, until a prompt is measured below the threshold again."""

    __slots__ = ("armed", "count")

    def __init__(self, armed: bool = True, count: int = 0) -> None:
        self.armed = armed
        self.count = count


class CompactionResult:
    __slots__ = ("err_msg", "messages", "strategy", "token_before", "token_compact", "trigger")

    def __init__(
        self,
        trigger: Trigger,
        strategy: Strategy,
        token_before: int,
        token_compact: int,
        err_msg: str | None = None,
        messages: list[Message] | None = None,
    ) -> None:
        self.trigger: Trigger = trigger
        self.strategy: Strategy = strategy
        self.token_before = token_before
        self.token_compact = token_compact
        self.err_msg = err_msg
        self.messages = messages
        """The new curated history; None when nothing changed."""

    @property
    def changed(self) -> bool:
        return self.messages is not None

    @property
    def rate(self) -> float:
        """tokenCompact / tokenBefore: the share of the context that remains."""
        return round(self.token_compact / self.token_before, 4) if self.token_before else 1.0

    def event(self) -> CompactExecParams:
        from sema_rpc.protocol import CompactExecParams

        return CompactExecParams(
            trigger=self.trigger,
            strategy=self.strategy,
            token_before=self.token_before,
            token_compact=self.token_compact,
            compact_rate=self.rate,
            err_msg=self.err_msg,
        )


def _ignore_result(_r: CompactionResult) -> None:
    pass


def _no_reminders() -> list[ContentBlock]:
    return []


class Compactor(Record):
    # A plain class: every session builds one, and a dataclass costs its creation.
    _fields = (
        "provider",
        "model",
        "max_tokens",
        "context_length",
        "tracker",
        "bus",
        "control",
        "state",
        "threshold",
        "on_compacted",
        "agent_id",
        "reminders",
    )

    provider: Provider
    model: str
    max_tokens: int
    context_length: int
    tracker: TokenTracker
    bus: EventBus
    control: TurnControl
    state: CompactionState
    threshold: float
    on_compacted: Callable[[CompactionResult], None]
    """Called with every compaction that changed the history (persistence hooks in)."""
    agent_id: str
    reminders: Callable[[], list[ContentBlock]]
    """The session's standing reminders (project rules, todos, Plan mode): the compacted
    history keeps them with the latest user message, whichever query first carried them."""

    def __init__(
        self,
        provider: Provider,
        model: str,
        max_tokens: int,
        context_length: int,
        tracker: TokenTracker,
        bus: EventBus,
        control: TurnControl,
        state: CompactionState | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        on_compacted: Callable[[CompactionResult], None] = _ignore_result,
        agent_id: str = "main",
        reminders: Callable[[], list[ContentBlock]] = _no_reminders,
    ) -> None:
        self.provider = provider
        self.model = model
        self.max_tokens = max_tokens
        self.context_length = context_length
        self.tracker = tracker
        self.bus = bus
        self.control = control
        self.state = CompactionState() if state is None else state
        self.threshold = threshold
        self.on_compacted = on_compacted
        self.agent_id = agent_id
        self.reminders = reminders

    @property
    def limit(self) -> int:
        return int(self.context_length * self.threshold)

    async def maybe_compact(self, history: list[Message]) -> CompactionResult | None:
        """The automatic check before a model call."""
        tokens = await self.tracker.count_async(history)
        if tokens <= self.limit:
            self.state.armed = True
            return None
        if not self.state.armed or len(history) < MIN_MESSAGES:
            return None
        return await self.compact(history, "auto", tokens_before=tokens)

    async def compact(
        self,
        history: list[Message],
        trigger: Trigger,
        instructions: str | None = None,
        tokens_before: int | None = None,
    ) -> CompactionResult | None:
        """Compact `history` in place and emit `compact:exec`. None when interrupted."""
        before = (
            tokens_before if tokens_before is not None else await self.tracker.count_async(history)
        )
        plan = self._plan(history, self.context_length * TAIL_SHARE)
        if plan is None:
            nothing = CompactionResult(trigger, "none", before, before, "nothing to compact")
            nothing = self._fit_pending(nothing, history)
            self._finish(nothing, history)
            return nothing
        latest, k = plan
        kept = {b.text for b in latest if isinstance(b, TextBlock)}
        latest += [b for b in self.reminders() if not (isinstance(b, TextBlock) and b.text in kept)]
        summary, error = await self._summarise(history[:k], instructions)
        if self.control.interrupted:
            return None
        result: CompactionResult | None = None
        if summary:
            head = Message(
                role="user",
                content=[TextBlock(text=SUMMARY_HEADER + summary), *latest],
                id=new_message_id(),
                kind="summary",
            )
            messages = [head, *history[k:]]
            after = self._size_after(before, history[:k], head)
            if after < before:
                result = CompactionResult(trigger, "summary", before, after, None, messages)
            else:
                error = f"the summary did not make the context smaller ({after} >= {before} tokens)"
        if result is None:
            result = self._truncate(history, latest, trigger, before, error or "no summary")
        result = self._fit_pending(result, history)
        self._finish(result, history)
        return result

    # ---- steps

    def _plan(
        self, history: list[Message], tail_budget: float
    ) -> tuple[list[ContentBlock], int] | None:
        """(the latest real user message's own blocks, start of the kept tail).

        The tail always holds the batch the model is waiting for (its tool calls and
        their results), whatever its size; older pairs join it while they fit."""
        n = len(history)
        m = _pending_start(history)
        u = _latest_user_index(history, m)
        latest: list[ContentBlock] = _own_blocks(history[u]) if u >= 0 else []
        count = self.tracker.counter.count_message
        k, tail = m, sum(count(history[i]) for i in range(m, n))
        # Walk back from the end: a tail may start at an assistant message only.
        for i in range(m - 1, u, -1):
            tail += count(history[i])
            if tail > tail_budget:
                break
            if history[i].role == "assistant":
                k = i
        if k <= 1 and (u <= 0):
            return None  # nothing before the kept part
        return latest, k

    def _fit_pending(self, result: CompactionResult, history: list[Message]) -> CompactionResult:
        """When the compacted history is still above the threshold, cut the results of the
        batch the model is waiting for to what is left of the window (budget.py)."""
        messages = result.messages if result.messages is not None else history
        excess = result.token_compact - self.limit
        if excess <= 0 or _pending_start(messages) == len(messages):
            return result
        last = messages[-1]
        results = [b for b in last.content if isinstance(b, ToolResultBlock)]
        counter = self.tracker.counter
        size = sum(counter.count_text(b.content) for b in results)
        _, per_batch = batch_budgets(self.context_length)
        budget = max(MIN_RESULT_TOKENS * len(results), min(per_batch, size - excess))
        capped = iter(
            cap_results(
                results,
                per_result=budget,
                per_batch=budget,
                counter=counter,
                context_length=self.context_length,
            )
        )
        content = [next(capped) if isinstance(b, ToolResultBlock) else b for b in last.content]
        if all(a is b for a, b in zip(content, last.content, strict=True)):
            return result
        fitted = last.model_copy(update={"content": content})  # same message: same id
        after = result.token_compact - counter.count_message(last) + counter.count_message(fitted)
        note = "the latest tool results were cut to fit"
        if result.messages is None:  # nothing else could be compacted
            return CompactionResult(
                result.trigger,
                "truncate",
                result.token_before,
                after,
                f"{result.err_msg}; {note}",
                [*messages[:-1], fitted],
            )
        result.messages = [*messages[:-1], fitted]
        result.token_compact = after
        result.err_msg = f"{result.err_msg}; {note}" if result.err_msg else note
        return result

    def _truncate(
        self,
        history: list[Message],
        latest: list[ContentBlock],
        trigger: Trigger,
        before: int,
        reason: str,
    ) -> CompactionResult:
        history_tokens = max(0, before - self.tracker.overhead)
        budget = min(self.context_length * TAIL_SHARE, history_tokens * TRUNCATE_SHARE)
        plan = self._plan(history, budget)
        k = plan[1] if plan is not None else len(history)
        head = Message(
            role="user",
            content=[TextBlock(text=TRUNCATION_NOTICE), *latest],
            id=new_message_id(),
            kind="summary",
        )
        messages = [head, *history[k:]]
        after = self._size_after(before, history[:k], head)
        return CompactionResult(
            trigger, "truncate", before, after, f"{reason}; fell back to truncation", messages
        )

    async def _summarise(
        self, messages: list[Message], instructions: str | None
    ) -> tuple[str | None, str | None]:
        """(summary, None) or (None, why not)."""
        budget_tokens = int(self.context_length * TRANSCRIPT_SHARE)
        budget_chars = int(budget_tokens * CHARS_PER_TOKEN)
        transcript = render_transcript(messages, budget_chars)
        tokens = self.tracker.counter.count_text(transcript)
        if tokens > budget_tokens:  # dense text (code, CJK): fewer chars per token
            transcript = render_transcript(messages, budget_chars * budget_tokens // tokens)
        extra = f"\n\nAdditional instructions from the user: {instructions}" if instructions else ""
        request = ModelRequest(
            model=self.model,
            system=SUMMARY_SYSTEM,
            messages=[
                Message.user_text(SUMMARY_PROMPT.format(instructions=extra, transcript=transcript))
            ],
            tools=[],
            max_tokens=max(256, min(self.max_tokens, self.context_length // 8)),
            thinking_budget=None,
        )
        outcome: ResponseDone | ResponseFailed | None = None
        try:
            with self.control.cancellable():
                async with aclosing(self.provider.stream(request)) as events:
                    async for event in events:
                        if isinstance(event, ResponseDone | ResponseFailed):
                            outcome = event
        except Exception as exc:  # a provider bug must not lose the turn
            log.exception("summary call failed")
            return None, f"the summary call failed: {type(exc).__name__}: {exc}"
        if isinstance(outcome, ResponseFailed):
            return None, f"the summary call failed: {outcome.error.message}"
        if outcome is None:
            return None, "the summary call returned nothing"
        text = outcome.message.text().strip()
        if not text:
            return None, "the summary was empty"
        return text, None

    def _size_after(self, before: int, removed: list[Message], added: Message) -> int:
        """The prompt size after replacing `removed` with `added`: the figure before (the
        provider's, when it had one) minus and plus local counts, so that both figures
        share one base (system prompt and tools are not re-estimated)."""
        count = self.tracker.counter.count_message
        return max(0, before - sum(count(m) for m in removed) + count(added))

    def _finish(self, result: CompactionResult, history: list[Message]) -> None:
        if result.messages is not None:
            history[:] = result.messages
            # The new size becomes the baseline until the provider reports the next one.
            self.tracker.set_mark(len(history), history[-1], result.token_compact)
            self.state.count += 1
            self.on_compacted(result)
        # Still above the threshold: pause automatic compaction (no loop).
        self.state.armed = result.token_compact <= self.limit
        self.bus.emit(result.event(), agent_id=self.agent_id)
        log.info(
            "compaction (%s, %s): %d -> %d tokens%s",
            result.trigger,
            result.strategy,
            result.token_before,
            result.token_compact,
            f" ({result.err_msg})" if result.err_msg else "",
        )


def _is_real_text(block: ContentBlock) -> bool:
    return isinstance(block, TextBlock) and block.text not in (INTERRUPT_MESSAGE, CANCEL_MESSAGE)


def _latest_user_index(history: list[Message], end: int) -> int:
    """The latest user message before `end` that holds text the user wrote."""
    for i in range(end - 1, -1, -1):
        m = history[i]
        if m.role == "user" and any(_is_real_text(b) for b in m.content):
            return i
    return -1


def _pending_start(history: list[Message]) -> int:
    """Where the batch the model is waiting for starts: the assistant message whose tool
    calls the last message answers; len(history) when the history ends otherwise."""
    n = len(history)
    if (
        n >= 2
        and history[-2].role == "assistant"
        and history[-1].role == "user"
        and history[-2].tool_uses()
        and any(isinstance(b, ToolResultBlock) for b in history[-1].content)
    ):
        return n - 2
    return n


def _own_blocks(message: Message) -> list[ContentBlock]:
    """The user's own blocks of a (possibly merged) user message: no tool results."""
    return [b for b in message.content if _is_real_text(b) or isinstance(b, ImageBlock)]


def render_transcript(messages: list[Message], budget_chars: int) -> str:
    """A plain-text transcript for the summariser, at most about `budget_chars` long.

    Tool results are cut to their first and last characters; when the whole is still too
    long, the oldest messages after the first one (the original request) are dropped."""
    parts = [_render(m) for m in messages]
    total = sum(len(p) for p in parts)
    if total <= budget_chars:
        return "\n\n".join(parts)
    if len(parts) == 1:
        return _clip(parts[0], budget_chars)
    first, rest = parts[0][: budget_chars // 4], parts[1:]
    room = budget_chars - len(first)
    kept: list[str] = []
    for p in reversed(rest):
        if len(p) > room:
            break
        kept.append(p)
        room -= len(p)
    kept.reverse()
    dropped = len(rest) - len(kept)
    return "\n\n".join([first, f"[… {dropped} messages omitted …]", *kept])


def _render(message: Message) -> str:
    lines: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            lines.append(f"{message.role.capitalize()}: {block.text}")
        elif isinstance(block, ImageBlock):
            lines.append(
                f"{message.role.capitalize()}: [image {block.path or ''}]".replace(" ]", "]")
            )
        elif isinstance(block, ToolUseBlock):
            lines.append(f"Assistant called {block.name} {_clip(str(block.input), 500)}")
        elif isinstance(block, ToolResultBlock):
            status = "error" if block.is_error else "result"
            lines.append(f"Tool {status}: {_clip(block.content, TOOL_RESULT_CHARS)}")
        elif isinstance(block, ThinkingBlock):
            continue  # private reasoning: not needed to continue the work
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit} characters cut …]\n{text[-half:]}"
