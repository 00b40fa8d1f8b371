"""Secrets: the keys this process knows and their redaction, the one mechanism used for logs,
history, recordings, error messages and tool output."""

from __future__ import annotations

import os
import re

from sema_rpc.core.known_keys import MIN_SECRET, registered
from sema_rpc.core.known_keys import register_secret as register_secret

SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENAI_ADMIN_KEY")
"""The model keys this server reads from its environment."""
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,})")
REDACTED = "[REDACTED]"
_stored_read = False


def known_secrets() -> list[str]:
    """The secret values this process knows: the keys in its environment, those of
    the `models.json` profiles it loaded and those `sema-rpc login` stored (read once, on
    the first call, if nothing read them before); longest first (one may contain another)."""
    global _stored_read
    if not _stored_read:
        _stored_read = True
        from sema_rpc.core.credentials import load_credentials

        load_credentials()  # registers each stored key
    found = registered()
    for name in SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= MIN_SECRET:
            found.add(value)
    return sorted(found, key=len, reverse=True)


def redact_known(text: str, secrets: list[str] | None = None) -> str:
    """`text` with every secret this process knows (or `secrets`, from `known_secrets()`)
    replaced by `[REDACTED]`. For text that is content (tool output): anything else that
    merely looks like a key stays."""
    for value in known_secrets() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact(text: str) -> str:
    """`redact_known`, and anything shaped like an API key (`sk-…`): for logs,
    recordings and error messages."""
    return _KEY_PATTERN.sub(REDACTED, redact_known(text))


class StreamRedactor:
    """`redact_known` over a stream cut into pieces: a secret split across two pieces is
    caught because a piece's tail that could begin a secret is held back until the next
    piece (or `flush`)."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = redact_known(self._held + piece)
        keep = _partial_secret_tail(text)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return redact_known(held)


def _partial_secret_tail(text: str) -> int:
    """The length of the longest tail of `text` that is a proper prefix of a known secret."""
    best = 0
    for secret in known_secrets():
        first = secret[0]
        start = max(0, len(text) - len(secret) + 1)
        i = text.find(first, start)
        while i != -1:
            tail = len(text) - i
            if tail > best and secret.startswith(text[i:]):
                best = tail
                break
            i = text.find(first, i + 1)
    return best
