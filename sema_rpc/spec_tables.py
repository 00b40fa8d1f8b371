"""The method, notification and server→client request tables of protocol/README.md,
generated from sema_rpc/protocol.py's registry (METHODS, NOTIFICATIONS, SERVER_REQUESTS).

Each table sits between two marker comments in the spec, which this rewrites:

    <!-- generated:methods -->
    | method | params | result | what it does |
    ...
    <!-- /generated:methods -->

python -m sema_rpc.spec_tables          # rewrite the tables in protocol/README.md
python -m sema_rpc.spec_tables --check  # exit 1 when they are out of date

A shape is written the way the spec writes JSON: `{sessionId, input, delivery?:
"followUp"|"steer"}` — `?` marks an optional field, a closed set of strings is spelled
out, an object inside is expanded one level deep (`{name, version?}`), deeper ones and
free-form values are named by their field only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from sema_rpc.protocol import METHODS, NOTIFICATIONS, SERVER_REQUESTS

SPEC_FILE = Path(__file__).resolve().parent.parent / "protocol" / "README.md"

TABLES = ("methods", "notifications", "server-requests")


def _schema(model: Any, mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True, mode=mode)  # type: ignore[arg-type]
    return schema, schema.get("$defs", {})


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        return _resolve(defs[ref.rsplit("/", 1)[-1]], defs)
    options = [o for o in node.get("anyOf", []) if o.get("type") != "null"]
    if len(options) == 1:
        return _resolve(options[0], defs)
    return node


def _type(node: dict[str, Any], defs: dict[str, Any], depth: int, mode: str) -> str | None:
    """How a field's value is written after `name: `; None: the name alone says enough."""
    node = _resolve(node, defs)
    if "enum" in node and all(isinstance(v, str) for v in node["enum"]):
        return "|".join(f'"{v}"' for v in node["enum"])
    if "const" in node and isinstance(node["const"], str):
        return f'"{node["const"]}"'
    if node.get("type") == "object" and node.get("properties") and depth < 1:
        return _object(node, defs, depth + 1, mode)
    if node.get("type") == "array":
        inner = _resolve(node.get("items", {}), defs)
        if inner.get("type") == "object" and inner.get("properties") and depth < 1:
            return f"[{_object(inner, defs, depth + 1, mode)}]"
    return None


def _optional(field: dict[str, Any], required: bool, mode: str) -> bool:
    """What the client accepts (validation): a field with a default may be left out. What
    the server sends (serialization): every field is sent but one that is null."""
    if mode == "validation":
        return not required
    return any(o.get("type") == "null" for o in field.get("anyOf", []))


def _object(node: dict[str, Any], defs: dict[str, Any], depth: int, mode: str) -> str:
    required = set(node.get("required", []))
    fields = []
    for name, field in node.get("properties", {}).items():
        label = f"{name}?" if _optional(field, name in required, mode) else name
        kind = _type(field, defs, depth, mode)
        fields.append(label if kind is None else f"{label}: {kind}")
    return "{" + ", ".join(fields) + "}"


def shape(model: Any, mode: str = "validation") -> str:
    """`model` as the spec writes it; `none` for a model without fields."""
    if model is None:
        return "—"
    schema, defs = _schema(model, mode)
    if not schema.get("properties"):
        return "none" if mode == "validation" else "`{}`"
    return f"`{_object(schema, defs, 0, mode)}`"


_COMMON = {"sessionId", "agentId", "seq"}
"""Fields every notification carries (described once, above the table)."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def methods_table() -> str:
    rows = ["| method | params | result | what it does |", "|---|---|---|---|"]
    for name, spec in METHODS.items():
        label = f"`{name}` (notification)" if spec.notification else f"`{name}`"
        result = "—" if spec.notification else shape(spec.result, "serialization")
        rows.append(
            f"| {label} | {_cell(shape(spec.params))} | {_cell(result)} | {_cell(spec.doc)} |"
        )
    return "\n".join(rows)


def notifications_table() -> str:
    rows = ["| method | payload (besides the envelope) |", "|---|---|"]
    for name, model in NOTIFICATIONS.items():
        schema, defs = _schema(model, "serialization")
        own = {k: v for k, v in schema.get("properties", {}).items() if k not in _COMMON}
        payload = (
            f"`{_object({**schema, 'properties': own}, defs, 0, 'serialization')}`"
            if own
            else "no other fields"
        )
        rows.append(f"| `{name}` | {_cell(payload)} |")
    return "\n".join(rows)


def server_requests_table() -> str:
    rows = ["| method | capability | params (besides the envelope) | answer | what it asks |"]
    rows.append("|---|---|---|---|---|")
    for name, spec in SERVER_REQUESTS.items():
        schema, defs = _schema(spec.params, "serialization")
        own = {k: v for k, v in schema.get("properties", {}).items() if k not in _COMMON}
        params = f"`{_object({**schema, 'properties': own}, defs, 0, 'serialization')}`"
        rows.append(
            f"| `{name}` | `{spec.capability}` | {_cell(params)} | "
            f"{_cell(shape(spec.result))} | {_cell(spec.doc)} |"
        )
    return "\n".join(rows)


def tables() -> dict[str, str]:
    return {
        "methods": methods_table(),
        "notifications": notifications_table(),
        "server-requests": server_requests_table(),
    }


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- /generated:{name} -->)", re.DOTALL)


def rewrite(text: str) -> str:
    """`text` (the spec) with every generated table replaced. ValueError when the markers
    of a table are missing (it names them)."""
    missing = []
    for name, table in tables().items():
        match = _pattern(name).search(text)
        if match is None:
            missing.append(name)
            continue
        text = text[: match.end(1)] + table + "\n" + text[match.start(2) :]
    if missing:
        raise ValueError(
            f"{SPEC_FILE.name}: no markers for the generated table(s) {', '.join(missing)} "
            "(<!-- generated:NAME --> … <!-- /generated:NAME -->)"
        )
    return text


def main(argv: list[str]) -> int:
    text = SPEC_FILE.read_text(encoding="utf-8")
    try:
        new = rewrite(text)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    if "--check" in argv:
        if new != text:
            print(f"{SPEC_FILE} tables are out of date: run `make generate`", file=sys.stderr)
            return 1
        return 0
    SPEC_FILE.write_text(new, encoding="utf-8")
    print(f"wrote the tables of {SPEC_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
