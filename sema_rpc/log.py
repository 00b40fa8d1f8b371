"""Logging to stderr (stdout carries protocol only), with secrets redacted."""

from __future__ import annotations

import logging
import os
import sys

from sema_rpc.core.secrets import redact


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
    for noisy in ("httpx", "httpx2", "httpcore", "anthropic", "openai"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
