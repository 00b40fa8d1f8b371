"""Small readers and formatters of JSON values shared by the readers and the page."""

from __future__ import annotations

import json
from typing import Any


def pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def list_of(obj: dict[str, Any], key: str) -> list[Any]:
    value = obj.get(key)
    return value if isinstance(value, list) else []


def dict_of(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def fmt_int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int | float) else "?"
