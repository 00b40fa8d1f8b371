"""The wire types of sessions that last: listing, disposing, deleting, renaming,
paging the transcript, forking, compacting, and checkpoints (rewind, redo, turn diffs).

Part of the wire protocol; `sema_rpc/protocol.py` is its entry point and its registry
(import the models from there).
"""

from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    model_validator,
)

from sema_rpc.protocol_events import (
    EventParams,
)
from sema_rpc.protocol_wire import (
    SessionReadyParams,
    SessionRef,
    TokenUsage,
    WireModel,
)

__all__ = [
    "CompactExecParams",
    "CompactFigures",
    "CompactStrategy",
    "CompactTrigger",
    "PendingRequest",
    "RewindConflict",
    "RewindRestore",
    "SessionAttachParams",
    "SessionAttachResult",
    "SessionClearedParams",
    "SessionCompactParams",
    "SessionCompactResult",
    "SessionDeleteParams",
    "SessionDeleteResult",
    "SessionDetachParams",
    "SessionDisposeParams",
    "SessionDisposeResult",
    "SessionForkParams",
    "SessionForkResult",
    "SessionListItem",
    "SessionListParams",
    "SessionListResult",
    "SessionMessagesParams",
    "SessionMessagesResult",
    "SessionRenameParams",
    "SessionRenameResult",
    "SessionRewindParams",
    "SessionRewindResult",
    "TranscriptContent",
    "TranscriptMessage",
    "TranscriptToolCall",
    "TurnDiffFile",
    "TurnDiffParams",
]

# --------------------------------------------------------------------------- sessions that last
# session/list, session/dispose, session/compact; session:cleared, compact:exec.

CompactTrigger = Literal["auto", "manual", "overflow"]
CompactStrategy = Literal["summary", "truncate", "none"]


class SessionListParams(WireModel):
    working_dir: str | None = Field(
        None, description="Only sessions created in this directory; omitted: every project."
    )


class SessionListItem(WireModel):
    session_id: str
    working_dir: str | None = Field(None, description="Where the session was created.")
    title: str | None = Field(None, description="The first user input (first 100 characters).")
    updated_at: str = Field(description="ISO 8601 UTC time of the last write to its history.")
    message_count: int = Field(description="Messages in the full history on disk.")
    live: bool | None = Field(
        None,
        description="Open in this process (a listening server): `session/attach` joins it. "
        "Omitted otherwise.",
    )
    state: Literal["idle", "processing"] | None = Field(
        None, description="With `live`: what the session is doing now."
    )


class SessionListResult(WireModel):
    sessions: list[SessionListItem] = Field(description="Newest first.")


SessionDisposeParams = SessionRef


class SessionAttachParams(WireModel):
    session_id: str
    after_seq: int | None = Field(
        None,
        ge=0,
        description="Replay every buffered notification with a larger `seq`, then the live "
        "stream; omitted: no replay (the live stream starts after `lastSeq`).",
    )


class PendingRequest(WireModel):
    method: str = Field(description="`tool:permission:request`, `ask:question:request`...")
    params: dict[str, Any] = Field(description="The request's params, `requestId` included.")


class SessionAttachResult(WireModel):
    session_id: str
    state: Literal["idle", "processing"]
    queued_prompts: int = Field(description="Prompts read and not started yet.")
    pending_requests: list[PendingRequest] = Field(
        description="Open consent/question/plan requests; each is also sent to this "
        "connection as a request right after the replay (when it declared the capability)."
    )
    last_seq: int = Field(description="The `seq` of the session's last event so far.")
    replayed: int = Field(description="Notifications replayed after this answer.")
    truncated: bool = Field(
        description="`afterSeq` is older than the buffer: notifications were lost in "
        "between; read `session/messages` for the conversation."
    )
    working_dir: str
    mode: str
    permission_mode: str
    model: str | None = None


SessionDetachParams = SessionRef


class SessionDisposeResult(WireModel):
    disposed: bool = True
    interrupted: bool = Field(False, description="A turn was running and was interrupted.")


class SessionMessagesParams(WireModel):
    session_id: str
    cursor: str | None = Field(
        None, description="`nextCursor` of the previous page; omitted: the first page."
    )
    limit: int = Field(100, ge=1, le=1000, description="Messages per page (1-1000).")


class TranscriptContent(WireModel):
    """A text block, or an image (its media type and workspace path, never its bytes)."""

    type: Literal["text", "image"] = "text"
    text: str | None = None
    media_type: str | None = Field(None, description="images: e.g. `image/png`")
    path: str | None = Field(None, description="images read from a workspace file")


class TranscriptToolCall(WireModel):
    id: str
    name: str
    title: str = Field(description="A short human title, e.g. `Read src/app.py`.")
    input: dict[str, Any] = Field(default_factory=dict)
    status: Literal["completed", "error", "interrupted", "running"] = Field(
        description="`running`: its result has not come yet (the session's turn runs)."
    )
    result: str | None = Field(
        None, description="The tool's result as the model got it (cut past 10,000 characters)."
    )


