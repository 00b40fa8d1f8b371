"""What legitimately differs between a recording and its replay, taken out: event `seq`
and timing figures, the order of events inside one concurrent tool batch, working dirs,
message ids (fresh in each run: numbered in order of first appearance) and secrets the
replaying server knows."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sema_rpc.core.secrets import redact

_VOLATILE_KEYS = {"seq", "t"}
_MESSAGE_ID = re.compile(r"\bm_[0-9a-f]{12}\b")


def _scrub(value: Any, replacements: list[tuple[str, str]], ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {
            k: _scrub(v, replacements, ids) for k, v in value.items() if k not in _VOLATILE_KEYS
        }
    if isinstance(value, list):
        return [_scrub(v, replacements, ids) for v in value]
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
        if "m_" in value:
            value = _MESSAGE_ID.sub(lambda m: ids.setdefault(m[0], f"m#{len(ids) + 1}"), value)
        return value
    return value


def normalise(messages: list[dict[str, Any]], replacements: list[tuple[str, str]]) -> list[str]:
    """One canonical line per server message, comparable across runs.

    Events of one tool batch may interleave differently when calls run concurrently,
    so each run of consecutive tool:execution:* events is sorted by call id.
    """
    lines: list[str] = []
    block: list[tuple[str, str]] = []
    ids: dict[str, str] = {}

    def flush() -> None:
        lines.extend(line for _key, line in sorted(block, key=lambda item: item[0]))
        block.clear()

    for message in messages:
        clean = _scrub(message, replacements, ids)
        line = json.dumps(clean, sort_keys=True, ensure_ascii=False)
        method = message.get("method", "")
        if method.startswith("tool:execution:"):
            call_id = (message.get("params") or {}).get("toolCallId", "")
            phase = {"start": "0", "update": "1", "complete": "2", "error": "2"}[
                method.rsplit(":", 1)[1]
            ]
            block.append((f"{call_id}:{phase}:{len(block):06d}", line))
            continue
        flush()
        lines.append(line)
    flush()
    return lines


class MessageIds:
    """Recorded message ids → the ids the replaying server gave the same messages: the
    ids met in the recorded output and in the replayed output, paired in order of first
    appearance. A client message that names a recorded id (a `session/messages` cursor,
    a fork's `messageId`) is sent with the replayed one."""

    def __init__(self) -> None:
        self._recorded: list[str] = []
        self._replayed: list[str] = []
        self._seen: tuple[set[str], set[str]] = (set(), set())
        self._scanned = (0, 0)

    def learn(self, recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> None:
        """Take in the messages added to both outputs since the last call."""
        for side, messages, ids in ((0, recorded, self._recorded), (1, replayed, self._replayed)):
            seen = self._seen[side]
            for message in messages[self._scanned[side] :]:
                for found in _MESSAGE_ID.findall(json.dumps(message)):
                    if found not in seen:
                        seen.add(found)
                        ids.append(found)
        self._scanned = (len(recorded), len(replayed))

    def apply(self, message: Any) -> Any:
        mapping = dict(zip(self._recorded, self._replayed, strict=False))
        if not mapping:
            return message
        text = json.dumps(message)
        if "m_" not in text:
            return message
        return json.loads(_MESSAGE_ID.sub(lambda m: mapping.get(m[0], m[0]), text))


def path_forms(path: str) -> set[str]:
    """The ways a path appears in recorded text: as given, resolved, JSON-escaped."""
    forms = {path, str(Path(path).expanduser().resolve())}
    return forms | {json.dumps(f)[1:-1] for f in forms}


def secrets_redacted(line: str, env: Mapping[str, str]) -> str:
    """What the recorder would have written: the recording was redacted the same way."""
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        value = env.get(name)
        if value and len(value) >= 6:
            line = line.replace(value, "[REDACTED]")
    return redact(line)
