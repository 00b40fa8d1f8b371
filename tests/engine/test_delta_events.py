"""A streamed message's chunk events (engine/events.py `delta_events`): built after the
first without validating again, they are the events validation builds."""

from __future__ import annotations

import pydantic
import pytest

from sema_rpc.engine.events import EventBus, delta_events
from sema_rpc.protocol import EventParams, TextChunkParams, ThinkingChunkParams


class _Bridge:
    def __init__(self) -> None:
        self.events: list[EventParams] = []

    def notify(self, event: EventParams) -> None:
        self.events.append(event)

    async def ask(self, event: EventParams, result_type: type) -> None:
        return None


@pytest.mark.parametrize("cls", [TextChunkParams, ThinkingChunkParams])
def test_chunks_are_the_events_validation_builds_and_stamp_apart(cls: type) -> None:
    bridge = _Bridge()
    bus = EventBus("s1", bridge)
    make = delta_events(cls, message_id="m_1")
    deltas = ["first", 'a "q" \\ é\n', "", "\u2028😀"]
    for i, delta in enumerate(deltas):
        bus.emit(make(delta), agent_id="main" if i % 2 else "sub_1")
    for i, (event, delta) in enumerate(zip(bridge.events, deltas, strict=True)):
        expected = cls(delta=delta, message_id="m_1")
        bus.seq = i  # stamp the reference as the bus stamped the chunk
        bus._stamp(expected, "main" if i % 2 else "sub_1")
        assert type(event) is cls
        assert event.model_dump_json(by_alias=True) == expected.model_dump_json(by_alias=True)
        assert event.wire() == expected.wire()
        assert event.model_fields_set == expected.model_fields_set
        assert event.seq == i + 1 and event.session_id == "s1"


def test_a_delta_that_is_not_a_string_is_validated() -> None:
    make = delta_events(TextChunkParams, message_id=None)
    make("ok")
    with pytest.raises(pydantic.ValidationError):
        make(7)  # type: ignore[arg-type]
