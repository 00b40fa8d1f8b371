"""The wire of a session's settings: the methods changing its mode, permission mode,
sandbox and model (and `model/list`), and the events announcing each change.

Part of the wire protocol; `sema_rpc/protocol.py` is its entry point and its registry
(import the models from there). Not imported by a turn that changes no setting.
"""

from typing import ClassVar

from pydantic import Field

from sema_rpc.protocol_events import EventParams
from sema_rpc.protocol_wire import Mode, PermissionMode, SandboxMode, SandboxState, WireModel

__all__ = [
    "ModeUpdateEventParams",
    "ModeUpdateParams",
    "ModeUpdateResult",
    "ModelInfo",
    "ModelListParams",
    "ModelListResult",
    "ModelPrice",
    "ModelUpdateParams",
    "PermissionModeUpdateParams",
    "PermissionModeUpdateResult",
    "SandboxUpdateParams",
    "SessionSetModelParams",
    "SessionSetModelResult",
    "SessionSetSandboxParams",
    "SessionSetSandboxResult",
]


class ModeUpdateParams(WireModel):
    session_id: str
    mode: Mode


class ModeUpdateResult(WireModel):
    mode: Mode


class PermissionModeUpdateParams(WireModel):
    session_id: str
    permission_mode: PermissionMode


class PermissionModeUpdateResult(WireModel):
    permission_mode: PermissionMode


class SessionSetSandboxParams(WireModel):
    session_id: str
    mode: SandboxMode
    network: bool | None = Field(
        None, description="Allow TCP inside the sandbox; omitted: unchanged."
    )


SessionSetSandboxResult = SandboxState


class ModelListParams(WireModel):
    session_id: str | None = Field(
        None, description="With a live session's id, the result's `current` names its model."
    )


class ModelPrice(WireModel):
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


class ModelInfo(WireModel):
    name: str = Field(description="what `session/setModel` and `session/create` take")
    provider: str
    model: str = Field(description="the provider's model id")
    context_length: int
    images: bool = Field(description="the model takes image input")
    thinking: bool = Field(description="extended thinking is on by default")
    default: bool = Field(description="a session created without `model` uses this one")
    price: ModelPrice | None = Field(None, description="absent: no known price")


class ModelListResult(WireModel):
    models: list[ModelInfo]
    current: str | None = Field(None, description="the session's model, with `sessionId`")


class SessionSetModelParams(WireModel):
    session_id: str
    model: str = Field(description="a name from `model/list` (or any `session/create` model)")
    thinking: bool | None = Field(None, description="omitted: the profile's setting")


class SessionSetModelResult(WireModel):
    model: str
    thinking: bool


# --------------------------------------------------------------------------- their events


class ModeUpdateEventParams(EventParams):
    event: ClassVar[str] = "mode:update"
    mode: Mode


class SandboxUpdateParams(EventParams, SandboxState):
    """The session's sandbox changed (`session/setSandbox`); the next command runs in it."""

    event: ClassVar[str] = "sandbox:update"


class ModelUpdateParams(EventParams):
    """The session's model changed (`session/setModel`); the next model call uses it."""

    event: ClassVar[str] = "model:update"
    model: str = Field(description="the name, as in `model/list`")
    provider: str
    model_name: str = Field(description="the provider's model id")
    context_length: int
    images: bool
    thinking: bool
