"""The VS Code client's wire types (clients/vscode/src/protocol.ts) follow schema/."""

from __future__ import annotations

from sema_rpc.ts_gen import ROOT, TS_FILE, render


def test_protocol_ts_is_up_to_date_with_the_schema() -> None:
    assert TS_FILE.exists(), "clients/vscode/src/protocol.ts is missing: run `make schema`"
    assert TS_FILE.read_text() == render(), (
        f"{TS_FILE.relative_to(ROOT)} is out of date with schema/: run\n"
        "    make schema   (or: python -m sema_rpc.ts_gen)"
    )


def test_protocol_ts_names_every_method_notification_and_server_request() -> None:
    from sema_rpc.protocol import METHODS, NOTIFICATIONS, SERVER_REQUESTS

    text = TS_FILE.read_text()
    for name in [*METHODS, *NOTIFICATIONS, *SERVER_REQUESTS]:
        assert f'"{name}":' in text, name
