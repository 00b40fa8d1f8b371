"""sema_client's use of the wire models without pydantic on its own path: the wire names
of dict params, how a server request's handler errors are answered, and what a handler's
model result becomes on the wire."""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel as pydantic_to_camel
from sema_client import parse_notification
from sema_client._models import to_camel

import sema_rpc.protocol as protocol
from sema_rpc.protocol import PermissionResult, TextChunkParams
from tests.clients.test_sema_client import connect, line


def _field_names() -> set[str]:
    names: set[str] = set()
    for spec in protocol.METHODS.values():
        for model in (spec.params, spec.result):
            if isinstance(model, type) and issubclass(model, BaseModel):
                names.update(model.model_fields)
    for model in protocol.NOTIFICATIONS.values():
        names.update(model.model_fields)
    return names


@pytest.mark.parametrize(
    "extra",
    [["a_1b", "x2_y", "__private", "_lead", "trail_", "a__b", "already_Camel", "HTTP_code",
      "sessionId", "v2", "a1b2_c3d", "", "_", "snake_case_with_many_parts", "é_x"]],
)  # fmt: skip
def test_the_clients_camel_case_is_the_wire_models_alias_rule(extra: list[str]) -> None:
    names = _field_names()
    assert {"session_id", "working_dir", "tool_call_id"} <= names
    for name in [*sorted(names), *extra]:
        assert to_camel(name) == pydantic_to_camel(name), name
        assert to_camel(name) == pydantic_to_camel(name), f"{name} (cached)"


def test_a_notification_that_does_not_validate_passes_on_untyped() -> None:
    typed = parse_notification("message:text:chunk", {"sessionId": "s", "delta": "hi"})
    assert isinstance(typed, TextChunkParams) and typed.delta == "hi"
    untyped = parse_notification("message:text:chunk", {"sessionId": "s", "delta": 42})
    assert untyped.event == "message:text:chunk" and untyped.session_id == "s"
    assert not isinstance(untyped, TextChunkParams)


class _Answer(BaseModel):
    """A handler's own pydantic model (not a protocol one)."""

    model_config = ConfigDict(alias_generator=pydantic_to_camel, populate_by_name=True)
    request_id: str
    note: str | None = None


async def test_handler_errors_and_model_results_on_the_wire() -> None:
    """A handler's pydantic `ValidationError` is answered -32602, any other error (a plain
    `ValueError` too) -32603; a model result, the protocol's or the handler's own pydantic
    one, is sent as JSON with the wire's names and without unset optional fields."""
    client, reader, writer = connect()

    def validates(params: Any) -> Any:
        return PermissionResult.model_validate(params)

    def plain_value_error(_params: Any) -> Any:
        raise ValueError("not a validation")

    client.on_request("x:validates", validates)
    client.on_request("x:plain", plain_value_error)
    client.on_request("x:own", lambda _p: _Answer(request_id="r1"))
    reader.feed_data(line({"jsonrpc": "2.0", "id": 1, "method": "x:validates",
                           "params": {"decision": "perhaps"}}))  # fmt: skip
    reader.feed_data(line({"jsonrpc": "2.0", "id": 2, "method": "x:plain", "params": {}}))
    reader.feed_data(line({"jsonrpc": "2.0", "id": 3, "method": "x:validates",
                           "params": {"decision": "allow_once"}}))  # fmt: skip
    reader.feed_data(line({"jsonrpc": "2.0", "id": 4, "method": "x:own", "params": {}}))
    answers = {m["id"]: m for m in await writer.wait_messages(4)}
    reader.feed_eof()
    await client.close()

    assert answers[1]["error"]["code"] == -32602
    assert answers[1]["error"]["message"].startswith("x:validates: ")
    assert "decision" in answers[1]["error"]["message"]
    with pytest.raises(pydantic.ValidationError):
        PermissionResult.model_validate({"decision": "perhaps"})
    assert answers[2]["error"]["code"] == -32603
    assert "ValueError: not a validation" in answers[2]["error"]["message"]
    assert answers[3]["result"] == {"decision": "allow_once"}
    assert answers[4]["result"] == {"requestId": "r1"}


async def test_typed_calls_take_models_and_dicts_alike() -> None:
    """`client.rpc.X(params)` sends a protocol model with its wire names, and a dict of
    snake_case or camelCase keys the same way (keys it does not know as given)."""
    client, reader, writer = connect()
    calls = [
        asyncio.ensure_future(client.rpc.session_interrupt(protocol.SessionRef(session_id="s1"))),
        asyncio.ensure_future(client.rpc.session_interrupt({"session_id": "s1", "new_key": 1})),
        asyncio.ensure_future(client.rpc.session_interrupt({"sessionId": "s1"})),
    ]
    sent = await writer.wait_messages(3)
    for m in sent:
        reader.feed_data(line({"jsonrpc": "2.0", "id": m["id"], "result": {"interrupted": True}}))
    results = await asyncio.wait_for(asyncio.gather(*calls), 5)
    reader.feed_eof()
    await client.close()
    assert [m["params"] for m in sent] == [
        {"sessionId": "s1"},
        {"sessionId": "s1", "newKey": 1},
        {"sessionId": "s1"},
    ]
    assert all(r.interrupted for r in results)
