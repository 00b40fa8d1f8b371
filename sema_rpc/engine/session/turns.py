"""Turns: at most one runs in a session at a time.

Everything that changes a session's conversation — a prompt, a steer that could not join
the running turn, `/clear`, `/compact`, `session/compact` — runs through `exclusive_turn`:
it waits for the session's turn in arrival order (a cancel while waiting leaves the queue),
does not start in a disposed session or a closing engine, gives the turn its TurnControl
(what `session/interrupt` and a cancel reach), announces `state:update` processing/idle,
and when the turn ends hands it to `on_end`, which settles the steer inputs that waited
on it. Steer inputs (`delivery: steer`) wait in `Session.steering` for the running turn's
next tool batch (`take_steering`); those no batch took run as turns of their own.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from sema_rpc.core.messages import ContentBlock, Message, TextBlock
from sema_rpc.engine.loop.control import PromptCancel, TurnControl
from sema_rpc.protocol import SessionPromptResult, StateUpdateParams

if TYPE_CHECKING:
    from sema_rpc.engine.session.session import Session, SteerInput

T = TypeVar("T")


class NotStarted(enum.Enum):
    """Why a turn did not run."""

    CANCELLED = "cancelled"
    """Cancelled before it started or while it waited for its turn."""
    DISPOSED = "disposed"
    """The session was disposed while it waited."""
    CLOSING = "closing"
    """The engine is shutting down: nothing new starts."""


async def exclusive_turn(
    session: Session,
    body: Callable[[TurnControl], Awaitable[T]],
    *,
    cancel: PromptCancel,
    closing: Callable[[], bool],
    on_end: Callable[[T | None, BaseException | None], None],
) -> T | NotStarted:
    """Run `body` as the session's one running turn, once its turn comes.

    Contract: `on_end(result, failure)` is called exactly once for every turn that started,
    after `state:update` idle, also when `body` raised (`result` None, `failure` the
    exception) or was cancelled; it must not raise."""
    if cancel.cancelled:
        return NotStarted.CANCELLED
    if not await cancel.acquire(session.turn_lock):  # cancelled while queued
        return NotStarted.CANCELLED
    try:
        if session.disposed:
            return NotStarted.DISPOSED
        if closing():
            return NotStarted.CLOSING
        control = TurnControl()
        session.control = control
        cancel.started = True
        session.meter.start_turn()
        cancel.on_cancel(lambda: control.interrupt("user"))
        session.bus.emit(StateUpdateParams(state="processing"))
        result: T | None = None
        failure: BaseException | None = None
        try:
            result = await body(control)
            return result
        except BaseException as exc:
            failure = exc
            raise
        finally:
            cancel.on_cancel(None)
            session.control = session.policy = session.runner = None
            session.bus.emit(StateUpdateParams(state="idle"))
            on_end(result, failure)
    finally:
        session.turn_lock.release()


async def take_steering(
    session: Session,
    expand: Callable[[str | list[ContentBlock]], Awaitable[list[ContentBlock]]] | None,
) -> list[Message]:
    """The loop's hook after each tool batch: steer inputs join the running turn, each
    expanded by `expand` (custom commands, @references) as a prompt's input is, each a
    `prompt` message of its own with the id its prompt's result gives."""
    taken = [s for s in session.steering if not s.joined]
    for steer in taken:
        steer.joined = True
    messages: list[Message] = []
    for steer in taken:
        if expand is not None:
            blocks = await expand(steer.input)
        elif isinstance(steer.input, str):
            blocks = [TextBlock(text=steer.input)]
        else:
            blocks = list(steer.input)
        messages.append(Message(role="user", content=blocks, id=steer.message_id, kind="prompt"))
    return messages


def settle_steering(
    session: Session,
    result: SessionPromptResult | None,
    failure: BaseException | None = None,
) -> None:
    """A turn ended: steer inputs that joined it get its answer (or its failure); the
    others (no tool batch came to take them) are released to run as turns of their own."""
    if result is None and (failure is None or isinstance(failure, asyncio.CancelledError)):
        result = session.prompt_result("interrupted")
    waiting, session.steering = session.steering, []
    for steer in waiting:
        if steer.joined:
            steer.result, steer.failed = result, failure if result is None else None
            if result is not None:  # answered with the turn's result, but its own message
                steer.result = result.model_copy(update={"message_id": steer.message_id})
        steer.settled.set()


def drop_steer(session: Session, steer: SteerInput) -> None:
    """Cancel one steer input: one still waiting leaves the queue and answers
    `interrupted`; one that joined the running turn is part of it, so that turn is
    interrupted (and answers both)."""
    if steer.settled.is_set():
        return
    if steer.joined:
        if session.control is not None:
            session.control.interrupt("user")
        return
    if steer in session.steering:
        session.steering.remove(steer)
    steer.result = session.prompt_result("interrupted", ran=False)
    steer.settled.set()
