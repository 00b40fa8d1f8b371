"""Trust: which programs a project's own files may make this server run.

A workspace is written by strangers. The one project file that names programs this
server starts is `<project>/.sema/mcp.json` (its MCP servers); they start only once the
user trusted that exact definition:

- for one session (`trust once`: nothing is stored),
- for good (`trust always`): stored in `$SEMA_ROOT/trust.json` (0600), keyed by the
  project's resolved path and the SHA-256 of the definition (`definition_digest`), so a
  changed definition asks again;
- for every session of this process: `sema-rpc --trust-project` / `sema-rpc run
  --trust-project` (`trust_project_once`).

`$SEMA_ROOT/trust.json`::

    {"version": 1, "projects": {"/home/me/proj": [
        {"file": ".sema/mcp.json", "digest": "sha256:…", "servers": ["x"],
         "trustedAt": "2026-11-28T10:00:00Z"}]}}

Revoking is `sema-rpc trust revoke [DIR]` or deleting the entry (or the file).

`${VAR}` in a project file expands only a variable the user allowed in
`$SEMA_ROOT/settings.json` (`{"projectEnv": ["NODE_ENV"]}`), and never a secret: the
model keys (`secrets.SECRET_ENV`) or a variable whose value is a key this process knows
(a `models.json` profile's `apiKey`): `project_env_allowed`.

Stdlib only.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from sema_rpc.core.config import sema_root
from sema_rpc.core.files import write_private
from sema_rpc.core.secrets import SECRET_ENV, known_secrets

__all__ = [
    "TRUST_COMMAND",
    "TRUST_TOOL",
    "definition_digest",
    "is_trusted",
    "list_trusted",
    "project_env_allowed",
    "project_env_names",
    "revoke",
    "trust",
    "trust_path",
    "trust_project_once",
    "trusted_for_process",
    "user_settings_path",
]

log = logging.getLogger(__name__)

TRUST_TOOL = "ProjectTrust"
"""`toolName` of the consent request that asks to trust a project's programs."""
TRUST_COMMAND = "sema-rpc trust add"
"""The command that trusts a project's programs for good (`sema-rpc trust add DIR`)."""
_VERSION = 1
_process_trust = False


def trust_path() -> Path:
    return sema_root() / "trust.json"


def user_settings_path() -> Path:
    return sema_root() / "settings.json"


def trust_project_once(on: bool = True) -> None:
    """`--trust-project`: every project's programs are trusted for this process's sessions."""
    global _process_trust
    _process_trust = on


def trusted_for_process() -> bool:
    return _process_trust


def definition_digest(definition: Any) -> str:
    """`sha256:<hex>` of a definition's canonical JSON (key order and spacing do not count)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _key(project: Path | str) -> str:
    return str(Path(project).resolve())


def _read() -> dict[str, Any]:
    try:
        data = json.loads(trust_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": _VERSION, "projects": {}}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable trust file %s: %s", trust_path(), exc)
        return {"version": _VERSION, "projects": {}}
    if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
        return {"version": _VERSION, "projects": {}}
    return data


def _entries(data: dict[str, Any], project: str) -> list[dict[str, Any]]:
    entries = data["projects"].get(project)
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def is_trusted(project: Path | str, digest: str) -> bool:
    """Whether the user trusted this definition of this project for good."""
    return any(e.get("digest") == digest for e in _entries(_read(), _key(project)))


def list_trusted() -> dict[str, list[dict[str, Any]]]:
    """Project path → its trusted definitions (`file`, `digest`, `servers`, `trustedAt`)."""
    data = _read()
    return {p: _entries(data, p) for p in sorted(data["projects"]) if _entries(data, p)}


@contextlib.contextmanager
def _locked() -> Any:
    path = trust_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(data: dict[str, Any]) -> None:
    """Atomically, 0600 from the first byte."""
    write_private(trust_path(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def trust(project: Path | str, digest: str, *, file: str, servers: list[str]) -> None:
    """Store "trust always" for this definition of this project."""
    key = _key(project)
    with _locked():
        data = _read()
        entries = [e for e in _entries(data, key) if e.get("digest") != digest]
        entries.append(
            {
                "file": file,
                "digest": digest,
                "servers": servers,
                "trustedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
        data["projects"][key] = entries
        data["version"] = _VERSION
        _write(data)


def revoke(project: Path | str | None = None) -> list[str]:
    """Forget the trust of one project (None: of every project); the projects forgotten."""
    with _locked():
        data = _read()
        if project is None:
            gone = sorted(data["projects"])
            data["projects"] = {}
        else:
            key = _key(project)
            gone = [key] if data["projects"].pop(key, None) is not None else []
        if gone:
            _write(data)
        return gone


def project_env_names() -> frozenset[str]:
    """The variables `$SEMA_ROOT/settings.json` `projectEnv` lets project files expand."""
    try:
        data = json.loads(user_settings_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return frozenset()
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable settings %s: %s", user_settings_path(), exc)
        return frozenset()
    names = data.get("projectEnv") if isinstance(data, dict) else None
    if not isinstance(names, list):
        return frozenset()
    return frozenset(n for n in names if isinstance(n, str))


def project_env_allowed(allowed: frozenset[str]) -> Any:
    """A predicate `name -> bool` for `${name}` in a project file: in `allowed`, not a model
    key, and its value is no key this process knows (a models.json `apiKey`)."""
    secrets = set(known_secrets())

    def ok(name: str) -> bool:
        if name not in allowed or name in SECRET_ENV:
            return False
        value = os.environ.get(name)
        return not (value and value in secrets)

    return ok
