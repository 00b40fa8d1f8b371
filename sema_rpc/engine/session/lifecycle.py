"""A session's life: the one model both dialects follow (protocol/README.md, "A
session's life").

    idle ──prompt read──▶ running ──consent asked──▶ waiting for consent
      ▲                    │  ▲                         │
      │                    │  └──────consent answered───┘
      │                 stop│ (interrupt, cancel, a refused consent)
      │                    ▼
      └──turn answered── stopping
    any ──close/dispose──▶ closed

A prompt counts from the moment its request is *read* (`accept`), not from when its
task first runs: a stop written right behind the prompt, in the same write, finds it
and ends it. Every dialect calls `accept` while reading, `stop` for its stop message
(`session/interrupt`, ACP `session/cancel`) and `SessionRegistry.dispose` for close;
the requests that need the session quiet ask `require_quiet`. Nothing in a dialect
decides what a stop or a close means.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

from sema_rpc.core.errors import SessionBusy
from sema_rpc.engine.loop.control import PromptCancel
from sema_rpc.plain_record import Record

if TYPE_CHECKING:
    import asyncio

    from sema_rpc.engine.events import EventBus
    from sema_rpc.engine.loop.control import TurnControl


class State(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    CONSENT = "waiting for consent"
    STOPPING = "stopping"
    CLOSED = "closed"


class Life(Record):
    """What a session's state is made of, beside its running turn (`Session.control`)."""

    # A plain class (every session loads this module; a dataclass costs its creation).
    _fields = ("open", "closed")

    open: list[PromptCancel]
    """Prompts read and not answered yet, in the order they were read."""
    closed: bool
    """Closed (disposed): its answer is out or on its way; nothing more of the session
    reaches the client."""

    def __init__(self, open: list[PromptCancel] | None = None, closed: bool = False) -> None:
        self.open = [] if open is None else open
        self.closed = closed


class Session(Protocol):
    """What the lifecycle reads of a session (`engine/session/session.py`'s `Session` is one; a
    protocol, since the session holds its `Life` and so imports this module)."""

    @property
    def id(self) -> str: ...
    @property
    def disposed(self) -> bool: ...
    @property
    def life(self) -> Life: ...
    @property
    def control(self) -> TurnControl | None: ...
    @property
    def bus(self) -> EventBus: ...
    @property
    def turn_lock(self) -> asyncio.Lock: ...


def state(session: Session) -> State:
    if session.disposed or session.life.closed:
        return State.CLOSED
    control = session.control
    if control is not None and control.interrupted:
        return State.STOPPING
    if control is not None and session.bus.asking:
        return State.CONSENT
    if control is not None or session.turn_lock.locked() or session.life.open:
        return State.RUNNING
    return State.IDLE


def accept(session: Session | None) -> PromptCancel:
    """A prompt request was read for `session` (None: no such session; the prompt will
    be refused when handled). Its cancel handle, open until `answered`."""
    cancel = PromptCancel()
    if session is not None and not session.disposed:
        session.life.open.append(cancel)
        cancel.open_in = session.life.open
    return cancel


def answered(cancel: PromptCancel) -> None:
    """The prompt's answer is written (or it was refused): it no longer counts."""
    if cancel.open_in is not None and cancel in cancel.open_in:
        cancel.open_in.remove(cancel)
    cancel.open_in = None


def stop(session: Session, *, queued: bool) -> bool:
    """A stop for the session: the turn that runs is interrupted; when none runs, the
    prompt read and not started yet (the next to run) is cancelled, so it never runs.
    `queued`: every prompt waiting behind it is cancelled too (ACP `session/cancel`);
    otherwise queued follow-ups keep their place (`session/interrupt`).

    True when this stop ended something that was not already stopping. A stop when
    nothing is open changes nothing: it never reaches a later prompt."""
    stopped = False
    control = session.control
    if control is not None:
        stopped = control.interrupt("user")
    if queued:  # the running prompt too: its cancel interrupts its turn
        waiting = [c for c in session.life.open if not c.cancelled]
    elif control is None:
        waiting = [c for c in session.life.open if not c.started and not c.cancelled][:1]
    else:
        waiting = []
    for cancel in waiting:
        cancel.cancel()
        stopped = True
    return stopped


def require_quiet(session: Session, what: str) -> None:
    """`what` (a rewind, a delete) needs the session idle: SessionBusy otherwise."""
    if state(session) is not State.IDLE:
        raise SessionBusy(
            f"a turn is running in this session: interrupt it (session/interrupt) or "
            f"wait for it to end, then {what}",
            session.id,
        )
