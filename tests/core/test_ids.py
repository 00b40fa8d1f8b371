"""core/ids.py: ids in the shapes `uuid` would give them."""

from __future__ import annotations

import uuid

from sema_rpc.core.ids import random_hex, random_uuid_hex
from sema_rpc.core.messages import new_message_id


def test_a_random_uuid_is_a_version_4_uuid_written_as_uuid4_hex_writes_it():
    ids = {random_uuid_hex() for _ in range(200)}
    assert len(ids) == 200
    for value in ids:
        parsed = uuid.UUID(hex=value)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert parsed.hex == value


def test_random_hex_and_message_ids():
    assert all(len(random_hex(12)) == 12 for _ in range(50))
    assert int(random_hex(12), 16) >= 0
    ids = {new_message_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(i.startswith("m_") and len(i) == 14 and int(i[2:], 16) >= 0 for i in ids)
