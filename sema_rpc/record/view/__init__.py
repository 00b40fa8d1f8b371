"""`sema-rpc view`: a session as one self-contained HTML page.

Input: a recording (`--record`'s `wire.jsonl`, or its run folder), a session history
(`<sema root>/history/<id>.jsonl`), or a session id looked up in the history folder. The
kind is told from the content, not the name.

The page needs nothing outside itself: CSS, the few lines of script and the SVG chart
are inline, and its Content-Security-Policy forbids every load (only the page's own
script, by hash, may run). Everything that came from the session is HTML-escaped, and
passes through the same redaction the logs use (`core.secrets.redact`) first.

Linear in the input: the file is read line by line into a list of timeline items (text
chunks collected in lists and joined once), then the page is written item by item.

Loaded only by `sema-rpc view`; nothing on the server's path imports it.
"""

from sema_rpc.record.view.cli import view_main
from sema_rpc.record.view.page import render
from sema_rpc.record.view.source import load, resolve_input

__all__ = ["load", "render", "resolve_input", "view_main"]
