"""The native dialect's `initialize` without pydantic and without the event loop: a
plainly valid one is checked by hand and answered from `protocol_names` (generated from
the registries), with the same outcome as its model. The server answers it so before
its models load (server.py); a stdio server, before its event loop exists (cli.py,
frames.read_first). Standard library only, with `protocol_core` and `protocol_names`.
"""

from __future__ import annotations

from typing import Any

import sema_rpc
from sema_rpc import protocol_names
from sema_rpc.protocol_core import PROTOCOL_VERSION

_INITIALIZE_CAPABILITIES = {
    "permissions": "permissions",
    "askQuestion": "ask_question",
    "planExit": "plan_exit",
}


def _initialize_capabilities_plain(params: Any) -> dict[str, bool] | None:
    """`initialize`'s params checked without pydantic, for the common, plainly valid
    shapes only (every key its wire name, every value of its exact type, the supported
    version): the client's capabilities given, by field name. None for anything else,
    which `InitializeParams` then validates (and refuses with its usual -32602 data).
    Equal to what the model gives (tests/test_protocol.py)."""
    if params is None or params == []:
        params = {}
    if type(params) is not dict or not params.keys() <= {
        "protocolVersion",
        "clientInfo",
        "capabilities",
    }:
        return None
    version = params.get("protocolVersion", PROTOCOL_VERSION)
    if type(version) is not int or version != PROTOCOL_VERSION:
        return None
    info = params.get("clientInfo")
    if info is not None and not (
        type(info) is dict
        and info.keys() <= {"name", "version"}
        and type(info.get("name")) is str
        and (info.get("version") is None or type(info["version"]) is str)
    ):
        return None
    caps = params.get("capabilities", {})
    if type(caps) is not dict or not caps.keys() <= _INITIALIZE_CAPABILITIES.keys():
        return None
    if any(type(value) is not bool for value in caps.values()):
        return None
    return {_INITIALIZE_CAPABILITIES[key]: value for key, value in caps.items()}


def initialize_result() -> dict[str, Any]:
    """`initialize`'s result on the wire, built without pydantic (see
    `_initialize_capabilities_plain`); equal to `InitializeResult(...).wire()`
    (tests/test_protocol.py)."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "serverInfo": {"name": "sema-rpc", "version": sema_rpc.__version__},
        "capabilities": {
            "methods": list(protocol_names.METHODS),
            "notifications": list(protocol_names.NOTIFICATIONS),
            "serverRequests": list(protocol_names.SERVER_REQUESTS),
            "promptDelivery": ["followUp", "steer"],
        },
    }


def initialize_answer(params: Any) -> dict[str, Any] | None:
    """`initialize`'s result for `params` when they are plainly valid; None for any
    other (frames.read_first leaves that one to the server)."""
    return None if _initialize_capabilities_plain(params) is None else initialize_result()
