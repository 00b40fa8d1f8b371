"""`sema-rpc attach [SESSION]`: follow a session another sema-rpc process hosts, live.

A server started with `--listen` (or `sema-rpc serve`, or `sema-rpc run --listen`) writes
`$SEMA_ROOT/run/<pid>.json`: its endpoint (`unix:/abs/path` or `tcp:127.0.0.1:PORT`), the
token file of a TCP listener, its working directory. `attach` reads those files, skips the
ones whose process is gone, asks each live server for its live sessions (`session/list`
entries marked `live`), and attaches to one (`session/attach`) with the Python client
(`sema_client.SemaClient`) over the socket, Content-Length framing.

What it prints: the earlier conversation, briefly (`session/messages`: the last messages,
each cut to a few lines), then the live stream as `sema-rpc run --format text` prints it
(the answer text on stdout, one line per tool call on stderr). Consent requests, questions
and plan approvals are asked at the terminal; the first client to answer wins, and when
another one did, the question is withdrawn and the line says who answered. A line typed
while the session is idle is sent as a prompt; while it works, as a steer
(`session/prompt` with `delivery: "steer"`). Ctrl-C interrupts the running turn; Ctrl-D
(end of input) detaches: the session goes on in its server.

A unix socket is connected to only when the path is a socket owned by this user: a path
left by someone else is never followed.

Modules: `discovery` finds live servers and their sessions and connects; `answers` reads
what a typed line answers; `session` follows one attached session at the terminal;
`command` is the command line.
"""
