"""RunTools: execute one batch of tool calls from a model response.

A batch whose every call is read-only runs concurrently; any other batch runs serially
in the model's order. Results always come back in the model's order, one per call.
Every failure is a tool result, never an exception: unknown tool, invalid input, a
refused validation, a rejected permission, a tool that raises.

Tool output is where text from outside the conversation enters it (a file, a command's
output): every secret the server knows is replaced by `[REDACTED]` here, in the result
the model gets (and the history stores) and in what the client is shown, streamed
updates included.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from sema_rpc.core.messages import ToolResultBlock, ToolUseBlock
from sema_rpc.core.policy.permissions import (
    NO_CLIENT_MESSAGE,
    REJECT_MESSAGE,
    PermissionPolicy,
    feedback_message,
)
from sema_rpc.core.scopes import shielded
from sema_rpc.core.secrets import StreamRedactor, redact_known
from sema_rpc.core.text import without_surrogates
from sema_rpc.engine.events import EventBus
from sema_rpc.engine.loop.control import CANCEL_MESSAGE, TurnControl
from sema_rpc.plain_model import is_validation_error
from sema_rpc.plain_record import Record
from sema_rpc.tools.base import (
    ChangeWatch,
    RebuildContext,
    Tool,
    ToolContext,
    ToolError,
    ToolOutput,
)

if TYPE_CHECKING:
    from sema_rpc.protocol import PermissionResult

log = logging.getLogger(__name__)

PLAN_MODE_REFUSAL = (
    "{name} is not available in Plan mode: only read-only tools may run until the plan is approved."
)


TRUNCATED_CALL = (
    "The arguments of this {name} call were cut off because the response reached its "
    "token limit, so it was not run. Retry with a smaller input (e.g. split the change)."
)


class _Prepared(Record):
    # A plain class (every session loads this module; a dataclass costs its creation).
    __slots__ = ("args", "call", "error", "tool")
    _fields = ("call", "tool", "args", "error")

    call: ToolUseBlock
    tool: Tool | None
    args: Any
    error: str | None

    def __init__(
        self, call: ToolUseBlock, tool: Tool | None, args: Any = None, error: str | None = None
    ) -> None:
        self.call = call
        self.tool = tool
        self.args = args
        self.error = error


class ToolRunner:
    def __init__(
        self,
        *,
        tools: dict[str, Tool],
        context: ToolContext,
        policy: PermissionPolicy,
        bus: EventBus,
        control: TurnControl,
        agent_id: str = "main",
        plan_mode: bool = False,
    ):
        self.tools = tools
        self.context = context
        self.policy = policy
        self.bus = bus
        self.control = control
        self.agent_id = agent_id
        self.plan_mode = plan_mode
        self.controls: list[RebuildContext] = []
        """Control signals returned by the last batch's tools (e.g. ExitPlanMode's rebuild)."""
        self.message_id: str | None = None
        """The id of the assistant message whose calls the batch runs (on every tool event)."""

    async def run_batch(
        self,
        calls: list[ToolUseBlock],
        truncated: AbstractSet[str] = frozenset(),
        message_id: str | None = None,
    ) -> list[ToolResultBlock]:
        """`truncated`: ids of calls whose arguments were cut off (max_tokens); never run.
        `message_id`: the assistant message that made the calls."""
        self.controls = []
        self.message_id = message_id
        prepared = [
            _Prepared(call, self.tools.get(call.name), error=TRUNCATED_CALL.format(name=call.name))
            if call.id in truncated
            else self._prepare(call)
            for call in calls
        ]
        results: list[ToolResultBlock | None] = [None] * len(prepared)

        async def run_at(index: int) -> None:
            results[index] = await self._run_one(prepared[index])

        concurrent = len(prepared) > 1 and all(
            p.tool is not None and p.error is None and p.tool.is_read_only(p.args) for p in prepared
        )
        if concurrent:
            async with asyncio.TaskGroup() as group:
                for index in range(len(prepared)):
                    group.create_task(run_at(index))
        else:
            for index in range(len(prepared)):
                await run_at(index)
        return [r for r in results if r is not None]

    def _prepare(self, call: ToolUseBlock) -> _Prepared:
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools))
            return _Prepared(call, None, error=f"No such tool: {call.name}. Available: {known}")
        try:
            args = tool.Input.model_validate(call.input)
        except ValueError as exc:
            if not is_validation_error(exc):
                raise
            details = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
            )
            return _Prepared(call, tool, error=f"Invalid input for {call.name}: {details}")
        return _Prepared(call, tool, args)

    async def _run_one(self, p: _Prepared) -> ToolResultBlock:
        from sema_rpc.protocol import (
            ToolExecutionCompleteParams,
            ToolExecutionStartParams,
            ToolExecutionUpdateParams,
        )

        call, tool = p.call, p.tool
        title = call.name
        if tool is not None and p.args is not None:
            try:
                title = tool.title(p.args)
            except Exception:
                title = call.name
        self._emit(
            ToolExecutionStartParams(
                tool_call_id=call.id, tool_name=call.name, title=title, input=call.input
            )
        )
        if p.error is not None or tool is None:
            return self._error(call, title, p.error or "unknown tool")
        if self.control.observe(3):
            return self._error(call, title, CANCEL_MESSAGE)

        redactor = StreamRedactor()

        def emit_update(text: str) -> None:
            if text := without_surrogates(redactor.feed(text)):
                self._emit(
                    ToolExecutionUpdateParams(tool_call_id=call.id, tool_name=call.name, delta=text)
                )

        ctx = self.context.replace(
            tool_call_id=call.id,
            agent_id=self.agent_id,
            plan_mode=self.plan_mode,
            emit_update=emit_update,
        )
        # Plan mode first: a write the model calls anyway is refused as such, not sent
        # to read the file first (and its validation never looks at the target).
        if self.plan_mode and not tool.allowed_in_plan_mode(p.args):
            return self._error(call, title, PLAN_MODE_REFUSAL.format(name=call.name))

        try:
            refusal = await tool.validate_input(p.args, ctx)
        except Exception as exc:
            log.exception("validate_input of %s failed", call.name)
            refusal = f"{call.name} could not validate its input: {exc}"
        if refusal:
            return self._error(call, title, refusal)

        denial = await self._check_permission(tool, p.args, ctx, title)
        if denial is not None:
            return self._error(call, title, denial)

        self.bus.tool_running(call.id)
        output: ToolOutput | None = None
        watch = await self._watch_changes(tool, p.args, ctx)
        try:
            with self.control.cancellable():
                try:
                    output = await tool.call(p.args, ctx)
                except ToolError as exc:
                    output = ToolOutput(content=str(exc), is_error=True)
                except Exception as exc:
                    log.exception("tool %s raised", call.name)
                    output = ToolOutput(
                        content=f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True
                    )
        finally:
            if watch is not None:
                await shielded(watch[0].after(watch[1]))  # what the call changed is recorded
        if held := without_surrogates(redactor.flush()):
            self._emit(
                ToolExecutionUpdateParams(tool_call_id=call.id, tool_name=call.name, delta=held)
            )
        if output is None:  # cancelled by an interrupt while running
            self.control.observe(4)
            return self._error(call, title, CANCEL_MESSAGE)
        output = _redacted(output)
        if output.control is not None:
            self.controls.append(output.control)
        if output.is_error:
            return self._error(call, title, output.content)
        self._emit(
            ToolExecutionCompleteParams(
                tool_call_id=call.id,
                tool_name=call.name,
                title=title,
                summary=output.summary,
                content=output.display if output.display is not None else output.content,
            )
        )
        return ToolResultBlock(tool_use_id=call.id, content=output.content)

    async def _watch_changes(
        self, tool: Tool, args: Any, ctx: ToolContext
    ) -> tuple[ChangeWatch, Any] | None:
        """Start watching the files this call may change (checkpoints), if it declares any."""
        watch = ctx.services.changes
        if watch is None:
            return None
        try:
            effect = tool.changes_files(args, ctx)
        except Exception:
            log.exception("changes_files of %s failed", tool.name)
            return None
        if effect is None:
            return None
        return watch, await watch.before(tool.name, effect, ctx)

    async def _check_permission(
        self, tool: Tool, args: Any, ctx: ToolContext, title: str
    ) -> str | None:
        """None when the call may run, else the message the model receives instead."""
        from sema_rpc.protocol import PermissionRequestParams, PermissionResult

        ask = tool.permission(args, ctx)
        if ask is None:
            return None
        verdict = self.policy.decide(ask)
        if verdict == "allow":
            return None
        if verdict == "refuse":
            return NO_CLIENT_MESSAGE
        options = ["allow_once", "reject"]
        always_rule = self.policy.rule_for_always(ask)
        if always_rule is not None:
            options.insert(1, "allow_always")
        request = PermissionRequestParams(
            tool_call_id=ctx.tool_call_id,
            tool_name=tool.name,
            title=ask.title or title,
            input=args.model_dump(mode="json", by_alias=True, exclude_none=True),
            content=ask.content,
            content_kind=ask.content_kind,
            options=options,
            always_rule=always_rule,
        )
        answer: PermissionResult | None = None
        with self.control.cancellable():
            answer = await self.bus.ask(request, PermissionResult, agent_id=self.agent_id)
        if answer is None:
            if self.control.observe(4):
                return CANCEL_MESSAGE
            return NO_CLIENT_MESSAGE
        if answer.decision == "allow_once":
            return None
        if answer.decision == "allow_always":
            if always_rule is not None:
                self.policy.store.add(always_rule)
            return None
        if answer.feedback:
            return feedback_message(answer.feedback)
        # A plain reject stops the turn; the reject message is this call's result.
        self.control.interrupt(reason="refuse")
        self.control.observe(4)
        return REJECT_MESSAGE

    def _emit(self, event: Any) -> None:
        event.message_id = self.message_id
        self.bus.emit(event, agent_id=self.agent_id)

    def _error(self, call: ToolUseBlock, title: str, message: str) -> ToolResultBlock:
        from sema_rpc.protocol import ToolExecutionErrorParams

        message = _clean(message)
        self._emit(
            ToolExecutionErrorParams(
                tool_call_id=call.id, tool_name=call.name, title=title, content=message
            )
        )
        return ToolResultBlock(tool_use_id=call.id, content=message, is_error=True)


def _clean(text: str) -> str:
    """Tool output as it may enter the conversation: no known key, no lone surrogate (a
    file name that is not UTF-8 would make every later model request fail)."""
    return without_surrogates(redact_known(text))


def _redacted(output: ToolOutput) -> ToolOutput:
    return output.replace(
        content=_clean(output.content),
        summary=_clean(output.summary),
        display=None if output.display is None else _clean(output.display),
    )
