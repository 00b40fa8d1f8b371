"""Server-sent events as the providers read them: `SseReader` (bytes → dispatched events,
as the SDKs' decoder splits them) and the JSON decoding of an event's data (`loads`, and
`loads_obj` whose objects allow attribute access). Re-exported by `http.py`."""

from __future__ import annotations

import json
from typing import Any


class SseReader:
    """Incremental SSE → (event name, data bytes) for dispatched events, as the SDKs'
    decoder does: CR/LF/CRLF line ends, `:` comments, multi-line data joined by "\\n",
    only `event` and `data` fields kept, events without data not dispatched, a last
    event without its blank line dropped."""

    __slots__ = ("_data", "_event", "_rest", "_skip_lf")

    def __init__(self) -> None:
        self._rest = b""
        self._skip_lf = False
        self._event: bytes | None = None
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[tuple[bytes | None, bytes]]:
        if self._skip_lf:  # the previous chunk ended with CR: this LF completes a CRLF
            self._skip_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        buf = self._rest + chunk if self._rest else chunk
        if b"\r" in buf:
            self._skip_lf = buf.endswith(b"\r")
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._rest = lines.pop()
        out: list[tuple[bytes | None, bytes]] = []
        data = self._data
        for line in lines:
            if not line:  # end of an event
                if data:
                    out.append((self._event, data[0] if len(data) == 1 else b"\n".join(data)))
                    data = self._data = []
                self._event = None
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b"event:"):
                value = line[6:]
                self._event = value[1:] if value.startswith(b" ") else value
            elif line == b"data":
                data.append(b"")
            # `:` comments, `id:`, `retry:` and unknown fields are ignored
        return out


class Obj(dict):  # type: ignore[type-arg]
    """A JSON object read with attribute access (`ev.delta.text`), None for a missing
    key: the providers' event loops read the SDKs' event models and these the same way."""

    __slots__ = ()
    __getattr__ = dict.get


_DECODER = json.JSONDecoder()
_OBJ_DECODER = json.JSONDecoder(object_hook=Obj)
"""Built once: `json.loads(...)` with options builds a decoder (and its scanner) per call."""


def loads(payload: bytes) -> Any:
    """An SSE event's JSON data. The data is UTF-8 (as the SDKs decode it); bytes that
    are not raise UnicodeDecodeError, a ValueError like bad JSON."""
    return _DECODER.decode(payload.decode("utf-8"))


def loads_obj(payload: bytes) -> Any:
    """`loads`, objects as `Obj`."""
    return _OBJ_DECODER.decode(payload.decode("utf-8"))
