"""Which MCP servers a session starts: the editor's list, the project's and the user's files.

Files (the common Claude / Cursor shape), `<project>/.sema/mcp.json` and
`$SEMA_ROOT/mcp.json`::

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"],
                             "env": {"TZ": "UTC", "TOKEN": "${MY_TOKEN}"},
                             "cwd": "tools", "disabled": false}}}

The editor's list from `session/create` (ACP's shape)::

    [{"name": "time", "command": "uvx", "args": ["mcp-server-time"],
      "env": [{"name": "TZ", "value": "UTC"}]}]

Both env shapes are accepted everywhere. In files, `${VAR}` and `${VAR:-default}` in
`command`, `args`, `env` values and `cwd` expand from our environment (servers only
inherit a minimal environment — HOME, PATH, … — so secrets are passed this way). The
user's file expands any variable; the project's only those the user allowed
(`core.trust.project_env_allowed`: never a model key): another one reads as unset.

The project's servers are programs a workspace names: `McpConfig.project_digest` is the
SHA-256 of its `mcpServers` definition, which the engine checks against the user's
trust before starting them (core/trust.py).
A relative `cwd` is relative to the working dir; without one a server runs in the
working dir.

Precedence by name: editor > project > user. A higher level's entry shadows a lower
one even when it is invalid or disabled (so a project can switch off a user's server).
A broken file or entry never raises: it becomes an `McpConfigError` in `McpConfig.errors`
and the other servers still load.

Stdlib only; no `mcp` import here.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sema_rpc.core.trust import definition_digest, project_env_allowed, project_env_names

from .paths import project_mcp_path, user_mcp_path

__all__ = [
    "McpConfig",
    "McpConfigError",
    "McpServerConfig",
    "load_mcp_config",
    "parse_editor_servers",
    "parse_mcp_file",
    "project_mcp_path",
    "user_mcp_path",
]

log = logging.getLogger(__name__)

Source = Literal["editor", "project", "user"]
_PRECEDENCE: tuple[Source, ...] = ("editor", "project", "user")


@dataclass(slots=True)
class McpServerConfig:
    """One MCP server: a stdio child process (`command`), or a remote one (`transport`
    `http` = streamable HTTP, or `sse`, at `url` with `headers`)."""

    name: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment, merged over the SDK's minimal default environment."""
    cwd: str | None = None
    disabled: bool = False
    source: str = "editor"
    """`editor`, or the path of the file the entry came from."""
    transport: Literal["stdio", "http", "sse"] = "stdio"
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class McpConfigError:
    """A file or an entry that could not be used."""

    source: str
    """`editor` or a file path."""
    message: str
    server: str | None = None
    """The entry's name when the problem is one entry, None for the whole file."""

    def describe(self) -> str:
        where = self.source if self.server is None else f"{self.source}: server {self.server!r}"
        return f"{where}: {self.message}"


@dataclass(slots=True)
class McpConfig:
    servers: list[McpServerConfig] = field(default_factory=list)
    """After precedence, in order: editor's, then project's, then user's. Includes disabled ones."""
    errors: list[McpConfigError] = field(default_factory=list)
    """Broken files, and broken entries that won their name (they shadow lower levels)."""
    project_file: str | None = None
    """The project's mcp.json, when it defines servers."""
    project_digest: str | None = None
    """`sha256:…` of the project file's `mcpServers` (core.trust.definition_digest)."""

    def project_servers(self) -> list[McpServerConfig]:
        """The servers the project's file defines that would start (not disabled)."""
        return [s for s in self.servers if s.source == self.project_file and not s.disabled]


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


Expand = Callable[[str], bool] | bool
"""True: expand every variable; False: none (the editor's list); a predicate: those
variables it allows (a project file), the others read as unset."""


