"""MCP server configuration: files, the editor's list, precedence, both env shapes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sema_rpc.mcp.config import load_mcp_config, project_mcp_path, user_mcp_path


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    project = tmp_path / "project"
    (project / ".sema").mkdir(parents=True)
    root = tmp_path / "sema-root"
    root.mkdir()
    monkeypatch.setenv("SEMA_ROOT", str(root))
    return project, root


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def test_precedence_editor_over_project_over_user(roots: tuple[Path, Path]) -> None:
    project, root = roots
    assert user_mcp_path() == root / "mcp.json"
    write(
        user_mcp_path(),
        {
            "mcpServers": {
                "shared": {"command": "user-cmd"},
                "both": {"command": "user-both"},
                "mine": {"command": "user-only", "args": ["-v"]},
            }
        },
    )
    write(
        project_mcp_path(project),
        {"mcpServers": {"shared": {"command": "project-cmd"}, "both": {"command": "proj-both"}}},
    )
    editor = [{"name": "shared", "command": "editor-cmd", "args": [], "env": []}]

    config = load_mcp_config(project, editor)

    assert config.errors == []
    by_name = {s.name: s for s in config.servers}
    assert [s.name for s in config.servers] == ["shared", "both", "mine"]
    assert by_name["shared"].command == "editor-cmd"
    assert by_name["shared"].source == "editor"
    assert by_name["both"].command == "proj-both"
    assert by_name["both"].source == str(project_mcp_path(project))
    assert by_name["mine"].command == "user-only"
    assert by_name["mine"].args == ["-v"]
    assert by_name["mine"].cwd == str(project)


def test_both_env_shapes_everywhere(roots: tuple[Path, Path]) -> None:
    project, _ = roots
    write(
        project_mcp_path(project),
        {
            "mcpServers": {
                "dict-env": {"command": "a", "env": {"A": "1", "N": 2}},
                "list-env": {"command": "b", "env": [{"name": "B", "value": "2"}]},
            }
        },
    )
    editor = [
        {"name": "acp", "command": "c", "args": ["x"], "env": [{"name": "C", "value": "3"}]},
        {"name": "acp-dict", "command": "d", "env": {"D": "4"}},
    ]
    config = load_mcp_config(project, editor)
    env = {s.name: s.env for s in config.servers}
    assert env == {
        "acp": {"C": "3"},
        "acp-dict": {"D": "4"},
        "dict-env": {"A": "1", "N": "2"},
        "list-env": {"B": "2"},
    }


def test_variables_expand_in_files_only(
    roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, root = roots
    monkeypatch.setenv("MCP_TEST_TOKEN", "s3cret")
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    # A project file expands only what the user allows in $SEMA_ROOT/settings.json.
    write(root / "settings.json", {"projectEnv": ["MCP_TEST_TOKEN", "MCP_TEST_UNSET"]})
    write(
        project_mcp_path(project),
        {
            "mcpServers": {
                "f": {
                    "command": "srv",
                    "args": ["--token=${MCP_TEST_TOKEN}", "${MCP_TEST_UNSET:-fallback}"],
                    "env": {"TOKEN": "${MCP_TEST_TOKEN}"},
                    "cwd": "sub",
                }
            }
        },
    )
    editor = [{"name": "e", "command": "srv", "args": ["${MCP_TEST_TOKEN}"]}]
    by_name = {s.name: s for s in load_mcp_config(project, editor).servers}
    assert by_name["f"].args == ["--token=s3cret", "fallback"]
    assert by_name["f"].env == {"TOKEN": "s3cret"}
    assert by_name["f"].cwd == str(project / "sub")
    assert by_name["e"].args == ["${MCP_TEST_TOKEN}"]


def test_a_project_file_never_expands_a_secret_or_an_unlisted_variable(
    roots: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sema_rpc.core.secrets import register_secret

    project, root = roots
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-real-key-123456")
    monkeypatch.setenv("PROFILE_KEY", "models-json-key-987654")
    monkeypatch.setenv("NOT_LISTED", "private")
    register_secret("models-json-key-987654")  # a models.json profile's apiKey
    write(root / "settings.json", {"projectEnv": ["ANTHROPIC_API_KEY", "PROFILE_KEY"]})
    entry = {
        "command": "srv",
        "args": ["${ANTHROPIC_API_KEY}", "${PROFILE_KEY}", "${NOT_LISTED:-none}"],
        "env": {"K": "${ANTHROPIC_API_KEY}"},
    }
    write(project_mcp_path(project), {"mcpServers": {"p": entry}})
    write(user_mcp_path(), {"mcpServers": {"u": entry}})
    by_name = {s.name: s for s in load_mcp_config(project).servers}
    assert by_name["p"].args == ["", "", "none"] and by_name["p"].env == {"K": ""}
    assert by_name["u"].args == ["sk-ant-real-key-123456", "models-json-key-987654", "private"]
    assert by_name["u"].env == {"K": "sk-ant-real-key-123456"}


def test_malformed_file_is_an_error_entry_not_a_crash(roots: tuple[Path, Path]) -> None:
    project, _ = roots
    write(project_mcp_path(project), '{"mcpServers": {"x": {"command": "a",}}}')
    write(user_mcp_path(), {"mcpServers": {"ok": {"command": "fine"}}})

    config = load_mcp_config(project)

    assert [s.name for s in config.servers] == ["ok"]
    assert len(config.errors) == 1
    error = config.errors[0]
    assert error.server is None
    assert error.source == str(project_mcp_path(project))
    assert "invalid JSON at line 1" in error.describe()


def test_bad_entries_are_reported_and_shadow_lower_levels(roots: tuple[Path, Path]) -> None:
    project, _ = roots
    write(
        project_mcp_path(project),
        {
            "mcpServers": {
                "nocmd": {"args": ["x"]},
                "web": {"type": "http"},
                "ws": {"type": "websocket", "url": "wss://example.invalid/mcp"},
                "ftp": {"type": "sse", "url": "ftp://example.invalid/mcp"},
                "badenv": {"command": "a", "env": "A=1"},
                "off": {"command": "a", "disabled": True},
            }
        },
    )
    write(user_mcp_path(), {"mcpServers": {"nocmd": {"command": "user-version"}}})
    editor = [{"command": "anonymous"}, "not an object"]

    config = load_mcp_config(project, editor)

    messages = {(e.server, e.message) for e in config.errors}
    assert (None, 'mcpServers[0]: missing "name"') in messages
    assert (None, 'mcpServers[1]: missing "name"') in messages
    assert ("nocmd", 'missing "command"') in messages
    assert ("web", 'missing "url"') in messages
    assert any(s == "ws" and "unknown server type" in m for s, m in messages)
    assert any(s == "ftp" and "http(s) URL" in m for s, m in messages)
    assert any(s == "badenv" and '"env"' in m for s, m in messages)
    # The project's broken "nocmd" shadows the user's working one.
    assert [s.name for s in config.servers] == ["off"]
    assert config.servers[0].disabled is True


def test_remote_servers_http_and_sse_with_headers(roots: tuple[Path, Path]) -> None:
    project, root = roots
    write(root / "settings.json", {"projectEnv": ["SEMA_TEST_MCP_TOKEN"]})
    os.environ["SEMA_TEST_MCP_TOKEN"] = "tok-123"
    try:
        write(
            project_mcp_path(project),
            {
                "mcpServers": {
                    "files": {
                        "url": "https://example.invalid/mcp",
                        "headers": {"Authorization": "Bearer ${SEMA_TEST_MCP_TOKEN}"},
                    },
                }
            },
        )
        editor = [
            {"type": "sse", "name": "events", "url": "http://127.0.0.1:9/sse", "headers": []},
            {
                "type": "http",
                "name": "web",
                "url": "http://127.0.0.1:9/mcp",
                "headers": [{"name": "X-Key", "value": "k"}],
            },
        ]
        config = load_mcp_config(project, editor)
    finally:
        del os.environ["SEMA_TEST_MCP_TOKEN"]
    assert config.errors == []
    by_name = {s.name: s for s in config.servers}
    assert (by_name["events"].transport, by_name["events"].url) == ("sse", "http://127.0.0.1:9/sse")
    assert by_name["web"].transport == "http" and by_name["web"].headers == {"X-Key": "k"}
    assert by_name["files"].transport == "http"
    assert by_name["files"].headers == {"Authorization": "Bearer tok-123"}


def test_no_files_no_servers(roots: tuple[Path, Path]) -> None:
    project, _ = roots
    config = load_mcp_config(project, None)
    assert config.servers == [] and config.errors == []
    write(project_mcp_path(project), "")
    write(user_mcp_path(), {"other": 1})
    config = load_mcp_config(project, [])
    assert config.servers == [] and config.errors == []
