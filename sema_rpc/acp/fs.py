"""Read, Write and Edit through the editor's buffers (`fs/read_text_file`,
`fs/write_text_file`) when the client offers them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sema_rpc.acp.server import AcpServer
    from sema_rpc.engine.session import Session


def install_editor_files(server: AcpServer, session: Session) -> None:
    """Lend the session's tools the editor's file system, as far as the client offers it."""
    return None