class TranscriptMessage(WireModel):
    id: str
    role: Literal["user", "assistant"]
    content: list[TranscriptContent] = Field(default_factory=list)
    thinking: str | None = None
    tool_calls: list[TranscriptToolCall] | None = None
    kind: Literal["prompt", "summary", "notice"] | None = Field(
        None,
        description="User messages: `prompt` (what the user sent), `summary` (what a "
        "compaction put in place of the older conversation), `notice` (an interrupt note).",
    )


class SessionMessagesResult(WireModel):
    messages: list[TranscriptMessage] = Field(description="Oldest first.")
    next_cursor: str | None = Field(None, description="Present when more messages follow.")


class SessionForkParams(WireModel):
    session_id: str
    message_id: str | None = Field(
        None,
        description="A user prompt message id: the fork holds the conversation just before "
        "it. Omitted: the whole conversation.",
    )


class SessionForkResult(SessionReadyParams):
    input: str | None = Field(
        None, description="The text of the message forked before (to prefill the input)."
    )


SessionDeleteParams = SessionRef


class SessionDeleteResult(WireModel):
    deleted: bool = Field(
        description="False when the session had nothing on disk (nothing to delete)."
    )


class SessionRenameParams(WireModel):
    session_id: str
    title: str = Field(
        description="The session's new title (spaces collapsed, at most 100 characters); "
        "empty: back to the title its first prompt gave it."
    )


class SessionRenameResult(WireModel):
    title: str | None = Field(
        description="The title `session/list` shows now (null: none yet, no prompt)."
    )


class SessionCompactParams(WireModel):
    session_id: str
    instructions: str | None = Field(
        None, description="Extra instructions for the summary (what to keep, what to focus on)."
    )


class CompactFigures(WireModel):
    strategy: CompactStrategy = Field(
        description="`summary`; `truncate` (the fallback); `none` (nothing was compacted)."
    )
    token_before: int
    token_compact: int
    compact_rate: float = Field(description="tokenCompact / tokenBefore.")
    err_msg: str | None = Field(
        None, description="Why the summary was not used (then `strategy` is `truncate`/`none`)."
    )


class SessionCompactResult(CompactFigures):
    usage: TokenUsage


class CompactExecParams(EventParams, CompactFigures):
    event: ClassVar[str] = "compact:exec"
    trigger: CompactTrigger = Field(
        "auto",
        description="`auto` (threshold), `manual` (`/compact`, `session/compact`), "
        "`overflow` (the provider said the prompt is too long).",
    )


class SessionClearedParams(EventParams):
    event: ClassVar[str] = "session:cleared"


# --------------------------------------------------------------------------- checkpoints


RewindRestore = Literal["code", "conversation", "both"]


class SessionRewindParams(WireModel):
    session_id: str
    message_id: str | None = Field(
        None,
        description="A user prompt's message id: back to the state just before it was sent. "
        "Required unless `redo`.",
    )
    restore: RewindRestore = Field(
        "both",
        description="`code` (files), `conversation` (messages) or `both`. With `redo`: "
        "ignored (the undone rewind's own).",
    )
    redo: bool = Field(False, description="Undo the last rewind (nothing may have run since).")
    force: bool = Field(
        False, description="Restore files the user changed since the agent wrote them too."
    )

    @model_validator(mode="after")
    def _target(self) -> "SessionRewindParams":
        if self.redo and self.message_id is not None:
            raise ValueError("give either messageId or redo: true, not both")
        if not self.redo and not self.message_id:
            raise ValueError("messageId is required (or redo: true)")
        return self


class RewindConflict(WireModel):
    path: str
    reason: Literal["modified", "notCaptured"] = Field(
        description="`modified`: changed since the agent (or a rewind) last wrote it; "
        "`notCaptured`: its earlier content was not kept (a command changed a file it did "
        "not name), so it cannot be restored."
    )


class SessionRewindResult(WireModel):
    rewound: bool = Field(
        description="False when conflicts stopped it (without `force`): nothing changed."
    )
    restore: RewindRestore
    restored_files: list[str] = Field(
        default_factory=list, description="Files written or deleted (workspace-relative)."
    )
    conflicts: list[RewindConflict] = Field(default_factory=list)
    input: str | None = Field(
        None, description="The text of the message rewound to (to prefill the input)."
    )
    message_count: int = Field(
        description="Messages in the conversation afterwards (tool results folded into "
        "their calls, as `session/messages` lists them)."
    )


class TurnDiffFile(WireModel):
    path: str
    status: Literal["added", "modified", "deleted"]
    additions: int
    deletions: int
    diff: str = Field(description="Unified diff of this file over the whole turn.")


class TurnDiffParams(EventParams):
    event: ClassVar[str] = "turn:diff"
    message_id: str | None = Field(None, description="The turn's user message.")
    files: list[TurnDiffFile]
    diff: str = Field(description="Every file's diff, concatenated.")
    truncated: bool = Field(
        False, description="Some diffs were cut (64 KiB per file, 256 KiB in all)."
    )
