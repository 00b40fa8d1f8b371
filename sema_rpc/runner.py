"""`sema-rpc run`: one prompt, in process, printing the event stream.

`--format jsonl` prints every notification exactly as the server would send it, then the
prompt's answer as a JSON-RPC response (`{"jsonrpc":"2.0","id":1,"result":{...}}`).
`--format text` prints the answer text on stdout and one line per tool call on stderr.
The exit code follows the stop reason (see cli.EXIT_CODES).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from sema_rpc.protocol import (
    EventParams,
    RpcError,
    SessionCreateParams,
    SessionPromptParams,
    WireModel,
)


class PrintingBridge:
    def __init__(self, output_format: str):
        self.format = output_format
        self.out = sys.stdout

    def notify(self, event: EventParams) -> None:
        if self.format == "jsonl":
            line = json.dumps({"jsonrpc": "2.0", "method": event.event, "params": event.wire()})
            self.out.write(line + "\n")
            self.out.flush()
            return
        name = event.event
        if name == "message:text:chunk":
            self.out.write(event.delta)  # type: ignore[attr-defined]
            self.out.flush()
        elif name == "tool:execution:start":
            print(f"→ {event.title}", file=sys.stderr)  # type: ignore[attr-defined]
        elif name == "tool:execution:error":
            print(f"✗ {event.title}: {event.content[:200]}", file=sys.stderr)  # type: ignore[attr-defined]
        elif name == "session:error":
            print(f"error: {event.error.message}", file=sys.stderr)  # type: ignore[attr-defined]

    async def ask(self, event: EventParams, result_type: type[WireModel]) -> WireModel | None:
        return None  # nobody to ask: the permission mode decides


async def run_once(
    prompt: str, *, model: str | None, working_dir: str, output_format: str, permission_mode: str
) -> int:
    from sema_rpc.cli import EXIT_CODES
    from sema_rpc.engine.engine import SemaEngine

    bridge = PrintingBridge(output_format)
    engine = SemaEngine(bridge)
    try:
        ready = await engine.create_session(
            SessionCreateParams(
                working_dir=working_dir, model=model, permission_mode=permission_mode
            )  # type: ignore[arg-type]
        )
        result = await engine.prompt(SessionPromptParams(session_id=ready.session_id, input=prompt))
    except RpcError as exc:
        print(f"sema-rpc: {exc.message}", file=sys.stderr)
        return 2
    answer: dict[str, Any] = result.wire()
    if output_format == "jsonl":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": 1, "result": answer}) + "\n")
    else:
        sys.stdout.write("\n")
    sys.stdout.flush()
    return EXIT_CODES.get(result.stop_reason, 1)
