"""A client in a process of its own: connects to a listening server's Unix socket, attaches
to a session and prints every message it receives, one JSON per line, as it arrives.

    python -m tests.support.socket_tail SOCKET_PATH SESSION_ID AFTER_SEQ
"""

from __future__ import annotations

import json
import socket
import sys


def main() -> None:
    path, session_id, after_seq = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    for msg_id, method, params in [
        (1, "initialize", {"protocolVersion": 1, "clientInfo": {"name": "tail"}}),
        (2, "session/attach", {"sessionId": session_id, "afterSeq": after_seq}),
    ]:
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        sock.sendall(json.dumps(message).encode() + b"\n")
    out = sys.stdout.buffer
    for line in sock.makefile("rb"):
        out.write(line)
        out.flush()


if __name__ == "__main__":
    main()
