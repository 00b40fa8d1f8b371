"""The scripted model server (tests/support/scripted_llm.py) driven from Node over stdio.

Prints one JSON line `{"url", "openaiUrl"}` once listening, then answers one JSON line per
command line read from stdin:

    {"cmd": "script", "replies": [<reply>, ...]}  -> {"pending": n}
    {"cmd": "requests"}                           -> {"count": n, "paths": [...], "bodies": [...]}
                                                     (bodies with "bodies": true)
    {"cmd": "open", "gate": "name"}               -> {"opened": "name"}
    {"cmd": "reset"}                              -> {"pending": 0}

A reply is `{"text"?, "chunks"?, "deltas"?, "thinking"?, "tools"?: [[name, input, id?]],
"usage"?: [in, out], "delay_s"?, "gate"?: "name", "error"?: status}`. `deltas` without
`text` streams that many generated words. Ends when stdin closes.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from tests.support.scripted_llm import Reply, ScriptedLLM

gates: dict[str, threading.Event] = {}


def build(spec: dict[str, Any]) -> Reply:
    opts: dict[str, Any] = {}
    if "usage" in spec:
        opts["usage"] = tuple(spec["usage"])
    if "delay_s" in spec:
        opts["delay_s"] = float(spec["delay_s"])
    if "gate" in spec:
        opts["gate"] = gates.setdefault(spec["gate"], threading.Event())
    if "error" in spec:
        return Reply.error(int(spec["error"]), message=spec.get("message"), **opts)
    tools = [tuple(call) for call in spec.get("tools", [])]
    if tools or spec.get("thinking"):
        return Reply.turn(
            text=spec.get("text", ""),
            thinking=spec.get("thinking"),
            tools=tools,  # type: ignore[arg-type]
            chunks=int(spec.get("chunks", 3)),
            **opts,
        )
    return Reply.text(
        spec.get("text"), chunks=spec.get("chunks"), deltas=spec.get("deltas"), **opts
    )


def main() -> None:
    with ScriptedLLM() as llm:
        print(json.dumps({"url": llm.url, "openaiUrl": llm.openai_url}), flush=True)
        for line in sys.stdin:
            if not line.strip():
                continue
            cmd = json.loads(line)
            answer: dict[str, Any]
            if cmd["cmd"] == "script":
                llm.script(*(build(r) for r in cmd["replies"]))
                answer = {"pending": llm.pending}
            elif cmd["cmd"] == "requests":
                answer = {"count": len(llm.requests), "paths": [r.path for r in llm.requests]}
                if cmd.get("bodies"):
                    answer["bodies"] = [r.body for r in llm.requests]
            elif cmd["cmd"] == "open":
                gates.setdefault(cmd["gate"], threading.Event()).set()
                answer = {"opened": cmd["gate"]}
            elif cmd["cmd"] == "reset":
                llm.reset()
                answer = {"pending": 0}
            else:
                answer = {"error": f"unknown command {cmd['cmd']!r}"}
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
