"""A session's recent notifications, kept for the clients that attach to it later.

Every notification of a session is encoded once (the bytes its attached connections are
sent) and appended here with its `seq`; the oldest go once the backlog holds `max_items`
notifications or `max_bytes` bytes. Appending costs the same however long the session
has run (a deque append, and a pop for each notification that falls out).

`after(seq)` gives what a client that saw everything up to `seq` missed, in order, and
whether the backlog still reaches back that far: a notification with a larger `seq`
that fell out means the client cannot be brought up to date from here (`truncated`).
A `seq` taken by a server→client request is never in the backlog: an open request is
sent again on attach, an answered one is over.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Entry:
    seq: int
    body: bytes
    batch: bool
    """A high-rate delta (the writer may hold it to the end of the loop iteration)."""


class Backlog:
    MAX_ITEMS = 20_000
    MAX_BYTES = 32 * 1024 * 1024

    __slots__ = ("_bytes", "_entries", "dropped_seq", "max_bytes", "max_items")

    def __init__(self, max_items: int = MAX_ITEMS, max_bytes: int = MAX_BYTES):
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._entries: deque[Entry] = deque()
        self._bytes = 0
        self.dropped_seq = 0
        """The largest `seq` that fell out (0: nothing fell out yet)."""

    def append(self, seq: int, body: bytes, batch: bool) -> None:
        entries = self._entries
        entries.append(Entry(seq, body, batch))
        self._bytes += len(body)
        while len(entries) > self.max_items or (self._bytes > self.max_bytes and len(entries) > 1):
            gone = entries.popleft()
            self._bytes -= len(gone.body)
            self.dropped_seq = gone.seq

    def after(self, seq: int) -> tuple[Iterator[Entry], bool]:
        """The entries with a `seq` larger than `seq`, oldest first, and whether some of
        those fell out already (the replay has a hole: `truncated`)."""
        truncated = self.dropped_seq > seq
        return (e for e in self._entries if e.seq > seq), truncated

    def __len__(self) -> int:
        return len(self._entries)
