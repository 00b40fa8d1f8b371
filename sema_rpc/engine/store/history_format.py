"""The session history's file format: one append-only JSONL file per session.

    $SEMA_ROOT/history/<sessionId>.jsonl        mode 0600, folder 0700

The file is the *comprehensive* history: every completed message, todo list, mode
change, `/clear` and compaction, one JSON object per line, appended and fsync'd as each
completes. The *curated* history (what the model sees) is rebuilt from it on load: the
messages after the last `clear`, starting from the last `compact` marker's messages.

Entries (`t` is the kind, `n` the number of messages written so far, `at` a Unix time):

    {"t":"meta","v":1,"n":0,"at":…,"sessionId":…,"workingDir":…}        first line
    {"t":"message","n":7,"at":…,"role":"assistant","content":[…],"u":{"c":7,"k":1234}}
    {"t":"todos","n":7,"at":…,"todos":[…]}
    {"t":"mode","n":7,"at":…,"mode":"Plan"}
    {"t":"model","n":7,"at":…,"model":"gpt","thinking":null}    session/setModel
    {"t":"usage","n":7,"at":…,"inputTokens":…,"outputTokens":…,"cacheReadTokens":…,
     "cacheWriteTokens":…,"costUsd":0.0123}       the session's running totals, after each
                                                  model response (the last one counts)
    {"t":"clear","n":7,"at":…}
    {"t":"compact","n":7,"at":…,"strategy":"summary","trigger":"auto","tokenBefore":…,
     "tokenCompact":…,"messages":[…the curated history after compaction…]}
    {"t":"rewind","n":7,"at":…,"messageId":"m_…","restore":"both",
     "files":[{"path":…,"found":sha|null|"?","wrote":sha|null}]}      session/rewind
    {"t":"redo","n":7,"at":…}                                         the last rewind undone
    {"t":"title","n":0,"at":…,"title":…}    what the user typed first: its session/list name

A `rewind` with `restore` conversation or both cuts the curated history just before
`messageId` (`cut_before`); a `redo` right after it (no message in between) puts it back.
`files` are what the rewind found and wrote in each file (contents in the session's
checkpoint store, `"?"` unknown), so a resumed session can still redo it.

`u` on an assistant message is the provider's usage for the prompt it answered plus its
output: `k` tokens for the first `c` curated messages. A resumed session starts from that
figure instead of tokenizing its whole history.

A line that does not parse (a torn last line after a kill, garbage, JSON that is not an
object, nesting too deep to read) is one the readers skip; every reader of the file
(`history_reader` for the engine and ACP's replay, the HTML view) reads its lines here
(`iter_entries`), so they agree on what a line says. Lone surrogate escapes (written by
versions before the rule that keeps them out) are dropped from the strings read.

The writer is `history_writer`, the loader `history_reader`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sema_rpc.core.root import sema_root
from sema_rpc.core.secrets import known_secrets, redact_known
from sema_rpc.core.text import SURROGATE_ESCAPE, without_surrogates
from sema_rpc.plain_record import Record

if TYPE_CHECKING:
    from sema_rpc.core.messages import Message

FORMAT_VERSION = 1
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class HistoryError(Exception):
    """The history file exists but cannot be read at all."""


class LoadedHistory(Record):
    # A plain class (every session loads this module; a dataclass costs its creation).
    _fields = (
        "messages",
        "message_count",
        "todos",
        "mode",
        "model",
        "thinking",
        "usage",
        "mark",
        "working_dir",
        "skipped",
        "source",
        "redo",
        "conversation",
    )

    messages: list[Message]
    """The curated history."""
    message_count: int
    """Messages in the comprehensive history (every completed message ever written)."""
    todos: list[dict[str, Any]] | None
    mode: str | None
    model: str | None
    """The model `session/setModel` chose last (a profile name or model spec)."""
    thinking: bool | None
    """Its thinking override (None: the profile's setting)."""
    usage: dict[str, Any] | None
    """The session's running token and cost totals, as last stored."""
    mark: tuple[int, int] | None
    """(curated length, tokens): the provider's last figure, when still valid."""
    working_dir: str | None
    skipped: int
    source: str
    """`jsonl`, or `json` for the older JSON format (not yet imported)."""
    redo: Redo | None
    """The last rewind, when nothing happened since (what a redo puts back)."""
    conversation: list[Message] | None
    """Every message of the file in order, as the conversation stands (a rewind drops
    the messages from the one it went back to, a redo puts them back; compaction and
    `/clear` drop nothing): what a client shows. Only when asked for (`whole`)."""

    def __init__(
        self,
        messages: list[Message] | None = None,
        message_count: int = 0,
        todos: list[dict[str, Any]] | None = None,
        mode: str | None = None,
        model: str | None = None,
        thinking: bool | None = None,
        usage: dict[str, Any] | None = None,
        mark: tuple[int, int] | None = None,
        working_dir: str | None = None,
        skipped: int = 0,
        source: str = "jsonl",
        redo: Redo | None = None,
        conversation: list[Message] | None = None,
    ) -> None:
        self.messages = [] if messages is None else messages
        self.message_count = message_count
        self.todos = todos
        self.mode = mode
        self.model = model
        self.thinking = thinking
        self.usage = usage
        self.mark = mark
        self.working_dir = working_dir
        self.skipped = skipped
        self.source = source
        self.redo = redo
        self.conversation = conversation


class Redo:
    """What `session/rewind {redo: true}` puts back: the last rewind, undone."""

    # A plain class (every session loads this module; a dataclass costs its creation).
    __slots__ = ("files", "history", "restore")

    def __init__(
        self, restore: str, history: list[Message] | None, files: list[dict[str, Any]]
    ) -> None:
        self.restore = restore
        self.history = history
        """The curated history before the rewind (None: it left the conversation alone)."""
        self.files = files
        """`{path, found, wrote}` per file the rewind wrote, as its history entry has them."""


def history_dir() -> Path:
    return sema_root() / "history"


def valid_session_id(session_id: str) -> bool:
    """Session ids name files: letters, digits, `.`, `_`, `-`; 1-128 chars; no leading dot."""
    return bool(_SESSION_ID.fullmatch(session_id))


def history_path(session_id: str) -> Path:
    return history_dir() / f"{session_id}.jsonl"


def seed_json_path(session_id: str) -> Path:
    return history_dir() / f"{session_id}.json"


def dumps(entry: dict[str, Any]) -> bytes:
    """One line of the file: the entry's JSON and a newline."""
    # ASCII: lone surrogates from odd tool output stay valid JSON; never a raw newline.
    # A key the server knows never reaches the file, whatever brought it into the
    # conversation (an @reference, the user's own input): redacted in the values, so
    # the line's own structure can never be touched.
    if secrets := known_secrets():
        entry = _redacted(entry, secrets)
    return json.dumps(entry, separators=(",", ":")).encode("ascii") + b"\n"


def _redacted(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact_known(value, secrets)
    if isinstance(value, dict):
        return {k: _redacted(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v, secrets) for v in value]
    return value


def now() -> float:
    """The `at` of an entry written now."""
    return round(time.time(), 3)


class Entry(NamedTuple):
    """One non-blank line of the file."""

    number: int
    """Its line number, from 1."""
    obj: dict[str, Any] | None
    """What it says; None when it does not parse as a JSON object."""
    torn: bool
    """It does not end with a newline (the last line of a file whose writer was killed
    mid-write, or one still being written)."""


def parse_line(raw: bytes) -> dict[str, Any] | None:
    """A line's object; None when it is blank or does not parse as a JSON object."""
    if not raw.strip():
        return None
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: absurdly nested garbage
        return None
    if not isinstance(obj, dict):
        return None
    if SURROGATE_ESCAPE.search(raw) is not None:  # written before the rule held
        obj = without_surrogates(obj)
    return obj


def iter_entries(lines: Iterable[bytes]) -> Iterator[Entry]:
    """The entries of a file read line by line (an open binary file, or `split_lines`)."""
    for number, raw in enumerate(lines, 1):
        if raw.strip():
            yield Entry(number, parse_line(raw), not raw.endswith(b"\n"))


def split_lines(data: bytes) -> Iterator[bytes]:
    """A file's bytes as its lines, each with its newline (split on newlines only, as
    the file is read line by line)."""
    return iter(BytesIO(data))


def read_entries(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """A history file's lines as they are, read one by one: each line's number and its
    object (None for a line the readers skip). Raises OSError."""
    with open(path, "rb") as f:
        for entry in iter_entries(f):
            yield entry.number, entry.obj


def parse_entries(data: bytes) -> Iterator[Entry]:
    """The entries in a history file's bytes."""
    return iter_entries(split_lines(data))