def _expand(value: str, allowed: Callable[[str], bool] | None = None) -> str:
    """`${VAR}` → its value ('' when unset); `${VAR:-default}` → the default when unset/empty."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if allowed is not None and not allowed(name):
            log.warning("a project file's ${%s} is not expanded (not in projectEnv)", name)
            current = None
        else:
            current = os.environ.get(name)
        if m.group(2) is not None and not current:
            return m.group(2)
        return current or ""

    return _VAR.sub(sub, value)


class _EntryError(Exception):
    pass


def _scalar(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    raise _EntryError(f"{what} must be a string, got {type(value).__name__}")


def _parse_env(raw: Any) -> dict[str, str]:
    """`{"K": "v"}` or `[{"name": "K", "value": "v"}]`."""
    if raw is None:
        return {}
    env: dict[str, str] = {}
    if isinstance(raw, dict):
        for key, value in raw.items():
            env[str(key)] = _scalar(value, f'"env.{key}"')
        return env
    if isinstance(raw, list):
        for i, item in enumerate(raw):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise _EntryError(f'"env[{i}]" must be {{"name": ..., "value": ...}}')
            env[item["name"]] = _scalar(item.get("value", ""), f'"env.{item["name"]}"')
        return env
    raise _EntryError('"env" must be an object or a list of {"name", "value"}')


def _parse_entry(
    name: str, raw: Any, source: str, working_dir: Path, expand: Expand
) -> McpServerConfig:
    if not isinstance(raw, dict):
        raise _EntryError(f"expected an object, got {type(raw).__name__}")
    kind = raw.get("type", raw.get("transport"))
    if kind in ("http", "streamable-http", "streamableHttp", "sse") or (
        kind is None and "url" in raw and "command" not in raw
    ):
        return _parse_remote(name, raw, "sse" if kind == "sse" else "http", source, expand)
    if kind not in (None, "stdio"):
        raise _EntryError(f"unknown server type {kind!r} (stdio, http or sse)")
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise _EntryError('missing "command"')
    args_raw = raw.get("args", [])
    if args_raw is None:
        args_raw = []
    if not isinstance(args_raw, list):
        raise _EntryError('"args" must be a list of strings')
    args = [_scalar(a, f'"args[{i}]"') for i, a in enumerate(args_raw)]
    env = _parse_env(raw.get("env"))
    cwd_raw = raw.get("cwd")
    if cwd_raw is not None and not isinstance(cwd_raw, str):
        raise _EntryError('"cwd" must be a string')
    disabled = raw.get("disabled", False)
    if not isinstance(disabled, bool):
        raise _EntryError('"disabled" must be true or false')
    if expand is not False:
        allowed = None if expand is True else expand
        command = _expand(command, allowed)
        args = [_expand(a, allowed) for a in args]
        env = {k: _expand(v, allowed) for k, v in env.items()}
        cwd_raw = _expand(cwd_raw, allowed) if cwd_raw is not None else None
    cwd = str((working_dir / Path(cwd_raw).expanduser()) if cwd_raw else working_dir)
    return McpServerConfig(
        name=name,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        disabled=disabled,
        source=source,
    )


def _parse_remote(
    name: str, raw: dict[str, Any], transport: Literal["http", "sse"], source: str, expand: Expand
) -> McpServerConfig:
    url = raw.get("url")
    if not isinstance(url, str) or not url.strip():
        raise _EntryError('missing "url"')
    headers = _parse_env(raw.get("headers"))  # the same two shapes as env
    disabled = raw.get("disabled", False)
    if not isinstance(disabled, bool):
        raise _EntryError('"disabled" must be true or false')
    if expand is not False:
        allowed = None if expand is True else expand
        url = _expand(url, allowed)
        headers = {k: _expand(v, allowed) for k, v in headers.items()}
    if not url.startswith(("http://", "https://")):
        raise _EntryError(f'"url" must be an http(s) URL, not {url!r}')
    return McpServerConfig(
        name=name,
        command="",
        disabled=disabled,
        source=source,
        transport=transport,
        url=url,
        headers=headers,
    )


def _parse_entries(
    items: list[tuple[str, Any]], source: str, working_dir: Path, expand: Expand
) -> tuple[list[McpServerConfig], list[McpConfigError]]:
    servers: list[McpServerConfig] = []
    errors: list[McpConfigError] = []
    for name, raw in items:
        try:
            servers.append(_parse_entry(name, raw, source, working_dir, expand))
        except _EntryError as exc:
            errors.append(McpConfigError(source, str(exc), server=name))
    return servers, errors


def parse_mcp_file(
    path: Path, working_dir: Path, expand: Expand = True
) -> tuple[list[McpServerConfig], list[McpConfigError]]:
    """Read one mcp.json. A missing or empty file is no servers; a broken one is an error."""
    servers, errors, _raw = _read_mcp_file(path, working_dir, expand)
    return servers, errors


def _read_mcp_file(
    path: Path, working_dir: Path, expand: Expand
) -> tuple[list[McpServerConfig], list[McpConfigError], Any]:
    """`parse_mcp_file`, and the file's raw `mcpServers` (None when it defines none)."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], [], None
    except (OSError, UnicodeDecodeError) as exc:
        return [], [McpConfigError(where, f"cannot read: {exc}")], None
    if not text.strip():
        return [], [], None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        return [], [McpConfigError(where, msg)], None
    if not isinstance(data, dict):
        return [], [McpConfigError(where, 'expected an object like {"mcpServers": {...}}')], None
    raw = data.get("mcpServers", data.get("servers"))
    if raw is None:
        return [], [], None
    if not isinstance(raw, dict):
        return [], [McpConfigError(where, '"mcpServers" must be an object of name → server')], None
    servers, errors = _parse_entries(
        [(str(k), v) for k, v in raw.items()], where, working_dir, expand
    )
    return servers, errors, raw


