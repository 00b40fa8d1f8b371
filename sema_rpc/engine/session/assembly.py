"""Assembly: the parts a session's turn runs with, each built in one place.

The provider (with the session's recording taps), the permission policy and tool runner,
the compactor, and the subagent runner the Task tool calls. The engine decides when;
these functions decide how.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sema_rpc.core.config import ModelProfile
from sema_rpc.core.policy.permissions import PermissionPolicy
from sema_rpc.core.stream import Provider
from sema_rpc.engine.loop.compaction import CompactionResult, Compactor, compact_threshold
from sema_rpc.engine.loop.control import TurnControl
from sema_rpc.engine.loop.run_tools import ToolRunner
from sema_rpc.engine.loop.usage import metered
from sema_rpc.tools.base import ToolContext

if TYPE_CHECKING:
    from sema_rpc.engine.loop.continuation import ContinuationCheck
    from sema_rpc.engine.prompt.pipeline import TurnSetup
    from sema_rpc.engine.session.session import Session

log = logging.getLogger(__name__)


def record_to(session: Session, server_record_dir: Path | str | None) -> list[Path]:
    """The cassettes the session's model exchanges go to: its `recordDir`'s and the
    server's `--record` run folder's (none when nothing records)."""
    dirs = [d for d in (session.record_dir, server_record_dir) if d is not None]
    if not dirs:
        return []  # the recording module stays unimported
    from sema_rpc.providers.recording import cassette_path

    return [cassette_path(d, session.id) for d in dirs]


def provider(session: Session, server_record_dir: Path | str | None) -> Provider:
    """The session's model, recorded where the session records, its usage counted on the
    session's meter."""
    from sema_rpc.providers.registry import provider_for

    profile = session.profile
    assert profile is not None
    inner = provider_for(profile, record_to=record_to(session, server_record_dir) or None)
    return metered(inner, session.meter, profile.price)


def subagent_providers(
    session: Session, server_record_dir: Path | str | None
) -> Callable[[ModelProfile], Provider]:
    """How a subagent gets its provider (its model may differ from the session's)."""
    from sema_rpc.providers.registry import provider_for

    def get(profile: ModelProfile) -> Provider:
        replaying = session.profile is not None and session.profile.provider == "replay"
        if profile is session.profile or replaying:
            # A replayed session plays its subagents' calls from its cassette too.
            return provider(session, server_record_dir)
        # Recorded to the session's cassette(s), between the main agent's exchanges.
        inner = provider_for(profile, record_to=record_to(session, server_record_dir) or None)
        return metered(inner, session.meter, profile.price)

    return get


def tool_runner(
    session: Session, setup: TurnSetup, control: TurnControl, *, client_answers: bool
) -> ToolRunner:
    """The turn's policy and tool runner, kept on the session while the turn runs: a mode
    change applies to the turn's next tool call, not only to the next turn."""
    context = ToolContext(
        working_dir=session.working_dir,
        session_id=session.id,
        read_files=session.read_files,
        services=session.services,
    )
    policy = PermissionPolicy(
        mode=session.permission_mode,
        store=session.rules,
        client_can_answer=client_answers,
    )
    runner = ToolRunner(
        tools=setup.accepted,
        context=context,
        policy=policy,
        bus=session.bus,
        control=control,
        plan_mode=session.mode == "Plan",
    )
    session.policy, session.runner = policy, runner
    return runner


def arm_subagents(
    session: Session,
    setup: TurnSetup,
    control: TurnControl,
    policy: PermissionPolicy,
    server_record_dir: Path | str | None,
) -> None:
    """The Task tool's service for this turn (and its tools, after a context rebuild).
    The subagent runner's module loads when a Task call runs, not for every turn."""

    async def run_subagent(
        subagent_type: str, description: str, prompt: str, *, tool_call_id: str = ""
    ) -> str:
        from sema_rpc.engine.session.subagents import SubagentRunner

        runner = SubagentRunner(
            session, setup, control, policy, subagent_providers(session, server_record_dir)
        )
        return await runner(subagent_type, description, prompt, tool_call_id=tool_call_id)

    session.services.run_subagent = run_subagent


def continuation_check(
    session: Session, server_record_dir: Path | str | None
) -> ContinuationCheck | None:
    """The session's continuation check (None when off): on the quick model (the `quick`
    pointer of models.json), else on the session's model."""
    if not session.check_continuation or session.profile is None:
        return None
    from sema_rpc.core.config import ConfigError, load_models, resolve_model
    from sema_rpc.engine.loop.continuation import ContinuationCheck

    profile = session.profile
    replaying = profile.provider == "replay"
    try:
        if not replaying and "quick" in load_models().pointers:
            profile = resolve_model(None, pointer="quick") or profile
    except ConfigError as exc:
        log.warning("quick model unusable (%s); the continuation check uses the session's", exc)
    if profile is session.profile:
        return ContinuationCheck(provider(session, server_record_dir), profile.model_name)
    return ContinuationCheck(
        subagent_providers(session, server_record_dir)(profile), profile.model_name
    )


def compactor(
    session: Session, control: TurnControl, server_record_dir: Path | str | None
) -> Compactor:
    """The session's compactor for one turn: a compaction is recorded in the history
    file and announced with the new usage."""
    profile = session.profile
    assert profile is not None

    def compacted(result: CompactionResult) -> None:
        if result.messages is not None:
            session.store.append_compaction(
                result.messages,
                strategy=result.strategy,
                trigger=result.trigger,
                tokenBefore=result.token_before,
                tokenCompact=result.token_compact,
                **({"errMsg": result.err_msg} if result.err_msg else {}),
            )
        session.set_usage(result.token_compact)
        session.bus.emit(session.usage_event())

    return Compactor(
        provider=provider(session, server_record_dir),
        model=profile.model_name,
        max_tokens=profile.max_tokens,
        context_length=profile.context_length,
        tracker=session.tokens,
        bus=session.bus,
        control=control,
        state=session.compaction,
        threshold=compact_threshold(),
        on_compacted=compacted,
        reminders=session.pipeline.standing_reminders,
    )
