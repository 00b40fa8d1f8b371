"""Typed calls, one per method of the protocol: `await client.rpc.session_create(params)`.

Generated from sema_rpc/protocol.py (METHODS) by `make generate`
(python -m sema_rpc.client_gen); do not edit by hand.

Each call takes its params as the protocol model or as a dict (snake_case or camelCase;
validated here, and keys this version does not know are sent as given, for newer
servers) and returns the result as the protocol model. Errors are those of
`SemaClient.request()`: `SemaRpcError` for an error answer, `SemaConnectionError` when
the server goes away; `timeout=` or cancelling the caller sends `$/cancelRequest`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import sema_rpc.protocol as protocol
from sema_client._models import to_camel

# The models are read from `protocol` when a call is made: a model's module is loaded on
# first use (sema_rpc/protocol.py), so this module creates none of them.
if TYPE_CHECKING:
    from sema_rpc.protocol import (
        CommandListParams,
        CommandListResult,
        EmptyParams,
        EmptyResult,
        InitializeParams,
        InitializeResult,
        ModelListParams,
        ModelListResult,
        ModeUpdateParams,
        ModeUpdateResult,
        PermissionModeUpdateParams,
        PermissionModeUpdateResult,
        SandboxState,
        SessionAttachParams,
        SessionAttachResult,
        SessionCompactParams,
        SessionCompactResult,
        SessionCreateParams,
        SessionDeleteResult,
        SessionDisposeResult,
        SessionForkParams,
        SessionForkResult,
        SessionInterruptResult,
        SessionListParams,
        SessionListResult,
        SessionMessagesParams,
        SessionMessagesResult,
        SessionPromptParams,
        SessionPromptResult,
        SessionReadyParams,
        SessionRef,
        SessionRenameParams,
        SessionRenameResult,
        SessionRewindParams,
        SessionRewindResult,
        SessionSetModelParams,
        SessionSetModelResult,
        SessionSetSandboxParams,
        ToolListParams,
        ToolListResult,
        WireModel,
    )

__all__ = ["Methods", "Requester"]


class Requester(Protocol):
    """What the typed calls need of a client (`SemaClient` is one); a protocol, so that
    this module and the client do not import each other."""

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> Any: ...

    async def notify(self, method: str, params: Any = None) -> None: ...


def _wire(model: type[WireModel], params: WireModel | Mapping[str, Any] | None) -> Any:
    if params is None:
        return None
    if not isinstance(params, Mapping):  # a protocol model
        return params.wire()
    given = {(to_camel(k) if "_" in k else k): v for k, v in params.items()}
    known = model.model_validate(given).model_dump(mode="json", by_alias=True, exclude_unset=True)
    return {**given, **known}


class Methods:
    """`client.rpc`: the protocol's methods as typed calls."""

    def __init__(self, client: Requester):
        self._client = client

    async def initialize(
        self,
        params: InitializeParams | Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> InitializeResult:
        """`initialize`: Handshake. Declares which server→client requests the client answers."""
        result = await self._client.request(
            "initialize",
            _wire(protocol.InitializeParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.InitializeResult.model_validate(result)

    async def shutdown(
        self,
        params: EmptyParams | Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> EmptyResult:
        """`shutdown`: Stop accepting work; flush history."""
        result = await self._client.request(
            "shutdown",
            _wire(protocol.EmptyParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.EmptyResult.model_validate(result)

    async def exit(self, params: EmptyParams | Mapping[str, Any] | None = None) -> None:
        """`exit`: Exit the process."""
        await self._client.notify("exit", _wire(protocol.EmptyParams, params))

    async def session_create(
        self,
        params: SessionCreateParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionReadyParams:
        """`session/create`: Create a session, or resume one by id. Emits `session:ready`."""
        result = await self._client.request(
            "session/create",
            _wire(protocol.SessionCreateParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionReadyParams.model_validate(result)

    async def session_prompt(
        self,
        params: SessionPromptParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionPromptResult:
        """`session/prompt`: Run one user input. Answers once, when that input's turn ends."""
        result = await self._client.request(
            "session/prompt",
            _wire(protocol.SessionPromptParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionPromptResult.model_validate(result)

    async def session_interrupt(
        self,
        params: SessionRef | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionInterruptResult:
        """`session/interrupt`: Stop the running turn at the next checkpoint. Answers at once; idempotent."""
        result = await self._client.request(
            "session/interrupt",
            _wire(protocol.SessionRef, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionInterruptResult.model_validate(result)

    async def mode_update(
        self,
        params: ModeUpdateParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> ModeUpdateResult:
        """`mode/update`: Switch between Agent and Plan mode. Emits `mode:update`."""
        result = await self._client.request(
            "mode/update",
            _wire(protocol.ModeUpdateParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.ModeUpdateResult.model_validate(result)

    async def permission_mode_update(
        self,
        params: PermissionModeUpdateParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> PermissionModeUpdateResult:
        """`permissionMode/update`: Change who decides tool permissions; applies to the running turn's next call."""
        result = await self._client.request(
            "permissionMode/update",
            _wire(protocol.PermissionModeUpdateParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.PermissionModeUpdateResult.model_validate(result)

    async def session_set_sandbox(
        self,
        params: SessionSetSandboxParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SandboxState:
        """`session/setSandbox`: Change the OS sandbox of the session's commands; applies to the next command. Emits `sandbox:update`."""
        result = await self._client.request(
            "session/setSandbox",
            _wire(protocol.SessionSetSandboxParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SandboxState.model_validate(result)

    async def session_list(
        self,
        params: SessionListParams | Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionListResult:
        """`session/list`: Sessions with a history on disk, newest first; optionally of one project."""
        result = await self._client.request(
            "session/list",
            _wire(protocol.SessionListParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionListResult.model_validate(result)

    async def session_dispose(
        self,
        params: SessionRef | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionDisposeResult:
        """`session/dispose`: Interrupt the session's turn, wait for it, and drop the session from memory."""
        result = await self._client.request(
            "session/dispose",
            _wire(protocol.SessionRef, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionDisposeResult.model_validate(result)

    async def session_delete(
        self,
        params: SessionRef | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionDeleteResult:
        """`session/delete`: Delete a session for good: its history, seed and checkpoints. Refused while a turn runs."""
        result = await self._client.request(
            "session/delete",
            _wire(protocol.SessionRef, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionDeleteResult.model_validate(result)

    async def session_rename(
        self,
        params: SessionRenameParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionRenameResult:
        """`session/rename`: Give a session a title of its own (what `session/list` shows); live or on disk."""
        result = await self._client.request(
            "session/rename",
            _wire(protocol.SessionRenameParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionRenameResult.model_validate(result)

    async def session_compact(
        self,
        params: SessionCompactParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionCompactResult:
        """`session/compact`: Compact the session's history now (like `/compact`). Emits `compact:exec`."""
        result = await self._client.request(
            "session/compact",
            _wire(protocol.SessionCompactParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionCompactResult.model_validate(result)

    async def session_rewind(
        self,
        params: SessionRewindParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionRewindResult:
        """`session/rewind`: Undo turns: files (`code`), messages (`conversation`) or both, back to just before a prompt; or `redo` the last rewind. Refused while a turn runs."""
        result = await self._client.request(
            "session/rewind",
            _wire(protocol.SessionRewindParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionRewindResult.model_validate(result)

    async def session_attach(
        self,
        params: SessionAttachParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionAttachResult:
        """`session/attach`: Follow a live session from this connection (a listening server): its state, a replay after `afterSeq`, then the live stream and its requests."""
        result = await self._client.request(
            "session/attach",
            _wire(protocol.SessionAttachParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionAttachResult.model_validate(result)

    async def session_detach(
        self,
        params: SessionRef | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> EmptyResult:
        """`session/detach`: Stop following a session on this connection; the session and its turn go on."""
        result = await self._client.request(
            "session/detach",
            _wire(protocol.SessionRef, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.EmptyResult.model_validate(result)

    async def session_messages(
        self,
        params: SessionMessagesParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionMessagesResult:
        """`session/messages`: The conversation for display, paged; a live session or one on disk (read-only)."""
        result = await self._client.request(
            "session/messages",
            _wire(protocol.SessionMessagesParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionMessagesResult.model_validate(result)

    async def session_fork(
        self,
        params: SessionForkParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionForkResult:
        """`session/fork`: A new session holding the conversation before a prompt. Emits `session:ready`."""
        result = await self._client.request(
            "session/fork",
            _wire(protocol.SessionForkParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionForkResult.model_validate(result)

    async def command_list(
        self,
        params: CommandListParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> CommandListResult:
        """`command/list`: The custom slash commands of a project (`.sema/commands`) and the user's."""
        result = await self._client.request(
            "command/list",
            _wire(protocol.CommandListParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.CommandListResult.model_validate(result)

    async def tool_list(
        self,
        params: ToolListParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> ToolListResult:
        """`tool/list`: The tools of a session: built-in, skill and MCP, and which are offered now."""
        result = await self._client.request(
            "tool/list",
            _wire(protocol.ToolListParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.ToolListResult.model_validate(result)

    async def model_list(
        self,
        params: ModelListParams | Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> ModelListResult:
        """`model/list`: The models a session can use (models.json profiles), and a session's current one."""
        result = await self._client.request(
            "model/list",
            _wire(protocol.ModelListParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.ModelListResult.model_validate(result)

    async def session_set_model(
        self,
        params: SessionSetModelParams | Mapping[str, Any],
        *,
        timeout: float | None = None,
        msg_id: int | str | None = None,
    ) -> SessionSetModelResult:
        """`session/setModel`: Switch a session's model from its next model call on. Emits `model:update`."""
        result = await self._client.request(
            "session/setModel",
            _wire(protocol.SessionSetModelParams, params),
            timeout=timeout,
            msg_id=msg_id,
        )
        return protocol.SessionSetModelResult.model_validate(result)
