"""sema_client: a small asyncio client for the sema-rpc server.

    async with await SemaClient.spawn() as client:
        client.on_permission(lambda request: "allow_once")
        await client.initialize()
        session = await client.create_session("/path/to/project", model="replay/demo")
        async with client.notifications(session.session_id) as events:
            ...

See clients/python/README.md. Depends on the standard library, pydantic, and the wire
models in `sema_rpc.protocol` (shipped in the same distribution).
"""

from sema_client._version import __version__
from sema_client.client import (
    DEFERRED,
    Decision,
    NotificationStream,
    PermissionDecision,
    SemaClient,
    image_block,
    permission_result,
)
from sema_client.errors import SemaClientError, SemaConnectionError, SemaRpcError
from sema_client.events import Event, Notification, parse_notification

__all__ = [
    "DEFERRED",
    "Decision",
    "Event",
    "Notification",
    "NotificationStream",
    "PermissionDecision",
    "SemaClient",
    "SemaClientError",
    "SemaConnectionError",
    "SemaRpcError",
    "__version__",
    "image_block",
    "parse_notification",
    "permission_result",
]
