"""The session registry: create (or restore from history), look up, list and dispose
sessions, and the services a session lends its tools (todos, asking the user, plan
approval). `SemaEngine` (engine.py) adds the turns."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sema_rpc.core.config import ConfigError, ModelProfile, resolve_model
from sema_rpc.core.errors import (
    HistoryUnreadable,
    InvalidArgument,
    SessionBusy,
    SessionNotFound,
)
from sema_rpc.core.errors import working_dir as checked_working_dir
from sema_rpc.core.ids import random_uuid_hex
from sema_rpc.core.messages import Message
from sema_rpc.core.policy.permissions import RuleStore
from sema_rpc.engine.events import ClientBridge, EventBus
from sema_rpc.engine.loop.tokens import TokenCounter, TokenTracker, counter_for_model
from sema_rpc.engine.loop.usage import Totals, UsageMeter
from sema_rpc.engine.session import lifecycle
from sema_rpc.engine.session.session import Session, as_dicts, todo_items
from sema_rpc.engine.store.checkpoint_hooks import Checkpoints
from sema_rpc.engine.store.checkpoints import CheckpointStore
from sema_rpc.engine.store.curated import append_curated, cut_before, dangling_tool_results, locate
from sema_rpc.engine.store.history_format import HistoryError, LoadedHistory, valid_session_id
from sema_rpc.engine.store.history_reader import has_history, load_history
from sema_rpc.engine.store.history_writer import HistoryStore
from sema_rpc.engine.store.input_history import InputHistory
from sema_rpc.engine.store.titles import TITLE_CHARS, write_title
from sema_rpc.protocol import (
    ConfigNoModelsParams,
    Mode,
    SessionCreateParams,
    SessionErrorDetail,
    SessionErrorParams,
    SessionReadyEventParams,
    SessionReadyParams,
)
from sema_rpc.sandbox import status as sandbox_status
from sema_rpc.sandbox.settings import SandboxSettings
from sema_rpc.tools.base import FileSnapshot, ToolServices

if TYPE_CHECKING:
    from sema_rpc.protocol import (
        SessionDeleteParams,
        SessionDeleteResult,
        SessionDisposeParams,
        SessionDisposeResult,
        SessionForkParams,
        SessionForkResult,
        SessionListParams,
        SessionListResult,
        SessionMessagesParams,
        SessionMessagesResult,
        SessionRenameParams,
        SessionRenameResult,
    )

log = logging.getLogger(__name__)


NO_MODEL_SUGGESTION = (
    "Set ANTHROPIC_API_KEY or OPENAI_API_KEY (or run `sema-rpc login`), pass `model` (e.g. `anthropic/claude-sonnet-4-5`) "
    "to session/create, or add a profile to $SEMA_ROOT/models.json."
)
DISPOSE_GRACE_S = 10.0


def mcp_start_timeout() -> float:
    """Seconds to wait for a session's MCP servers to start (env SEMA_MCP_START_TIMEOUT_S)."""
    try:
        return float(os.environ.get("SEMA_MCP_START_TIMEOUT_S", "10"))
    except ValueError:
        return 10.0


