"""Read, Write and Edit through the editor's buffers (`fs/read_text_file`,
`fs/write_text_file`) when the client offers them. The tools keep confinement, the
read-before-write rule and consent; this only changes where the text comes from and
goes to (so the model sees unsaved edits, and open buffers follow its changes)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sema_rpc.protocol import RpcError

if TYPE_CHECKING:
    from sema_rpc.acp.state import AcpPeer
    from sema_rpc.engine.session.session import Session


class AcpEditorFiles:
    """`EditorFiles` (tools/base.py) over the ACP client's `fs/*` methods."""

    def __init__(self, server: AcpPeer, session_id: str, can_read: bool, can_write: bool):
        self.server = server
        self.session_id = session_id
        self.can_read = can_read
        self.can_write = can_write

    async def read_text(self, path: Path) -> str:
        try:
            result = await self.server.request(
                "fs/read_text_file", {"sessionId": self.session_id, "path": str(path)}
            )
        except RpcError as exc:
            raise OSError(exc.message) from exc
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise OSError("the editor's answer has no text content")
        return content

    async def write_text(self, path: Path, text: str) -> None:
        try:
            await self.server.request(
                "fs/write_text_file",
                {"sessionId": self.session_id, "path": str(path), "content": text},
            )
        except RpcError as exc:
            raise OSError(exc.message) from exc


def install_editor_files(server: AcpPeer, session: Session) -> None:
    """Lend the session's tools the editor's file system, as far as the client offers it."""
    fs = server.capabilities.fs
    if fs.read_text_file or fs.write_text_file:
        session.services.editor_files = AcpEditorFiles(
            server, session.id, fs.read_text_file, fs.write_text_file
        )
    else:
        session.services.editor_files = None
