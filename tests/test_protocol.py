"""The wire's single source of truth: protocol.py, the generated schema, and the spec."""

from __future__ import annotations

import json
from pathlib import Path

from sema_rpc import protocol
from sema_rpc.schema_gen import SCHEMA_DIR, SCHEMA_FILE, render

REPO = Path(__file__).resolve().parents[1]


def test_schema_is_up_to_date():
    committed = (SCHEMA_DIR / SCHEMA_FILE).read_text()
    assert committed == render(), (
        "schema/ is out of date with sema_rpc/protocol.py. Rewrite it with:\n"
        "    make schema   (or: python -m sema_rpc.schema_gen)"
    )


def test_schema_covers_every_method_notification_and_server_request():
    schema = json.loads((SCHEMA_DIR / SCHEMA_FILE).read_text())
    assert set(schema["methods"]) == set(protocol.METHODS)
    assert set(schema["notifications"]) == set(protocol.NOTIFICATIONS)
    assert set(schema["serverRequests"]) == set(protocol.SERVER_REQUESTS)
    for entry in [*schema["methods"].values(), *schema["notifications"].values()]:
        ref = entry["params"]["$ref"].rsplit("/", 1)[-1]
        assert ref in schema["$defs"]


def test_wire_names_are_camel_case():
    schema = json.loads((SCHEMA_DIR / SCHEMA_FILE).read_text())
    for name, definition in schema["$defs"].items():
        for field in definition.get("properties", {}):
            assert "_" not in field, f"{name}.{field} is not camelCase on the wire"


def test_spec_documents_every_method_notification_and_error_code():
    spec = (REPO / "protocol" / "README.md").read_text()
    for name in [*protocol.METHODS, *protocol.NOTIFICATIONS, *protocol.SERVER_REQUESTS]:
        assert f"`{name}`" in spec, f"protocol/README.md does not document {name}"
    for code in vars(protocol.ErrorCode).values():
        if isinstance(code, int):
            assert str(code) in spec, f"protocol/README.md does not document error {code}"


def test_every_event_model_declares_its_event_name():
    for name, model in protocol.NOTIFICATIONS.items():
        assert model.event == name
    for name, spec in protocol.SERVER_REQUESTS.items():
        assert spec.params.event == name


def test_params_ignore_unknown_fields_and_results_use_aliases():
    params = protocol.SessionPromptParams.model_validate(
        {"sessionId": "s", "input": "x", "newThing": 1}
    )
    assert params.session_id == "s"
    result = protocol.SessionPromptResult(
        stop_reason="end_turn", usage=protocol.TokenUsage(prompt_tokens=3)
    )
    assert result.wire() == {
        "stopReason": "end_turn",
        "usage": {"useTokens": 0, "maxTokens": 0, "promptTokens": 3},
    }


# `initialize` is answered without pydantic (rpc/server.py): the plain check and the
# hand-built result must stay equal to what the models give.
PLAIN_INITIALIZE_PARAMS = [
    None,
    [],
    {},
    {"protocolVersion": 1},
    {"clientInfo": None},
    {"clientInfo": {"name": "nvim"}},
    {"clientInfo": {"name": "vscode", "version": "1.2"}, "capabilities": {}},
    {"clientInfo": {"name": "vscode", "version": None}},
    {"capabilities": {"permissions": True}},
    {
        "protocolVersion": 1,
        "clientInfo": {"name": "e", "version": "0"},
        "capabilities": {"permissions": True, "askQuestion": False, "planExit": True},
    },
]

NOT_PLAIN_INITIALIZE_PARAMS = [
    {"protocolVersion": 2},
    {"protocolVersion": "1"},
    {"protocolVersion": True},
    {"protocolVersion": 1.0},
    {"protocol_version": 1},
    {"unknown": 1},
    {"clientInfo": {}},
    {"clientInfo": {"name": 3}},
    {"clientInfo": {"name": "x", "extra": 1}},
    {"clientInfo": []},
    {"capabilities": []},
    {"capabilities": {"permissions": 1}},
    {"capabilities": {"ask_question": True}},
    {"capabilities": None},
    "text",
    [1],
]


