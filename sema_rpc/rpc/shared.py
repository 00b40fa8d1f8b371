"""The process's sessions shared by several clients: the host of a listening server
(`--listen`, `sema-rpc serve`, `sema-rpc run --listen`).

`SharedHost` is the process's `Host` (host.py: the engine and its bridge) when clients
may come and go: the stdio client (if any) and each accepted socket is a connection with
its native front (`SemaServer`), attached to this host. A session belongs to the
process, never to a connection: a connection that goes away loses nothing, and a turn it
started runs on.

- Following: a connection follows the sessions it creates, forks or resumes
  (`session/create`) and those it attaches to (`session/attach`); `session/detach` and
  closing the connection stop it. Every notification of a session is encoded once and
  the same bytes go to each follower (framed once per framing), and into the session's
  `Backlog` for the clients that attach later.
- Attaching is answered and replayed in one step of the loop: the answer, the backlog
  after `afterSeq`, the open requests, then the live stream; nothing of the session can
  come in between, so the `seq` numbers run on with no gap and no duplicate.
- Requests (consent, a question, a plan's approval) go to every follower that declared
  the capability, and to each that attaches while it is open. The first valid answer
  wins; the other followers get `$/cancelRequest` and every follower a
  `request:resolved` naming who answered. With no follower able to answer, the request
  waits (the session's turn is paused) until one attaches or the turn is stopped. An
  error answer counts as no answer, unless it came from the last follower asked (then
  the request is refused, as with one client).
- Consent is always asked (the engine's `client_answers_permissions`): a client may
  attach to answer it.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import itertools
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sema_rpc.rpc.backlog import Backlog
from sema_rpc.rpc.connection import dumps as _dumps
from sema_rpc.rpc.framing import encode_frame
from sema_rpc.rpc.host import Host
from sema_rpc.rpc.listen import Listener, open_listener
from sema_rpc.rpc.notifications import DeltaEncoder, _batched, _notification
from sema_rpc.rpc.server import SemaServer, _snake, connection

if TYPE_CHECKING:
    from sema_rpc.engine.engine import SemaEngine
    from sema_rpc.protocol import (
        EventParams,
        SessionAttachParams,
        SessionListParams,
        SessionListResult,
        WireModel,
    )

log = logging.getLogger(__name__)


@dataclass(eq=False)
class OpenRequest:
    """A server→client request waiting for its first valid answer."""

    id: str
    session_id: str
    agent_id: str
    method: str
    params: dict[str, Any]
    body: bytes
    capability: str
    result_type: type[WireModel]
    answer: asyncio.Future[Any]
    asked: dict[SemaServer, asyncio.Future[Any]] = field(default_factory=dict)
    """The followers it was sent to and have not answered, each with its own future (the
    one its `SemaServer` resolves when the answer arrives)."""


class SharedHost(Host):
    """The engine's bridge and the owner of its sessions, for every connection."""

    shared = True

    def __init__(self, *, record_dir: Path | None = None, one_shot: bool = False):
        super().__init__(self._configure)
        self.record_dir = record_dir
        self.one_shot = one_shot
        self.connections: list[SemaServer] = []
        self._numbers = itertools.count(1)
        self._followers: dict[str, list[SemaServer]] = {}
        self._backlogs: dict[str, Backlog] = {}
        self._open: dict[str, dict[str, OpenRequest]] = {}
        self._deltas = DeltaEncoder()
        self._batched: frozenset[str] | None = None
        self._request_ids = itertools.count(1)
        self.listeners: list[Listener] = []

    # ------------------------------------------------------------------ the engine

    def _configure(self, engine: SemaEngine) -> None:
        from sema_rpc.record.recorder import session_record_dir

        engine.client_answers_permissions = True  # a client may attach to answer
        engine.record_dir = self.record_dir
        engine.session_record_dirs = session_record_dir
        engine.warm_turns = not self.one_shot

    # ------------------------------------------------------------------ listeners

    async def listen(self, spec: str) -> Listener:
        """Open a listener (`unix[:PATH]`, `tcp:127.0.0.1:PORT`); ListenError when it
        cannot be opened (the message says why)."""
        listener = await open_listener(spec, self)
        self.listeners.append(listener)
        return listener

    def close_listeners(self) -> None:
        """Stop accepting, close every socket connection, remove the endpoint files."""
        for listener in self.listeners:
            listener.close()
        self.listeners.clear()

    # ------------------------------------------------------------------ connections

    def attach(self, front: Any) -> None:
        """A connection's front (every `SemaServer` attaches itself when made)."""
        super().attach(front)
        if front not in self.connections:
            front.number = next(self._numbers)
            self.connections.append(front)

    def detach(self, front: Any) -> None:
        """The connection is gone: it follows nothing; what it started goes on."""
        super().detach(front)
        if front in self.connections:
            self.connections.remove(front)
        for session_id in list(self._followers):
            self._unfollow(front, session_id, tell=False)

    def follow(self, conn: SemaServer, session_id: str) -> None:
        followers = self._followers.setdefault(session_id, [])
        if conn not in followers and conn in self.connections:
            followers.append(conn)

    def _unfollow(self, conn: SemaServer, session_id: str, *, tell: bool) -> None:
        followers = self._followers.get(session_id)
        if followers is not None and conn in followers:
            followers.remove(conn)
        for request in list(self._open.get(session_id, {}).values()):
            asked = request.asked.pop(conn, None)
            if asked is not None:
                conn.conn.forget(request.id)
                asked.cancel()
                if tell:
                    conn.conn.cancel_on_wire(request.id, session_id)

    def forget_session(self, session_id: str) -> None:
        """The session is disposed: nothing of it is kept."""
        self._followers.pop(session_id, None)
        self._backlogs.pop(session_id, None)

    # ------------------------------------------------------------------ ClientBridge

    def notify(self, event: EventParams) -> None:
        batched = self._batched
        if batched is None:
            batched = self._batched = _batched()
        batch = event.event in batched
        body = self._deltas.encode(event) if batch else _dumps(_notification(event))
        session_id = event.session_id
        backlog = self._backlogs.get(session_id)
        if backlog is None:
            backlog = self._backlogs[session_id] = Backlog()
        backlog.append(event.seq, body, batch)
        followers = self._followers.get(session_id)
        if followers is None or (not batch and event.event == "session:ready"):
            # A session created, resumed or forked: the connection asking follows it
            # from this first event of its answer.
            followers = self._followers.setdefault(session_id, [])
            creator = connection.get()
            if creator is not None and creator in self.connections and creator not in followers:
                followers.append(creator)
        if not followers:
            return
        frames: list[bytes | None] = [None, None]
        for conn in followers:
            writer = conn.writer
            jsonl = writer.jsonl
            frame = frames[jsonl]
            if frame is None:
                frame = frames[jsonl] = encode_frame(body, jsonl)
            writer.write_frame(body, frame, batch=batch, session=session_id)

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        from sema_rpc.protocol import SERVER_REQUESTS

        spec = SERVER_REQUESTS[event.event]
        msg_id = f"sema-r{next(self._request_ids)}"
        params = {**event.wire(), "requestId": msg_id}
        request = OpenRequest(
            id=msg_id,
            session_id=event.session_id,
            agent_id=event.agent_id,
            method=event.event,
            params=params,
            body=_dumps({"jsonrpc": "2.0", "id": msg_id, "method": event.event, "params": params}),
            capability=_snake(spec.capability),
            result_type=result_type,
            answer=asyncio.get_running_loop().create_future(),
        )
        open_requests = self._open.setdefault(event.session_id, {})
        open_requests[msg_id] = request
        for conn in list(self._followers.get(event.session_id, ())):
            self._offer(request, conn)
        try:
            return await request.answer  # type: ignore[no-any-return]
        except asyncio.CancelledError:  # the turn stopped waiting: withdrawn everywhere
            for conn, asked in list(request.asked.items()):
                conn.conn.forget(msg_id)
                asked.cancel()
                conn.conn.cancel_on_wire(msg_id, event.session_id)
            request.asked.clear()
            raise
        finally:
            open_requests.pop(msg_id, None)

    def _offer(self, request: OpenRequest, conn: SemaServer) -> None:
        """Send the request to `conn` when it can answer it (and has not been asked)."""
        if request.answer.done() or conn in request.asked or conn.writer.closed:
            return
        if not getattr(conn.capabilities, request.capability, False):
            return
        asked = conn.conn.expect(request.id)
        request.asked[conn] = asked
        conn.writer.write(request.body, session=request.session_id)
        asked.add_done_callback(functools.partial(self._answered, request, conn))

    def _answered(self, request: OpenRequest, conn: SemaServer, asked: asyncio.Future[Any]) -> None:
        if asked.cancelled() or request.answer.done():
            return
        request.asked.pop(conn, None)
        result = self._valid(request, asked)
        if result is None:
            if not request.asked:
                request.answer.set_result(None)
            return
        request.answer.set_result(result)
        for other, pending in list(request.asked.items()):
            other.conn.forget(request.id)
            pending.cancel()
            other.conn.cancel_on_wire(request.id, request.session_id)
        request.asked.clear()
        session = self.engine.sessions.get(request.session_id)
        if session is not None:
            from sema_rpc.protocol import RequestResolvedParams

            decision = getattr(result, "decision", None)
            session.bus.emit(
                RequestResolvedParams(
                    request_id=request.id,
                    method=request.method,
                    answered_by=conn.client_label,
                    outcome=decision if isinstance(decision, str) else None,
                ),
                request.agent_id,
            )

    @staticmethod
    def _valid(request: OpenRequest, asked: asyncio.Future[Any]) -> WireModel | None:
        exc = asked.exception()
        if exc is not None:
            log.warning("client answered %s with an error: %s", request.method, exc)
            return None
        try:
            return request.result_type.model_validate(asked.result())
        except ValueError as err:  # pydantic's ValidationError: the body only validates
            log.warning("client answered %s with an invalid result: %s", request.method, err)
            return None

    # ------------------------------------------------------------------ methods

    def attach_session(self, conn: SemaServer, params: SessionAttachParams) -> dict[str, Any]:
        """`session/attach`: the answer; the replay and the open requests follow it, from
        the same step of the loop (`Connection.after_answer`)."""
        from sema_rpc.engine.session import lifecycle
        from sema_rpc.protocol import PendingRequest, SessionAttachResult

        session = self.engine.session(params.session_id)
        last_seq = session.bus.seq
        replay: list[Any] = []
        truncated = False
        if params.after_seq is not None and params.after_seq < last_seq:
            backlog = self._backlogs.get(session.id)
            if backlog is None:
                truncated = True
            else:
                entries, truncated = backlog.after(params.after_seq)
                replay = list(entries)
        self.follow(conn, session.id)
        requests = list(self._open.get(session.id, {}).values())
        ready = session.ready_params()
        state = lifecycle.state(session)
        result = SessionAttachResult(
            session_id=session.id,
            state="idle" if state is lifecycle.State.IDLE else "processing",
            queued_prompts=sum(1 for c in session.life.open if not c.started and not c.cancelled),
            pending_requests=[PendingRequest(method=r.method, params=r.params) for r in requests],
            last_seq=last_seq,
            replayed=len(replay),
            truncated=truncated,
            working_dir=ready.working_dir,
            mode=ready.mode,
            permission_mode=ready.permission_mode,
            model=ready.model,
        )

        def then() -> None:
            writer = conn.writer
            for entry in replay:
                writer.write(entry.body, batch=True, session=session.id)
            for request in requests:
                self._offer(request, conn)

        conn.conn.after_answer(then)
        return result.wire()

    def detach_session(self, conn: SemaServer, session_id: str) -> dict[str, Any]:
        self._unfollow(conn, session_id, tell=True)
        return {}

    def created(self, conn: SemaServer, session_id: str) -> None:
        """`session/create` answered on `conn` (new, resumed or already live): it follows."""
        self.follow(conn, session_id)
        for request in list(self._open.get(session_id, {}).values()):
            self._offer(request, conn)

    async def list_sessions(self, params: SessionListParams) -> SessionListResult:
        """`session/list`, each live session marked (and listed even before its history
        has a message on disk)."""
        from sema_rpc.engine.session import lifecycle
        from sema_rpc.protocol import SessionListItem

        result = await self.engine.list_sessions(params)
        live = {s.id: s for s in self.engine.sessions.values() if not s.disposed}
        seen = set()
        for item in result.sessions:
            session = live.get(item.session_id)
            if session is not None:
                seen.add(item.session_id)
                item.live = True
                idle = lifecycle.state(session) is lifecycle.State.IDLE
                item.state = "idle" if idle else "processing"
        wanted = None
        if params.working_dir is not None:
            wanted = _resolved(params.working_dir)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        extra = []
        for session_id, session in live.items():
            if session_id in seen or (wanted is not None and str(session.working_dir) != wanted):
                continue
            idle = lifecycle.state(session) is lifecycle.State.IDLE
            extra.append(
                SessionListItem(
                    session_id=session_id,
                    working_dir=str(session.working_dir),
                    title=None,
                    updated_at=now,
                    message_count=len(session.history),
                    live=True,
                    state="idle" if idle else "processing",
                )
            )
        result.sessions[:0] = extra
        return result

    # ------------------------------------------------------------------ the end

    async def shutdown(self, grace_s: float = 5.0) -> None:
        """The process ends: every turn is interrupted and every open prompt, on every
        connection, answered (within `grace_s`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        await super().shutdown(grace_s)
        for conn in list(self.connections):
            conn.shutting_down = True
            conn.cancel_prompts()
        waiting = [task for conn in self.connections for task in conn.conn.in_flight()]
        if waiting:
            await asyncio.wait(waiting, timeout=max(0.1, deadline - loop.time()))
        for conn in list(self.connections):
            await conn.writer.drain(max(0.1, deadline - loop.time()))


def _resolved(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))
