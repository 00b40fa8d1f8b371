"""Engine events → native notifications: the one place the native dialect maps what the
engine says to what its client reads.

An event is its own notification: `method` is the event's name, `params` its wire form
(`_notification`). The high-rate deltas (text, thinking and tool output chunks) take a
fast path that gives the same bytes (`DeltaEncoder`) and are batched many per write
(framing.py `FrameWriter`).
"""

from __future__ import annotations

from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _escape  # type: ignore[attr-defined]
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from sema_rpc.plain_checks import check_optional_str, check_str
from sema_rpc.rpc.connection import dumps as _dumps
from sema_rpc.rpc.framing import FrameWriter

if TYPE_CHECKING:
    from sema_rpc.protocol import EventParams


_BATCHED = frozenset({"message:text:chunk", "message:thinking:chunk", "tool:execution:update"})
"""The `event` of TextChunkParams, ThinkingChunkParams and ToolExecutionUpdateParams
(tests/test_protocol_modules.py): by name, so that a server's start creates none of their
classes (those of tool calls are created by a turn that calls a tool)."""


def _batched() -> frozenset[str]:
    """High-rate deltas: written at the end of the loop iteration, many per `write(2)` (see
    FrameWriter); every other message is written at once (with the deltas before it)."""
    return _BATCHED


def _notification(event: EventParams) -> dict[str, Any]:
    """The generic form of an event on the wire (a JSON-RPC notification)."""
    return {"jsonrpc": "2.0", "method": event.event, "params": event.wire()}


def _constant_fields(cls: type[EventParams]) -> tuple[str, ...]:
    """The fields of a delta class other than `seq` and `delta`, when each is a string
    (or an optional one); () otherwise (the class is serialised the generic way)."""
    fields = {f.name: f for f in cls.__plain_fields__}
    if "seq" not in fields or "delta" not in fields:
        return ()
    names = tuple(n for n in fields if n not in _VARYING)
    if any(fields[n].check not in _STRING_CHECKS for n in names):
        return ()
    return names


_STRING_CHECKS = (check_str, check_optional_str)

_SEQ_MARK = "\x00seq"
_DELTA_MARK = "\x00delta"
_VARYING = ("seq", "delta")


class DeltaEncoder:
    """The bytes of a high-rate delta notification (`_batched()`: text, thinking and tool
    output chunks) without pydantic or a dict per chunk, identical to the generic
    `_dumps(_notification(event))`.

    A delta's fields are `seq` and `delta`, which change with every chunk, and fields
    that stay the same for many chunks (sessionId, agentId, toolCallId, a message's
    id...). For each set of those constant values the generic serialisation is done
    once, with markers in place of `seq` and `delta`, and cut into three byte strings;
    a chunk is then `head + seq + mid + escaped delta + tail`. So every field of the
    class, present or future, is serialised by the generic path (order, aliases,
    omitted None values), and a field added to a delta class needs no change here:
    a per-message field (a message id) only adds one template per message. Anything the
    template cannot represent (a constant field that is not a string, a marker found in
    a constant value, `delta` before `seq`) goes the generic way."""

    MAX_TEMPLATES = 256
    """Templates kept (one per session × agent × message or tool call); then cleared."""

    def __init__(self) -> None:
        self._templates: dict[tuple[Any, ...], tuple[bytes, bytes, bytes] | None] = {}
        self._constant_fields: dict[type[EventParams], Callable[[dict[str, Any]], Any] | None] = {}

    def encode(self, event: EventParams) -> bytes:
        cls = type(event)
        try:
            constants = self._constant_fields[cls]
        except KeyError:
            names = _constant_fields(cls)
            # the constant values in one C call (a tuple, or the value itself for one name)
            constants = self._constant_fields[cls] = itemgetter(*names) if names else None
        if (
            constants is None
        ):  # not a text-only class: values equal as keys may dump apart (1, True)
            return _dumps(_notification(event))
        values = event.__dict__
        key = (cls, constants(values))
        try:
            template = self._templates[key]
        except KeyError:
            template = self._template(event, key)
        seq, delta = values["seq"], values["delta"]
        if template is None or type(seq) is not int or type(delta) is not str:
            return _dumps(_notification(event))
        head, mid, tail = template
        return b"".join((head, b"%d" % seq, mid, _escape(delta).encode("ascii"), tail))

    def _template(
        self, event: EventParams, key: tuple[Any, ...]
    ) -> tuple[bytes, bytes, bytes] | None:
        message = _notification(event)
        params = message["params"]
        template: tuple[bytes, bytes, bytes] | None = None
        if "seq" in params and "delta" in params:
            params["seq"], params["delta"] = _SEQ_MARK, _DELTA_MARK
            head, *rest = _dumps(message).split(_dumps(_SEQ_MARK))
            if len(rest) == 1:
                mid, *tail = rest[0].split(_dumps(_DELTA_MARK))
                if len(tail) == 1:
                    template = (head, mid, tail[0])
        if len(self._templates) >= self.MAX_TEMPLATES:
            self._templates.clear()
        self._templates[key] = template
        return template


class NativeEvents:
    """Delivers engine events to one native client (its front's `notify`)."""

    def __init__(self, writer: FrameWriter):
        self._writer = writer
        self._batched = _batched()
        self._deltas = DeltaEncoder()

    def notify(self, event: EventParams) -> None:
        if event.event in self._batched:
            self._writer.write(self._deltas.encode(event), batch=True, session=event.session_id)
            return
        self._writer.write(_dumps(_notification(event)), session=event.session_id)
