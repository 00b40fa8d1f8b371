"""Stored credentials: the keys `sema-rpc login` saved, in `$SEMA_ROOT/credentials.json`.

    {"anthropic": {"apiKey": "sk-ant-…"},
     "openai": {"apiKey": "…", "baseURL": "http://localhost:8000/v1", "model": "qwen3"}}

One entry per provider (`anthropic`, `openai`; an OpenAI-compatible endpoint is the
`openai` entry with its `baseURL`, and the model to use by default). The file is written
0600 (replaced atomically, never readable by others in between) and read on every model
resolution, so a key saved by `sema-rpc login` in another process is used by a running
server's next session. They come after the environment: a key in the environment wins,
and a base URL in the environment wins over a stored one (`core.config`). Every stored
key is a secret for redaction (`core.secrets`) as soon as the file has been read.

Stdlib only: read at start-up.
"""

from __future__ import annotations

import json
from pathlib import Path

from sema_rpc.core.files import write_private
from sema_rpc.core.known_keys import register_secret
from sema_rpc.core.root import sema_root
from sema_rpc.plain_record import FrozenRecord

PROVIDERS = ("anthropic", "openai")
FILE_NAME = "credentials.json"


class Credential(FrozenRecord):
    # A plain class (every server loads this module; a dataclass costs its creation).
    __slots__ = ("api_key", "base_url", "model", "provider")
    _fields = ("provider", "api_key", "base_url", "model")

    provider: str
    api_key: str
    base_url: str | None
    model: str | None
    """The model to use when none is named (a compatible endpoint's own model id)."""

    def __init__(
        self, provider: str, api_key: str, base_url: str | None = None, model: str | None = None
    ) -> None:
        set_field = object.__setattr__
        set_field(self, "provider", provider)
        set_field(self, "api_key", api_key)
        set_field(self, "base_url", base_url)
        set_field(self, "model", model)

    def __repr__(self) -> str:  # never the key
        return f"Credential({self.provider!r}, base_url={self.base_url!r}, model={self.model!r})"


def credentials_path(root: Path | None = None) -> Path:
    return (sema_root() if root is None else root) / FILE_NAME


def load_credentials(path: Path | None = None) -> dict[str, Credential]:
    """The stored credentials by provider; {} when there is no file. An unreadable or
    malformed file counts as none (a broken file must not stop a server that has a key
    in its environment); entries of unknown providers are ignored."""
    path = credentials_path() if path is None else path
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    found: dict[str, Credential] = {}
    for provider in PROVIDERS:
        entry = raw.get(provider)
        if not isinstance(entry, dict):
            continue
        key = entry.get("apiKey")
        if not isinstance(key, str) or not key:
            continue
        register_secret(key)
        base_url = entry.get("baseURL")
        model = entry.get("model")
        found[provider] = Credential(
            provider,
            key,
            base_url if isinstance(base_url, str) and base_url else None,
            model if isinstance(model, str) and model else None,
        )
    return found


def stored_credential(provider: str) -> Credential | None:
    """The stored credential for a provider (`openai-responses` uses the `openai` one)."""
    if provider == "openai-responses":
        provider = "openai"
    return load_credentials().get(provider)


def _write(path: Path, data: dict[str, dict[str, str]]) -> None:
    """Replace the file atomically with a 0600 one (created 0600, never widened), synced."""
    write_private(path, json.dumps(data, indent=2) + "\n", durable=True)


def _entries(path: Path) -> dict[str, dict[str, str]]:
    return {c.provider: _entry(c) for c in load_credentials(path).values()}


def _entry(cred: Credential) -> dict[str, str]:
    entry = {"apiKey": cred.api_key}
    if cred.base_url:
        entry["baseURL"] = cred.base_url
    if cred.model:
        entry["model"] = cred.model
    return entry


def save_credential(cred: Credential, path: Path | None = None) -> Path:
    """Store (or replace) one provider's credential; the others are kept."""
    if cred.provider not in PROVIDERS:
        raise ValueError(f"unknown provider: {cred.provider}")
    path = credentials_path() if path is None else path
    data = _entries(path)
    data[cred.provider] = _entry(cred)
    register_secret(cred.api_key)
    _write(path, data)
    return path


def remove_credentials(providers: list[str], path: Path | None = None) -> list[str]:
    """Remove the named providers' credentials (all when `providers` is empty); the
    providers that had one. The file is deleted when nothing is left in it."""
    path = credentials_path() if path is None else path
    data = _entries(path)
    removed = [p for p in (providers or list(data)) if p in data]
    for p in removed:
        del data[p]
    if data:
        _write(path, data)
    elif path.exists():
        path.unlink()
    return removed
