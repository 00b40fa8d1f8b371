"""Replay in another folder (`sema-rpc replay --cwd`): recorded working dirs rewritten in
the client's messages, the saved state and the model's cassettes."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class PathMap:
    """Rewrites recorded working dirs to the folders a replay runs in (`--cwd`): every
    occurrence of a recorded dir that is a whole path prefix (`/a/ws` in `/a/ws/x`, not in
    `/a/ws2`), as given, resolved or JSON-escaped."""

    def __init__(self, pairs: Mapping[str, str]):
        self.pairs = dict(pairs)
        forms: dict[str, str] = {}
        for old, new in pairs.items():
            resolve = lambda p: str(Path(p).expanduser().resolve())  # noqa: E731
            for o, n in ((old, new), (resolve(old), resolve(new))):
                forms.setdefault(o, n)
                for ascii_only in (True, False):
                    forms.setdefault(
                        json.dumps(o, ensure_ascii=ascii_only)[1:-1],
                        json.dumps(n, ensure_ascii=ascii_only)[1:-1],
                    )
        self._to = forms
        alternatives = sorted(forms, key=len, reverse=True)
        self._pattern = (
            re.compile("|".join(re.escape(f) + r"(?![A-Za-z0-9._-])" for f in alternatives))
            if alternatives
            else None
        )

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def apply(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: self._to[m.group(0)], text)

    def apply_json(self, value: Any) -> Any:
        """`value` with every string rewritten."""
        if isinstance(value, str):
            return self.apply(value)
        if isinstance(value, list):
            return [self.apply_json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.apply_json(v) for k, v in value.items()}
        return value


def _rewrite_strings(value: Any, paths: PathMap) -> bool:
    """Rewrite every string inside `value` (a dict or list) in place; True when any changed."""
    changed = False
    items: Any = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in list(items):
        if isinstance(item, str):
            new = paths.apply(item)
            if new != item:
                value[key] = new
                changed = True
        elif isinstance(item, dict | list):
            changed = _rewrite_strings(item, paths) or changed
    return changed


def _argument_fragments(obj: Any) -> list[tuple[Any, dict[str, Any], str]]:
    """The tool-argument fragments one stream event carries: (call key, holder, field)."""
    if not isinstance(obj, dict):
        return []
    kind = obj.get("type")
    delta = obj.get("delta")
    if (
        kind == "content_block_delta"  # Anthropic
        and isinstance(delta, dict)
        and delta.get("type") == "input_json_delta"
        and isinstance(delta.get("partial_json"), str)
    ):
        return [(("anthropic", obj.get("index")), delta, "partial_json")]
    if kind == "response.function_call_arguments.delta" and isinstance(delta, str):  # Responses
        return [(("responses", obj.get("item_id"), obj.get("output_index")), obj, "delta")]
    out: list[tuple[Any, dict[str, Any], str]] = []
    for choice in obj.get("choices") or []:  # Chat Completions
        d = choice.get("delta") if isinstance(choice, dict) else None
        for call in (d.get("tool_calls") or []) if isinstance(d, dict) else []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                out.append((("chat", choice.get("index"), call.get("index")), fn, "arguments"))
    return out


def rewrite_stream_paths(body: str, paths: PathMap) -> str:
    """An SSE response body with the recorded working dirs rewritten (`PathMap`).

    Tool arguments stream in fragments that may cut a path in two, so each call's
    fragments are joined, rewritten, and sent whole in its last fragment (the others
    empty): the parsed call is the same, only the streaming granularity differs. Text
    deltas are rewritten one by one. A body that is not `\n\n`-separated SSE is rewritten
    as plain text."""
    if "\r" in body or "data:" not in body:
        return paths.apply(body)
    events = body.split("\n\n")
    parsed: list[tuple[list[str], int, Any] | None] = []
    calls: dict[Any, list[tuple[int, dict[str, Any], str]]] = {}
    for n, event in enumerate(events):
        lines = event.split("\n")
        data = [i for i, line in enumerate(lines) if line.startswith("data:")]
        obj: Any = None
        if len(data) == 1:
            try:
                obj = json.loads(lines[data[0]][5:])
            except ValueError:
                obj = None
        if obj is None:
            parsed.append(None)
            continue
        parsed.append((lines, data[0], obj))
        for key, holder, name in _argument_fragments(obj):
            calls.setdefault(key, []).append((n, holder, name))
    whole: dict[int, list[tuple[dict[str, Any], str, str]]] = {}
    for fragments in calls.values():
        joined = "".join(holder[name] for _n, holder, name in fragments)
        rewritten = paths.apply(joined)
        for i, (n, holder, name) in enumerate(fragments):
            if rewritten == joined:  # kept as recorded (not rewritten piece by piece)
                value = holder[name]
            else:
                value = rewritten if i == len(fragments) - 1 else ""
            whole.setdefault(n, []).append((holder, name, value))
    out = []
    for n, (event, item) in enumerate(zip(events, parsed, strict=True)):
        if item is None:
            out.append(paths.apply(event))
            continue
        lines, at, obj = item
        changed = _rewrite_strings(obj, paths)
        for holder, name, value in whole.get(n, []):
            if holder[name] != value:  # set after the rewrite above: never rewritten twice
                holder[name] = value
                changed = True
        if changed:
            lines = [*lines]
            lines[at] = "data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            out.append("\n".join(lines))
        else:
            out.append(event)
    return "\n\n".join(out)


def rewrite_cassette_paths(text: str, paths: PathMap) -> str:
    """A JSONL cassette with the recorded working dirs rewritten in every exchange."""
    out = []
    for line in text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        try:
            exchange = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if not isinstance(exchange, dict) or not isinstance(exchange.get("body"), str):
            out.append(line)
            continue
        exchange["body"] = rewrite_stream_paths(exchange["body"], paths)
        if "request" in exchange:
            exchange["request"] = paths.apply_json(exchange["request"])
        out.append(json.dumps(exchange, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(out)