class SessionRegistry:
    """Every live session of a process, by id."""

    def __init__(self, bridge: ClientBridge):
        self.bridge = bridge
        self.sessions: dict[str, Session] = {}
        self.record_dir: Path | str | None = None
        """`--record DIR`: each session's model exchanges are recorded as a cassette."""
        self.session_record_dirs: Callable[[str, str], Path] | None = None
        """session/create `recordDir` → the session's recording folder, given by the
        recording layer (`(recordDir, sessionId) -> folder`, created on first use; raises
        ValueError for a relative path, OSError when it cannot be created). None: this
        engine cannot record, and a `recordDir` is an error."""
        self.closing = False
        """Set by `shutdown()`: nothing new starts; waiting prompts answer `interrupted`."""
        self.client_answers_permissions = False
        """The client answers consent requests (`permissions`; always in ACP)."""
        self.warm_turns = True
        """Warm a new session's first turn up in the background (`InputPipeline.warm_up`).
        Off for a one-shot (`sema-rpc run`): its prompt follows at once, and the warm-up
        would compete with it for the loop (building every turn model where the prompt
        needs a few)."""

    def _session_record_dir(self, record_dir: str | None, session_id: str) -> Path | None:
        """session/create `recordDir` → the session's recording folder (created now)."""
        if record_dir is None:
            return None
        if self.session_record_dirs is None:
            raise InvalidArgument("recordDir: this server cannot record")
        try:
            return self.session_record_dirs(record_dir, session_id)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from exc
        except OSError as exc:
            raise InvalidArgument(f"cannot record to {record_dir}: {exc.strerror or exc}") from exc

    @staticmethod
    def sandbox_settings(mode: str | None, network: bool) -> SandboxSettings:
        """A session's sandbox: `mode`, or where omitted the default (workspace-write
        where the kernel can, else off). Asking for one the kernel cannot give: refused."""
        available, reason, _abi = sandbox_status()
        if mode is None:
            mode = "workspace-write" if available else "off"
        elif mode != "off" and not available:
            raise InvalidArgument(f"sandbox {mode!r} is not available here: {reason}")
        return SandboxSettings(mode=mode, network=network, reason=reason)

    def session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None or session.disposed:
            raise SessionNotFound(session_id)
        return session

    async def create_session(self, params: SessionCreateParams) -> SessionReadyParams:
        working_dir = checked_working_dir(params.working_dir)  # a stat, not I/O worth a thread
        if params.session_id is not None and not valid_session_id(params.session_id):
            raise InvalidArgument(
                "sessionId must be 1-128 letters, digits, '.', '_' or '-', not starting with "
                f"'.', '_' or '-': {params.session_id!r}",
            )
        profile = resolve_model(params.model)  # ConfigError: the wire says so
        if params.model is not None and profile is None:
            raise InvalidArgument(f"unknown model: {params.model}")

        box = self.sandbox_settings(params.sandbox, params.sandbox_network)
        session_id = params.session_id or random_uuid_hex()
        record_dir = self._session_record_dir(params.record_dir, session_id)
        existing = self.sessions.get(session_id)
        if existing is not None and not existing.disposed:
            existing.record_dir = existing.record_dir or record_dir
            if "check_continuation" in params.model_fields_set:
                existing.check_continuation = params.check_continuation
            return self._ready(existing)

        loaded: LoadedHistory | None = None
        if params.session_id is not None:
            try:
                loaded = await asyncio.to_thread(load_history, session_id)
            except HistoryError as exc:
                raise HistoryUnreadable(str(exc), session_id) from exc
            existing = self.sessions.get(session_id)
            if existing is not None and not existing.disposed:  # created while we read
                existing.record_dir = existing.record_dir or record_dir
                return self._ready(existing)

        session = build_session(
            self.bridge,
            session_id,
            working_dir.resolve(),
            params,
            loaded=loaded,
            profile=profile,
            sandbox=box,
            record_dir=record_dir,
        )
        self.sessions[session_id] = session
        await self._start_mcp(session, params)
        if session.profile is not None:
            from sema_rpc.providers.registry import warm_up

            warm_up(session.profile)
            session.tokens.counter.warm_up()
            if self.warm_turns:
                session.pipeline.warm_up()
        if loaded is not None:
            await self._count_restored(session, loaded)
        else:
            session.set_usage(0)

        ready = self._ready(session)
        if session.services.todos:
            from sema_rpc.protocol import TodosUpdateParams

            session.bus.emit(TodosUpdateParams(todos=todo_items(session.services.todos)))
        if session.profile is None:
            session.bus.emit(
                ConfigNoModelsParams(
                    message="No model is configured.", suggestion=NO_MODEL_SUGGESTION
                )
            )
        return ready

    def _ready(self, session: Session) -> SessionReadyParams:
        ready = session.ready_params()
        session.bus.emit(SessionReadyEventParams(**ready.model_dump()))
        return ready

    async def _count_restored(self, session: Session, loaded: LoadedHistory) -> None:
        """A resumed session's context figure: the provider's persisted one when it
        covers the whole history, else counted with the model's encoding."""
        covered = loaded.mark is not None and loaded.mark[0] == len(session.history)
        if covered:  # the provider's persisted figure counts it all: nothing to tokenize
            session.set_usage(session.tokens.count(session.history))
        elif session.history:
            # Count the overhead with the same encoding as the history, not an estimate
            # taken while the encoding is still loading.
            await session.tokens.counter.ensure_loaded()
            # The system prompt the first turn sends (with its git snapshot): the figure
            # must not depend on whether the background warm-up got there first.
            await session.pipeline.git_snapshot()
            setup = session.pipeline.turn_setup()
            session.tokens.set_overhead(setup.system_prompt, setup.specs)
            session.set_usage(await session.tokens.count_async(session.history))
        else:
            session.set_usage(0)

    async def list_sessions(self, params: SessionListParams) -> SessionListResult:
        from sema_rpc.protocol import SessionListItem, SessionListResult

        working_dir = None
        if params.working_dir is not None:
            working_dir = checked_working_dir(params.working_dir, must_exist=False)
            working_dir = await asyncio.to_thread(working_dir.resolve)
        from sema_rpc.engine.store.listing import list_sessions

        summaries = await asyncio.to_thread(list_sessions, working_dir)
        return SessionListResult(
            sessions=[
                SessionListItem(
                    session_id=s.session_id,
                    working_dir=s.working_dir,
                    title=s.title,
                    updated_at=s.updated_iso,
                    message_count=s.message_count,
                )
                for s in summaries
            ]
        )

    async def _conversation(
        self, session_id: str
    ) -> tuple[list[Message], Session | None, LoadedHistory | None]:
        """The curated history of a live session, or of one on disk (read, not resumed)."""
        live = self.sessions.get(session_id)
        if live is not None and not live.disposed:
            return list(live.history), live, None
        if not valid_session_id(session_id):
            raise SessionNotFound(session_id)
        try:
            loaded = await asyncio.to_thread(load_history, session_id)
        except HistoryError as exc:
            raise HistoryUnreadable(str(exc), session_id) from exc
        if loaded is None:
            raise SessionNotFound(session_id)
        return loaded.messages, None, loaded

    async def session_messages(self, params: SessionMessagesParams) -> SessionMessagesResult:
        """`session/messages`: the conversation for display, one page (transcript.py)."""
        from sema_rpc.engine.session.transcript import transcript
        from sema_rpc.protocol import SessionMessagesResult

        history, _live, _loaded = await self._conversation(params.session_id)
        entries = transcript(history)
        start = 0
        if params.cursor is not None:
            after = next((i for i, e in enumerate(entries) if e.id == params.cursor), None)
            if after is None:
                raise InvalidArgument(
                    f"cursor {params.cursor!r} names no message of session {params.session_id}"
                    " (the conversation was compacted, cleared or rewound since): start again"
                    " without a cursor"
                )
            start = after + 1
        page = entries[start : start + params.limit]
        more = start + params.limit < len(entries)
        return SessionMessagesResult(messages=page, next_cursor=page[-1].id if more else None)

    async def fork_session(self, params: SessionForkParams) -> SessionForkResult:
        """`session/fork`: a new session whose history is the conversation just before a
        prompt (the whole conversation without `messageId`); the original is untouched.
        The fork's messages keep their ids."""
        from sema_rpc.engine.session.transcript import prompt_text
        from sema_rpc.protocol import SessionForkResult

        history, live, loaded = await self._conversation(params.session_id)
        todos: list[Any] | None = None
        text = None
        if params.message_id is not None:
            mid = params.message_id
            found = locate(history, mid)
            if found is None:
                raise InvalidArgument(
                    f"messageId {mid!r} names no message of session {params.session_id}"
                )
            if found.kind != "prompt":
                what = (
                    "an assistant message"
                    if found.role == "assistant"
                    else f"a {found.kind} message"
                    if found.kind
                    else "a tool-result message"
                )
                raise InvalidArgument(
                    f"messageId {mid!r} is {what}: session/fork takes the id of a user prompt"
                    " message (role user, kind prompt)"
                )
            text = prompt_text(found.blocks)
            history = cut_before(history, mid)
        else:
            todos = live.services.todos if live is not None else loaded.todos if loaded else None
        if live is not None:
            working_dir: str | None = str(live.working_dir)
            mode, model = live.mode, live.model_spec
        else:
            assert loaded is not None
            working_dir, mode = loaded.working_dir, wire_mode(loaded.mode) or "Agent"
            # The model the source last ran on, as its resume would pick it (None: the
            # default, also when that model is unusable now).
            recorded = loaded.model and _recorded_model(loaded.model, None, params.session_id)
            model = loaded.model if recorded else None
        if working_dir is None:
            raise InvalidArgument(
                f"session {params.session_id} has no working directory on record: cannot fork it"
            )
        checked = checked_working_dir(working_dir)
        fork_id = random_uuid_hex()
        store = HistoryStore(fork_id, checked.resolve())
        store.import_messages(history, as_dicts(todos) if todos else None)
        store.close()
        await store.synced()
        ready = await self.create_session(
            SessionCreateParams(
                session_id=fork_id,
                working_dir=working_dir,
                mode=mode,
                model=model,
                permission_mode=live.permission_mode if live is not None else "default",
                use_tools=live.use_tools if live is not None else None,
            )
        )
        return SessionForkResult(**ready.model_dump(), input=text)

    async def dispose(self, params: SessionDisposeParams) -> SessionDisposeResult:
        """Interrupt the running turn, wait for it to answer, drop the session from memory.
        Queued prompts answer `interrupted` without running. The history stays on disk."""
        from sema_rpc.protocol import SessionDisposeResult

        session = self.session(params.session_id)
        session.disposed = True
        interrupted = session.control.interrupt("dispose") if session.control else False
        for cancel in list(session.life.open):  # read, not answered: each answers interrupted
            cancel.cancel()
        try:
            await asyncio.wait_for(session.turn_lock.acquire(), DISPOSE_GRACE_S)
            session.turn_lock.release()
        except TimeoutError:
            log.warning("session %s: the turn did not settle before dispose", session.id)
        # Closed: from its answer on, nothing more of the session reaches the client.
        session.life.closed = session.bus.closed = True
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        session.store.close()
        await session.store.synced()
        await self.close_mcp(session)
        session.services.sandbox.close()
        return SessionDisposeResult(disposed=True, interrupted=interrupted)

    async def delete_session(self, params: SessionDeleteParams) -> SessionDeleteResult:
        """Delete a session for good: dropped from memory (its MCP servers stopped), its
        history, seed and checkpoints removed from disk. A session running a turn (or with
        prompts waiting for one) is refused: interrupt it first."""
        from sema_rpc.protocol import SessionDeleteResult, SessionDisposeParams

        if not valid_session_id(params.session_id):
            raise InvalidArgument(f"invalid sessionId: {params.session_id!r}")
        session = self.sessions.get(params.session_id)
        if session is not None and not session.disposed:
            if lifecycle.state(session) is not lifecycle.State.IDLE:
                raise SessionBusy(
                    f"session {session.id} is running a turn: interrupt it before deleting it",
                    session.id,
                )
            await self.dispose(SessionDisposeParams(session_id=session.id))
        from sema_rpc.engine.store.listing import delete_history

        deleted = await asyncio.to_thread(delete_history, params.session_id)
        return SessionDeleteResult(deleted=deleted)

    async def rename_session(self, params: SessionRenameParams) -> SessionRenameResult:
        """Give a session (live, or only on disk) a title of its own, kept beside its
        history; an empty title forgets it. Answers the title `session/list` shows now."""
        from sema_rpc.protocol import SessionRenameResult

        session_id = params.session_id
        if not valid_session_id(session_id):
            raise InvalidArgument(f"invalid sessionId: {session_id!r}")
        live = self.sessions.get(session_id)
        if (live is None or live.disposed) and not await asyncio.to_thread(has_history, session_id):
            raise SessionNotFound(session_id)
        title = " ".join(params.title.split())[:TITLE_CHARS]
        await asyncio.to_thread(write_title, session_id, title or None)
        if title:
            return SessionRenameResult(title=title)
        from sema_rpc.engine.store.listing import list_sessions

        listed = await asyncio.to_thread(list_sessions)
        first = next((s.title for s in listed if s.session_id == session_id), None)
        return SessionRenameResult(title=first)

    async def _start_mcp(self, session: Session, params: SessionCreateParams) -> None:
        from sema_rpc.mcp.paths import any_mcp_file

        if params.mcp_servers is None and not any_mcp_file(session.working_dir):
            return  # nothing configured: the configuration's module is not loaded
        from sema_rpc.mcp import load_mcp_config

        editor = (
            None
            if params.mcp_servers is None
            else [m.model_dump(by_alias=True) for m in params.mcp_servers]
        )
        config = await asyncio.to_thread(load_mcp_config, session.working_dir, editor)
        if not config.servers and not config.errors:
            return
        from sema_rpc.engine.session import project_trust
        from sema_rpc.mcp import McpManager

        # Before anything starts: the project's own servers wait for the user's trust.
        held = await asyncio.to_thread(project_trust.gate, session, config)

        def died(name: str, message: str) -> None:
            if session.mcp is not None:
                session.mcp_status = session.mcp.status()
                session.pipeline.mcp_tools = session.mcp.tools()
            session.bus.emit(
                SessionErrorParams(
                    type="mcp_error",
                    error=SessionErrorDetail(
                        code="mcp_server_died", message=message, details={"server": name}
                    ),
                )
            )

        manager = session.mcp = McpManager(on_server_error=died)
        if held is not None:
            can_ask = self.client_answers_permissions
            manager.hold(held.servers, project_trust.held_reason(session, held, can_ask))
            session.trust_pending = held if can_ask else None
        session.mcp_status = await manager.start(config, timeout_s=mcp_start_timeout())
        session.pipeline.mcp_tools = manager.tools()

    async def close_mcp(self, session: Session) -> None:
        if session.mcp is not None:
            manager, session.mcp = session.mcp, None
            await manager.aclose()


