"""What the client needs to know of the wire models without importing pydantic.

The protocol's models (`sema_rpc.protocol`) validate plainly valid input without
pydantic; this client keeps to the part of their API that needs none (`model_validate`,
`model_dump`, `wire()`), so a client that only sends valid requests and reads valid
answers and notifications never loads pydantic. It loads when a validation fails (the
error is pydantic's `ValidationError`, a `ValueError`).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["Dumpable", "is_model", "is_validation_error", "to_camel"]


class Dumpable(Protocol):
    """A model instance: one of the protocol's, or any pydantic model."""

    def model_dump(
        self, *, mode: str = ..., by_alias: bool = ..., exclude_none: bool = ...
    ) -> Any: ...


def is_model(value: object) -> TypeGuard[Dumpable]:
    """Whether `value` is a model instance (not a class): it answers `model_dump`."""
    return not isinstance(value, type) and callable(getattr(value, "model_dump", None))


def is_validation_error(exc: BaseException) -> TypeGuard[ValidationError]:
    """Whether `exc` is pydantic's `ValidationError`, told without importing pydantic: an
    instance of it exists only once pydantic_core is loaded."""
    core = sys.modules.get("pydantic_core")
    return core is not None and isinstance(exc, core.ValidationError)


_CAMEL: dict[str, str] = {}


def to_camel(snake: str) -> str:
    """A field's wire name: the wire models' alias rule (pydantic's `to_camel`, which it
    matches for every input), cached, as it runs for each key a client sends as a dict.
    The patterns are compiled at the first key (`re`'s own cache), not at import."""
    camel = _CAMEL.get(snake)
    if camel is None:
        if re.match(r"^[a-z]+[A-Za-z0-9]*$", snake) and not re.search(r"\d[a-z]", snake):
            camel = snake
        else:
            pascal = re.sub(r"([0-9A-Za-z])_(?=[0-9A-Z])", lambda m: m.group(1), snake.title())
            camel = re.sub(r"(^_*[A-Z])", lambda m: m.group(1).lower(), pascal)
        if len(_CAMEL) < 4096:
            _CAMEL[snake] = camel
    return camel
