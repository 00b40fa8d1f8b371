"""A local port where connections are refused, safe under parallel test workers.

Binding port 0 and closing the socket hands the port back to the kernel, which may give
it to a parallel worker's listener before the test connects. This port stays bound (never
listening) for the life of the process: a connection to it is refused, and nothing else
can take it.
"""

from __future__ import annotations

import socket

_held: socket.socket | None = None


def refusing_port() -> int:
    """A 127.0.0.1 port nothing listens on, reserved for this process's lifetime."""
    global _held
    if _held is None:
        _held = socket.socket()
        _held.bind(("127.0.0.1", 0))
    return _held.getsockname()[1]
