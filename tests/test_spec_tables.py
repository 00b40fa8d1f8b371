"""The tables of protocol/README.md generated from protocol.py's registry."""

from __future__ import annotations

import pytest

from sema_rpc import protocol
from sema_rpc.spec_tables import SPEC_FILE, TABLES, rewrite, shape, tables


def test_spec_tables_are_up_to_date():
    text = SPEC_FILE.read_text(encoding="utf-8")
    assert rewrite(text) == text, (
        "protocol/README.md's method, notification or server-request table is out of date "
        "with sema_rpc/protocol.py. Rewrite them with:\n"
        "    make generate   (or: python -m sema_rpc.spec_tables)"
    )


def _spec(body: str = "old rows") -> str:
    parts = [f"<!-- generated:{name} -->\n{body}\n<!-- /generated:{name} -->" for name in TABLES]
    return "# Spec\n\nintro\n\n" + "\n\nprose between\n\n".join(parts) + "\n\nthe end\n"


def test_rewrite_fills_each_table_between_its_markers_and_keeps_the_prose():
    text = rewrite(_spec())
    assert "old rows" not in text
    assert text.startswith("# Spec\n\nintro\n\n") and text.endswith("\n\nthe end\n")
    assert text.count("prose between") == len(TABLES) - 1
    for table in tables().values():
        assert table in text
    assert rewrite(text) == text, "rewriting an up-to-date spec changes nothing"


def test_missing_markers_are_named():
    with pytest.raises(ValueError, match="server-requests"):
        rewrite(_spec().replace("<!-- /generated:server-requests -->", ""))


def test_every_method_notification_and_server_request_has_a_row():
    rendered = tables()
    for name, spec in protocol.METHODS.items():
        assert f"| `{name}`" in rendered["methods"]
        assert spec.doc.replace("|", "\\|") in rendered["methods"]
    for name in protocol.NOTIFICATIONS:
        assert f"| `{name}` |" in rendered["notifications"]
    for name, request in protocol.SERVER_REQUESTS.items():
        assert f"| `{name}` | `{request.capability}` |" in rendered["server-requests"]


def test_shapes_are_written_as_the_spec_writes_json():
    # What the client may leave out is marked `?`; closed sets of strings are spelled out.
    assert (
        shape(protocol.SessionPromptParams) == '`{sessionId, input, delivery?: "followUp"|"steer"}`'
    )
    assert shape(protocol.InitializeParams) == (
        "`{protocolVersion?, clientInfo?: {name, version?}, "
        "capabilities?: {permissions?, askQuestion?, planExit?}, token?}`"
    )
    # What the server sends: only a null field may be absent.
    assert shape(protocol.SessionInterruptResult, "serialization") == "`{interrupted}`"
    assert shape(protocol.EmptyParams) == "none"