def parse_editor_servers(
    raw: Any, working_dir: Path
) -> tuple[list[McpServerConfig], list[McpConfigError]]:
    """The editor's `mcpServers` from `session/create`: a list of named entries (ACP).

    An object of name → entry (the file shape) is accepted too.
    """
    if raw is None:
        return [], []
    if isinstance(raw, dict):
        return _parse_entries([(str(k), v) for k, v in raw.items()], "editor", working_dir, False)
    if not isinstance(raw, list):
        return [], [McpConfigError("editor", "mcpServers must be a list of servers")]
    items: list[tuple[str, Any]] = []
    errors: list[McpConfigError] = []
    for i, entry in enumerate(raw):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            errors.append(McpConfigError("editor", f'mcpServers[{i}]: missing "name"'))
            continue
        items.append((name, entry))
    servers, entry_errors = _parse_entries(items, "editor", working_dir, False)
    return servers, errors + entry_errors


def load_mcp_config(working_dir: Path, editor_servers: Any = None) -> McpConfig:
    """Every server a session in `working_dir` should start, after precedence by name."""
    working_dir = Path(working_dir)
    project_path = project_mcp_path(working_dir)
    allowed = project_env_allowed(project_env_names())
    project_servers, project_errors, project_raw = _read_mcp_file(
        project_path, working_dir, allowed
    )
    levels = {
        "editor": parse_editor_servers(editor_servers, working_dir),
        "project": (project_servers, project_errors),
        "user": parse_mcp_file(user_mcp_path(), working_dir),
    }
    config = McpConfig()
    if project_raw:
        config.project_file = str(project_path)
        config.project_digest = definition_digest(project_raw)
    taken: set[str] = set()
    for level in _PRECEDENCE:
        servers, errors = levels[level]
        # Entry errors first, so an invalid entry shadows the same name below it.
        for error in errors:
            if error.server is None:
                config.errors.append(error)
            elif error.server not in taken:
                taken.add(error.server)
                config.errors.append(error)
        for server in servers:
            if server.name not in taken:
                taken.add(server.name)
                config.servers.append(server)
    return config
