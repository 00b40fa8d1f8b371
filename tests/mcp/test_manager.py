"""McpManager with real server processes: mcp-server-time and tests/mcp/servers/crashy_server.py."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from sema_rpc.core.processes import supervisor
from sema_rpc.mcp import McpManager, McpServerConfig, load_mcp_config
from sema_rpc.mcp.tool import McpTool
from sema_rpc.tools.base import ToolContext, ToolOutput

CRASHY = str(Path(__file__).parent / "servers" / "crashy_server.py")
TIME = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks use /proc")


def children() -> set[int]:
    """Live (non-zombie) child processes of this test process, but for the process
    guardian (which holds the MCP servers' sessions, and stays for the process's life)."""
    me = os.getpid()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    guardian = supervisor()._guardian
    return found - {guardian.pid} if guardian is not None else found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def server(name: str, argv: list[str]) -> McpServerConfig:
    return McpServerConfig(name=name, command=argv[0], args=argv[1:])


async def call(tool: McpTool, tmp_path: Path, **arguments: object) -> ToolOutput:
    return await tool.call(tool.Input.model_validate(arguments), ToolContext(tmp_path, "s"))


def by_name(manager: McpManager) -> dict[str, McpTool]:
    return {t.name: t for t in manager.tools()}


async def test_time_server_and_a_missing_command(tmp_path: Path) -> None:
    before = children()
    errors: list[tuple[str, str]] = []
    manager = McpManager(on_server_error=lambda n, m: errors.append((n, m)))
    try:
        await manager.start(
            [server("time", TIME), server("ghost", ["no-such-mcp-server-xyz"])], timeout_s=15
        )
        status = {s["name"]: s for s in manager.status()}
        assert status["time"]["state"] == "connected"
        assert "mcp__time__get_current_time" in status["time"]["tools"]
        assert status["ghost"]["state"] == "failed"
        assert "no-such-mcp-server-xyz" in status["ghost"]["error"]
        assert "not found" in status["ghost"]["error"]
        assert status["ghost"]["tools"] == []

        spawned = children() - before
        assert len(spawned) == 1

        tools = by_name(manager)
        assert set(tools) == {"mcp__time__get_current_time", "mcp__time__convert_time"}
        get_time = tools["mcp__time__get_current_time"]
        schema = get_time.input_schema()
        assert schema["type"] == "object" and "timezone" in schema["properties"]
        assert get_time.description

        out = await call(get_time, tmp_path, timezone="Asia/Tokyo")
        assert not out.is_error, out.content
        assert '"timezone": "Asia/Tokyo"' in out.content
        assert "+09:00" in out.content

        bad = await call(get_time, tmp_path, timezone="Not/AZone")
        assert bad.is_error
        assert "Not/AZone" in bad.content
    finally:
        await manager.aclose()
    assert not any(alive(pid) for pid in spawned)
    assert [s["state"] for s in manager.status()] == ["stopped", "failed"]
    assert errors == []


async def test_a_server_that_crashes_after_start(tmp_path: Path) -> None:
    errors: list[tuple[str, str]] = []
    manager = McpManager(on_server_error=lambda n, m: errors.append((n, m)))
    try:
        await manager.start([server("crashy", [sys.executable, CRASHY])])
        tools = by_name(manager)
        assert (await call(tools["mcp__crashy__echo"], tmp_path, text="hello")).content == "hello"
        picture = await call(tools["mcp__crashy__picture"], tmp_path)
        assert picture.content == "[image: image/png, 4 B]"
        failed = await call(tools["mcp__crashy__fail"], tmp_path, reason="because")
        assert failed.is_error and "because" in failed.content
        pid = int((await call(tools["mcp__crashy__pid"], tmp_path)).content)
        assert alive(pid)

        crashed = await call(tools["mcp__crashy__crash"], tmp_path)
        assert crashed.is_error
        assert "'crashy'" in crashed.content

        after = await call(tools["mcp__crashy__echo"], tmp_path, text="again")
        assert after.is_error and "'crashy'" in after.content

        await anyio.sleep(0.3)  # let the server task notice too: still one notice
        assert len(errors) == 1
        name, message = errors[0]
        assert name == "crashy" and "crashy" in message
        assert "crashing now" in message  # the server's stderr tail

        status = manager.status()[0]
        assert status["state"] == "failed" and status["tools"] == []
        assert manager.tools() == []
        with anyio.fail_after(5):
            while alive(pid):
                await anyio.sleep(0.05)
    finally:
        await manager.aclose()
    assert len(errors) == 1


async def test_startup_failures_are_recorded(tmp_path: Path) -> None:
    before = children()
    manager = McpManager()
    try:
        started = time.monotonic()
        await manager.start(
            [
                server("early", [sys.executable, CRASHY, "--exit-at-start"]),
                server("mute", [sys.executable, "-c", "import time; time.sleep(60)"]),
                McpServerConfig("off", "whatever", disabled=True),
            ],
            timeout_s=1.5,
        )
        assert time.monotonic() - started < 4
        status = {s["name"]: s for s in manager.status()}
        assert status["early"]["state"] == "failed"
        assert "exited during startup" in status["early"]["error"]
        assert "refusing to start" in status["early"]["error"]
        assert status["mute"]["state"] == "failed"
        assert "within 1.5s" in status["mute"]["error"]
        assert status["off"]["state"] == "stopped"
        assert manager.tools() == []
    finally:
        await manager.aclose()
    assert not any(alive(pid) for pid in children() - before)


async def test_call_timeout_and_config_errors_in_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "root"))
    (tmp_path / ".sema").mkdir()
    (tmp_path / ".sema" / "mcp.json").write_text("{ nope")
    config = load_mcp_config(
        tmp_path,
        [
            {"name": "crashy", "command": sys.executable, "args": [CRASHY], "env": []},
            {"name": "broken", "args": []},
        ],
    )
    monkeypatch.setenv("SEMA_MCP_TIMEOUT_S", "0.5")
    manager = McpManager()
    try:
        await manager.start(config)
        status = {s["name"]: s for s in manager.status()}
        assert status["crashy"]["state"] == "connected"
        assert status["broken"]["state"] == "failed"
        assert "command" in status["broken"]["error"]
        file_entry = status[str(tmp_path / ".sema" / "mcp.json")]
        assert file_entry["state"] == "failed" and "invalid JSON" in file_entry["error"]

        tools = by_name(manager)
        slow = await call(tools["mcp__crashy__sleep"], tmp_path, seconds=5)
        assert slow.is_error and "timed out" in slow.content and "'crashy'" in slow.content
        echo = await call(tools["mcp__crashy__echo"], tmp_path, text="still here")
        assert echo.content == "still here"

        # An interrupted call (the engine cancels the tool) leaves the connection usable.
        monkeypatch.setenv("SEMA_MCP_TIMEOUT_S", "30")
        with anyio.move_on_after(0.3) as scope:
            await call(tools["mcp__crashy__sleep"], tmp_path, seconds=5)
        assert scope.cancelled_caught
        echo = await call(tools["mcp__crashy__echo"], tmp_path, text="after cancel")
        assert echo.content == "after cancel"
        assert manager.status()[0]["state"] == "connected"
    finally:
        await manager.aclose()


async def test_aclose_while_starting_stops_everything(tmp_path: Path) -> None:
    before = children()
    manager = McpManager()
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            manager.start,
            [server("mute", [sys.executable, "-c", "import time; time.sleep(60)"])],
        )
        with anyio.fail_after(10):  # until the server process is there
            while not children() - before:
                await anyio.sleep(0.02)
        assert len(children() - before) == 1
        await manager.aclose()
    assert manager.status()[0]["state"] == "stopped"
    assert not any(alive(pid) for pid in children() - before)
