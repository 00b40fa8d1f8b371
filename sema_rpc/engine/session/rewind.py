"""session/rewind: back to just before a prompt — its files (`code`), its messages
(`conversation`) or both — and `redo`, which undoes the last rewind.

Files come from the session's checkpoint store (store/checkpoints.py); messages from
the curated history (`store.curated.cut_before`). The history file stays append-only: a
rewind is a `rewind` entry, a redo a `redo` entry, both applied again at load. Runs while
the session has no turn (the engine holds the session's turn lock meanwhile).

Conflicts: a file the user changed since the agent (or a rewind) last wrote it, and a
file whose earlier content was never captured, are listed; without `force` nothing
changes then. With `force` the first kind is overwritten, the second left as it is.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sema_rpc.core.errors import InvalidArgument
from sema_rpc.core.messages import Message
from sema_rpc.core.policy.paths import display_path
from sema_rpc.engine.session.transcript import prompt_text, transcript
from sema_rpc.engine.store.checkpoint_index import Content
from sema_rpc.engine.store.checkpoints import RestorePlan
from sema_rpc.engine.store.curated import cut_before, find_message, message_kind, split_parts
from sema_rpc.engine.store.history_format import Redo
from sema_rpc.protocol import ConversationUsageParams

if TYPE_CHECKING:
    from sema_rpc.engine.session.session import Session
    from sema_rpc.protocol import SessionRewindParams, SessionRewindResult


def transcript_count(history: list[Message]) -> int:
    """Messages as `session/messages` lists them (tool results folded into their calls)."""
    return len(transcript(history))


def prompt_input(history: list[Message], message_id: str) -> str | None:
    """What the user sent in that prompt (without the reminders the engine added)."""
    found = find_message(history, message_id)
    if found is None:
        return None
    for mid, _kind, blocks in split_parts(history[found[0]]):
        if mid == message_id:
            return prompt_text(blocks)
    return None


def _encode(content: Content) -> str | None:
    return "?" if content.lost else content.sha


def _decode(value: Any) -> Content:
    if value == "?":
        return Content(None, lost=True)
    return Content(value if isinstance(value, str) else None)


async def rewind(session: Session, params: SessionRewindParams) -> SessionRewindResult:
    if params.redo:
        return await _redo(session, params)
    store = session.checkpoints
    assert params.message_id is not None  # the params' validator: a rewind names one
    message_id = params.message_id
    restore = params.restore
    history = session.history
    await asyncio.to_thread(store.load)
    in_conversation = find_message(history, message_id) is not None
    if in_conversation:
        kind = message_kind(history, message_id)
        if kind != "prompt":
            what = kind or "tool-result or assistant"
            raise InvalidArgument(
                f"messageId {message_id} is a {what} message, not a user prompt: rewind to "
                "a prompt's id (the session/prompt result's messageId)"
            )
    elif restore != "code" or message_id not in store.turn_pos:
        raise InvalidArgument(
            f"messageId {message_id}: no prompt with that id in the session's conversation"
            + ("" if restore == "code" else " (a cleared or compacted one cannot be rewound to)")
        )

    plan = RestorePlan()
    if restore in ("code", "both"):
        start = _start_of(session, message_id)
        plan = await asyncio.to_thread(store.plan_rewind, start)
    text = prompt_input(history, message_id)
    if plan.conflicts and not params.force:
        return _result(session, False, restore, [], plan, text)

    written = await asyncio.to_thread(store.apply, plan) if plan.targets else []
    saved: list[Message] | None = None
    if restore in ("conversation", "both"):
        saved = list(history)
        history[:] = cut_before(history, message_id)
    files = [{"path": p, "found": _encode(f), "wrote": _encode(w)} for p, f, w in written]
    session.redo = Redo(restore, saved, files)
    session.store.append_event("rewind", messageId=message_id, restore=restore, files=files)
    if saved is not None:
        await _conversation_changed(session)
    await session.synced()
    return _result(session, True, restore, [p for p, _f, _w in written], plan, text)


def _start_of(session: Session, message_id: str) -> int:
    """Where in the store's events the turn of `message_id` starts. A prompt whose turn
    recorded nothing starts where the next recorded turn after it in the conversation
    does (or at the end: nothing to undo)."""
    store = session.checkpoints
    if message_id in store.turn_pos:
        return store.turn_pos[message_id]
    found = find_message(session.history, message_id)
    later: list[int] = []
    if found is not None:
        for message in session.history[found[0] :]:
            for mid, _kind, _blocks in split_parts(message):
                if mid is not None and mid in store.turn_pos:
                    later.append(store.turn_pos[mid])
    return min(later, default=len(store.events))


async def _redo(session: Session, params: SessionRewindParams) -> SessionRewindResult:
    redo = session.redo
    store = session.checkpoints
    if redo is None:
        raise InvalidArgument(
            "nothing to redo: no rewind since the last prompt (a prompt, /clear or a "
            "compaction after a rewind makes it final)"
        )
    files = [(str(f["path"]), _decode(f.get("found")), _decode(f.get("wrote"))) for f in redo.files]
    plan = await asyncio.to_thread(store.plan_redo, files) if files else RestorePlan()
    restore = redo.restore
    if plan.conflicts and not params.force:
        return _result(session, False, restore, [], plan, None)
    written = await asyncio.to_thread(store.apply, plan) if plan.targets else []
    if redo.history is not None:
        session.history[:] = redo.history
    session.redo = None
    session.store.append_event("redo")
    if redo.history is not None:
        await _conversation_changed(session)
    await session.synced()
    return _result(session, True, restore, [p for p, _f, _w in written], plan, None)


async def _conversation_changed(session: Session) -> None:
    """The curated history was replaced: what the model has seen of files, and the
    context size, follow it."""
    session.read_files.clear()
    session.tokens.reset()
    if session.history:
        await session.tokens.counter.ensure_loaded()
        setup = session.pipeline.turn_setup()
        session.tokens.set_overhead(setup.system_prompt, setup.specs)
        session.set_usage(await session.tokens.count_async(session.history))
    else:
        session.set_usage(0)
    session.bus.emit(ConversationUsageParams(usage=session.usage))


def _result(
    session: Session,
    rewound: bool,
    restore: Any,
    written: list[str],
    plan: RestorePlan,
    text: str | None,
) -> SessionRewindResult:
    from sema_rpc.protocol import RewindConflict, SessionRewindResult

    root = session.working_dir
    return SessionRewindResult(
        rewound=rewound,
        restore=restore,
        restored_files=[_shown(p, root) for p in written],
        conflicts=[
            RewindConflict(path=_shown(c.path, root), reason=c.reason) for c in plan.conflicts
        ],
        input=text,
        message_count=transcript_count(session.history),
    )


def _shown(path: str, root: Path) -> str:
    return display_path(Path(path), root)


async def emit_turn_diff(session: Session, message_id: str | None) -> None:
    """`turn:diff` at the end of a turn that changed files."""
    store = session.checkpoints
    if message_id is None or message_id not in store.turn_pos:
        return
    diffs, truncated = await asyncio.to_thread(store.diffs, message_id)
    if not diffs:
        return
    from sema_rpc.protocol import TurnDiffFile, TurnDiffParams

    session.bus.emit(
        TurnDiffParams(
            message_id=message_id,
            files=[
                TurnDiffFile(
                    path=d.path,
                    status=d.status,
                    additions=d.additions,
                    deletions=d.deletions,
                    diff=d.diff,
                )
                for d in diffs
            ],
            diff="".join(d.diff for d in diffs),
            truncated=truncated,
        )
    )
