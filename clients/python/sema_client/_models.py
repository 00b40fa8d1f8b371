"""What the client needs to know of the wire models without importing pydantic.

The protocol's models (`sema_rpc.protocol`) validate plainly valid input without
pydantic; this client keeps to the part of their API that needs none (`model_validate`,
`model_dump`, `wire()`), so a client that only sends valid requests and reads valid
answers and notifications never loads pydantic. It loads when a validation fails (the
error is pydantic's `ValidationError`, a `ValueError`).
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard

from sema_rpc.plain_model import is_validation_error, to_camel

__all__ = ["Dumpable", "is_model", "is_validation_error", "to_camel"]


class Dumpable(Protocol):
    """A model instance: one of the protocol's, or any pydantic model."""

    def model_dump(
        self, *, mode: str = ..., by_alias: bool = ..., exclude_none: bool = ...
    ) -> Any: ...


def is_model(value: object) -> TypeGuard[Dumpable]:
    """Whether `value` is a model instance (not a class): it answers `model_dump`."""
    return not isinstance(value, type) and callable(getattr(value, "model_dump", None))