def build_session(
    bridge: ClientBridge,
    session_id: str,
    working_dir: Path,
    params: SessionCreateParams,
    *,
    loaded: LoadedHistory | None,
    profile: ModelProfile | None,
    sandbox: SandboxSettings,
    record_dir: Path | None,
) -> Session:
    """A session built whole: everything it holds is gathered first (what `loaded`, the
    history read back, says; the stores; the model), then it is constructed in one call.
    `working_dir` is resolved; `profile` is the model `params` names (or the default).
    Writes nothing but what a resumed history needs (an older JSON history continued as
    JSONL, the results of tools the process died running)."""
    mode: Mode = params.mode
    model_spec = params.model
    store = HistoryStore(
        session_id,
        working_dir,
        loaded.message_count if loaded is not None and loaded.source == "jsonl" else 0,
    )
    history: list[Message] = []
    todos: list[dict[str, Any]] = []
    meter = UsageMeter()
    if loaded is not None:
        recorded_mode = wire_mode(loaded.mode)
        if recorded_mode is not None and "mode" not in params.model_fields_set:
            mode = recorded_mode
        if loaded.model and params.model is None:
            # The model session/setModel chose last; a model the request names wins.
            chosen = _recorded_model(loaded.model, loaded.thinking, session_id)
            if chosen is not None:
                profile, model_spec = chosen, loaded.model
        history = loaded.messages
        if loaded.source == "json":  # the older JSON format: continue it as JSONL
            store.import_messages(loaded.messages, loaded.todos)
        repair = dangling_tool_results(history)
        if repair is not None:  # the process died while tools ran
            append_curated(history, repair)
            store.append_message(repair)
        todos = loaded.todos or []
        if loaded.usage is not None:
            meter.restore(Totals.from_dict(loaded.usage))
        if loaded.skipped:
            log.warning(
                "session %s: %d unreadable history entries were skipped", session_id, loaded.skipped
            )
    tokens = TokenTracker(counter_for_model(profile.model_name) if profile else TokenCounter(None))
    if loaded is not None and loaded.mark is not None:
        length, counted = loaded.mark
        tokens.set_mark(length, history[length - 1], counted)
    checkpoints = CheckpointStore(session_id, working_dir)
    read_files: dict[str, FileSnapshot] = {}
    # The model the request names is the session's from now on: a resume that names none
    # continues on it. Written with the next prompt's message, so creating or resuming a
    # session without prompting writes nothing.
    names_new_model = (
        params.model is not None
        and profile is not None
        and (loaded is None or loaded.model != params.model)
    )
    return Session(
        id=session_id,
        working_dir=working_dir,
        bus=EventBus(session_id, bridge),
        store=store,
        inputs=InputHistory(working_dir),
        checkpoints=checkpoints,
        rules=RuleStore(working_dir),
        tokens=tokens,
        services=ToolServices(
            todos=todos,
            changes=Checkpoints(checkpoints, read_files),
            sandbox=sandbox,
        ),
        read_files=read_files,
        mode=mode,
        permission_mode=params.permission_mode,
        model_spec=model_spec,
        profile=profile,
        use_tools=params.use_tools,
        history=history,
        history_loaded=loaded is not None and loaded.message_count > 0,
        redo=loaded.redo if loaded is not None else None,
        meter=meter,
        record_dir=record_dir,
        unrecorded_model=params.model if names_new_model else None,
        check_continuation=params.check_continuation,
    )


_MODES: dict[str | None, Mode] = {"Agent": "Agent", "Plan": "Plan"}


def wire_mode(value: str | None) -> Mode | None:
    """A mode a history recorded, if it is one the wire knows."""
    return _MODES.get(value)


def _recorded_model(spec: str, thinking: bool | None, session_id: str) -> ModelProfile | None:
    """The profile of the model a history recorded, or None (logged) when it no longer
    resolves (a profile removed from models.json, a key gone): the session then resumes
    with the default model rather than not at all."""
    try:
        profile = resolve_model(spec)
    except ConfigError as exc:
        log.warning("session %s: its model %r is unusable now (%s)", session_id, spec, exc)
        return None
    if profile is not None and thinking is not None and thinking != profile.thinking:
        profile = profile.replace(thinking=thinking)
    return profile
