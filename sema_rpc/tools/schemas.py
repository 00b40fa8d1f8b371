"""The built-in tools' cards, generated ahead (`make generate`) instead of at start.

`Tool.input_schema()` is what every model request carries for each offered tool; pydantic
builds it from the tool's `Input` model, a few ms a tool on the way to a session's first
answer, and importing every tool's module to offer it costs more. For the built-in and
agent tools a card (name, description, read-only flag, input schema) is built here once,
at generation, into `sema_rpc/data/tool_schemas.json` (keyed `module:QualName`, the class
that defines it): the registry offers those tools from their cards and imports a tool's
module only when it is first used (tools/registry.py), and `input_schema()` builds the
schema itself only for a class the file does not name (MCP tools, a subclass, a test's
tool). A drift test compares the file with the tools as they are now
(tests/tools/test_tool_schemas.py).

    python -m sema_rpc.tools.schemas           # rewrite the file
    python -m sema_rpc.tools.schemas --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .base import TOOL_SCHEMAS_FILE, Tool, ToolCard


def render() -> str:
    """The file's text for the tools as they are now."""
    from .registry import AGENT_TOOLS, BUILTIN_TOOLS

    cards: dict[str, Any] = {}
    for cls in [*BUILTIN_TOOLS, *AGENT_TOOLS]:
        card = ToolCard.of(cls)
        cards[card.ref] = card.as_json()
    return json.dumps(cards, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TOOL_SCHEMAS_FILE.exists() or TOOL_SCHEMAS_FILE.read_text("utf-8") != text:
            print(f"{TOOL_SCHEMAS_FILE} is out of date: run `make generate`", file=sys.stderr)
            return 1
        return 0
    TOOL_SCHEMAS_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {TOOL_SCHEMAS_FILE}")
    return 0


__all__ = ["Tool", "main", "render"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