def test_initialize_plain_check_equals_the_model():
    from sema_rpc.rpc.server import _initialize_capabilities_plain

    for params in PLAIN_INITIALIZE_PARAMS:
        fields = _initialize_capabilities_plain(params)
        assert fields is not None, params
        model = protocol.InitializeParams.model_validate({} if params in (None, []) else params)
        assert model.protocol_version == protocol.PROTOCOL_VERSION
        plain = protocol.ClientCapabilities.model_construct(**fields)
        assert plain == model.capabilities, params
        assert plain.model_fields_set == model.capabilities.model_fields_set, params
    for params in NOT_PLAIN_INITIALIZE_PARAMS:  # left to the model (and its errors)
        assert _initialize_capabilities_plain(params) is None, params


def test_protocol_names_are_up_to_date():
    from sema_rpc.schema_gen import NAMES_FILE, render_names

    assert NAMES_FILE.read_text() == render_names(), (
        "sema_rpc/protocol_names.py is out of date with sema_rpc/protocol.py. Rewrite it "
        "with:\n    make generate   (or: python -m sema_rpc.schema_gen)"
    )
    from sema_rpc import protocol_names

    assert protocol_names.METHODS == tuple(protocol.METHODS)
    assert protocol_names.NOTIFICATIONS == tuple(protocol.NOTIFICATIONS)
    assert protocol_names.SERVER_REQUESTS == tuple(protocol.SERVER_REQUESTS)


def test_initialize_result_equals_the_model():
    import sema_rpc
    from sema_rpc.rpc.server import initialize_result

    model = protocol.InitializeResult(
        protocol_version=protocol.PROTOCOL_VERSION,
        server_info=protocol.ServerInfo(version=sema_rpc.__version__),
        capabilities=protocol.ServerCapabilities(
            methods=list(protocol.METHODS),
            notifications=list(protocol.NOTIFICATIONS),
            server_requests=list(protocol.SERVER_REQUESTS),
        ),
    )
    assert json.dumps(initialize_result()) == json.dumps(model.wire())


def test_initialize_is_answered_before_the_models_load():
    """A plainly valid `initialize` is answered with neither pydantic nor the protocol's
    registry loaded; the registry loads at the loop's next turn (still no model: a model's
    module loads when a message needs it), and the next request is served."""
    import subprocess
    import sys

    code = (
        "import asyncio, io, json, sys\n"
        "from sema_rpc.rpc.framing import FrameWriter\n"
        "from sema_rpc.rpc.server import SemaServer\n"
        "heavy = lambda: [m for m in ('pydantic', 'sema_rpc.protocol') if m in sys.modules]\n"
        "async def main():\n"
        "    out = io.BytesIO()\n"
        "    server = SemaServer(FrameWriter(out, jsonl=True))\n"
        '    server.on_body(b\'{"jsonrpc":"2.0","id":1,"method":"initialize",\'\n'
        '                   b\'"params":{"capabilities":{"permissions":true}}}\')\n'
        "    before = heavy()\n"
        "    await asyncio.sleep(0)\n"
        "    after = heavy()\n"
        '    server.on_body(b\'{"jsonrpc":"2.0","id":2,"method":"initialize",\'\n'
        '                   b\'"params":{"protocolVersion":7}}\')\n'
        "    lines = [json.loads(x) for x in out.getvalue().splitlines()]\n"
        "    print(json.dumps({'before': before, 'after': after, 'lines': lines,\n"
        "                      'permissions': server.capabilities.permissions}))\n"
        "asyncio.run(main())\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    seen = json.loads(run.stdout)
    assert seen["before"] == []
    assert seen["after"] == ["sema_rpc.protocol"]
    first, second = seen["lines"]
    assert first["id"] == 1 and first["result"]["capabilities"]["methods"] == list(protocol.METHODS)
    assert second["id"] == 2 and second["error"]["code"] == protocol.ErrorCode.INVALID_PARAMS
    assert second["error"]["data"][0]["type"] == "unsupported_protocol_version"
    assert seen["permissions"] is True
