"""Generate `schema/` (JSON Schema of the wire) from sema_rpc/protocol.py.

python -m sema_rpc.schema_gen          # rewrite schema/
python -m sema_rpc.schema_gen --check  # exit 1 when schema/ is out of date
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic.json_schema import models_json_schema

from sema_rpc.protocol import (
    METHODS,
    NOTIFICATIONS,
    PROTOCOL_VERSION,
    SERVER_REQUESTS,
    ErrorCode,
)

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
SCHEMA_FILE = "sema-rpc.schema.json"


def build_schema() -> dict[str, Any]:
    # What the server accepts is described in validation mode, what it sends in
    # serialization mode (defaults are then always present).
    accepted: list[Any] = [spec.params for spec in METHODS.values()]
    accepted += [req.result for req in SERVER_REQUESTS.values()]
    sent: list[Any] = [spec.result for spec in METHODS.values() if spec.result is not None]
    sent += list(NOTIFICATIONS.values())
    sent += [req.params for req in SERVER_REQUESTS.values()]
    keys = list(
        dict.fromkeys([(m, "validation") for m in accepted] + [(m, "serialization") for m in sent])
    )
    refs, schema = models_json_schema(
        keys,  # type: ignore[arg-type]
        ref_template="#/$defs/{model}",
        by_alias=True,
    )

    def ref(model: Any, mode: str = "serialization") -> dict[str, str]:
        return refs[(model, mode)]  # type: ignore[index]

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "sema-rpc wire protocol",
        "protocolVersion": PROTOCOL_VERSION,
        "methods": {
            name: {
                "direction": spec.direction,
                "notification": spec.notification,
                "description": spec.doc,
                "params": ref(spec.params, "validation"),
                **({"result": ref(spec.result)} if spec.result is not None else {}),
            }
            for name, spec in METHODS.items()
        },
        "notifications": {name: {"params": ref(model)} for name, model in NOTIFICATIONS.items()},
        "serverRequests": {
            name: {
                "capability": req.capability,
                "description": req.doc,
                "params": ref(req.params),
                "result": ref(req.result, "validation"),
            }
            for name, req in SERVER_REQUESTS.items()
        },
        "errorCodes": {
            k: v for k, v in vars(ErrorCode).items() if not k.startswith("_") and isinstance(v, int)
        },
        "$defs": schema.get("$defs", {}),
    }


def render() -> str:
    return json.dumps(build_schema(), indent=2, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    target = SCHEMA_DIR / SCHEMA_FILE
    text = render()
    if "--check" in argv:
        if not target.exists() or target.read_text() != text:
            print("schema/ is out of date: run `make schema`", file=sys.stderr)
            return 1
        return 0
    SCHEMA_DIR.mkdir(exist_ok=True)
    target.write_text(text)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
