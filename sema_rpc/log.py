"""Logging to stderr (stdout carries protocol only), with secrets redacted."""

from __future__ import annotations

import logging
import os
import re
import sys

_SECRET_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,})")


_known_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """A secret that is not in the environment (a `models.json` profile's `apiKey`):
    `redact` removes it from then on."""
    if value and len(value) >= 6:
        _known_secrets.add(value)


def redact(text: str) -> str:
    for name in _SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 6:
            text = text.replace(value, "[REDACTED]")
    for value in _known_secrets:
        text = text.replace(value, "[REDACTED]")
    return _KEY_PATTERN.sub("[REDACTED]", text)


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(level: str | None = None) -> None:
    level_name = (level or os.environ.get("SEMA_LOG_LEVEL") or "WARNING").upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level_name)
    # pygls logs every message body at INFO/DEBUG: never let it reach the log by default.
    # pygls also logs a traceback for every error answer, which _wrap already reports.
    logging.getLogger("pygls").setLevel(
        logging.CRITICAL if root.level > logging.DEBUG else logging.DEBUG
    )
    for noisy in ("httpx", "httpx2", "httpcore", "anthropic", "openai"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
