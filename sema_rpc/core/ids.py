"""Random ids, without the `uuid` module: importing it costs every process a few ms at start
(it imports `platform` and more), and an id needs only 16 random bytes."""

from __future__ import annotations

import os


def random_uuid_hex() -> str:
    """A random (version 4) UUID as 32 hex digits: what `uuid.uuid4().hex` returns."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    return raw.hex()


def random_hex(digits: int) -> str:
    """`digits` (even) random hex digits."""
    return os.urandom(digits // 2).hex()
