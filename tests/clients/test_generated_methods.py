"""`client.rpc`: the typed calls generated from the protocol's method table."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from sema_client import SemaClient, SemaRpcError
from sema_client._methods import Methods

from sema_rpc.client_gen import METHODS_FILE, method_name, render
from sema_rpc.protocol import (
    METHODS,
    ErrorCode,
    ModeUpdateParams,
    SessionCreateParams,
    SessionReadyParams,
    ToolListResult,
)

MODEL = "anthropic/claude-test"


def test_generated_methods_are_up_to_date():
    assert METHODS_FILE.read_text(encoding="utf-8") == render(), (
        "clients/python/sema_client/_methods.py is out of date with sema_rpc/protocol.py. "
        "Rewrite it with:\n    make generate   (or: python -m sema_rpc.client_gen)"
    )


def test_one_typed_call_per_method():
    names = {name for name, fn in vars(Methods).items() if inspect.iscoroutinefunction(fn)}
    assert names == {method_name(m) for m in METHODS}
    assert method_name("permissionMode/update") == "permission_mode_update"


async def test_typed_calls_against_a_real_server(server_env, workspace: Path):
    async with await SemaClient.spawn(env=server_env) as client:
        init = await client.rpc.initialize({"protocolVersion": 1, "clientInfo": {"name": "t"}})
        assert init.server_info.name == "sema-rpc"
        ready = await client.rpc.session_create(
            SessionCreateParams(working_dir=str(workspace), model=MODEL)
        )
        assert isinstance(ready, SessionReadyParams) and ready.model == MODEL
        tools = await client.rpc.tool_list({"session_id": ready.session_id})
        assert isinstance(tools, ToolListResult)
        assert {"Read", "Write", "Bash"} <= {t.name for t in tools.tools}
        mode = await client.rpc.mode_update(
            ModeUpdateParams(session_id=ready.session_id, mode="Plan")
        )
        assert mode.mode == "Plan"
        with pytest.raises(SemaRpcError) as raised:
            await client.rpc.session_interrupt({"sessionId": "no-such-session"})
        assert raised.value.code == ErrorCode.SESSION_NOT_FOUND
        with pytest.raises(ValueError):  # checked here, before anything is sent
            await client.rpc.session_prompt({"input": "no session id"})
        await client.rpc.shutdown()
        await client.rpc.exit()
        await client.wait_closed()
    assert client.returncode == 0
