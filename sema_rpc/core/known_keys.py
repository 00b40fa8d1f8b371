"""The secret values this process has met that are not in its environment: a profile's
`apiKey`, a key `sema-rpc login` stored. The lowest module of the secrets: where a key is
read (`config.py`, `credentials.py`) it is registered here, and `secrets.py` redacts
what is registered (so the readers need not import the redaction, nor it them)."""

from __future__ import annotations

MIN_SECRET = 6
"""Shorter values are never treated as secrets (they would redact ordinary words)."""

_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """A secret that is not in the environment: redacted everywhere from then on."""
    if value and len(value) >= MIN_SECRET:
        _registered.add(value)


def registered() -> set[str]:
    """A copy of what was registered."""
    return set(_registered)
