"""What a field of a plain model accepts (see plain_model.py): a check per kind of type.

A check answers the value to store (the input, or a copy of it, as pydantic makes one) for
a value that is plainly valid, and `BAD` for anything else: the declaration then decides.
plain_gen.py picks each field's check from its annotation; core/messages.py names them by
hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "BAD",
    "MISSING",
    "Check",
    "check_any",
    "check_bool",
    "check_dict",
    "check_float",
    "check_int",
    "check_int_range",
    "check_len",
    "check_list",
    "check_literal",
    "check_model",
    "check_optional",
    "check_optional_str",
    "check_str",
    "check_tagged",
    "check_union",
    "never",
]

BAD: Any = object()
"""A check's answer for a value that is not plainly valid: the declaration decides."""

MISSING: Any = object()
"""A key absent from the input."""

Check = Callable[[Any], Any]
"""A field's check: the value to store (the input, or a copy of it), or `BAD`."""


def check_str(value: Any) -> Any:
    return value if type(value) is str else BAD


def check_int(value: Any) -> Any:
    return value if type(value) is int else BAD


def check_bool(value: Any) -> Any:
    return value if type(value) is bool else BAD


def check_float(value: Any) -> Any:
    kind = type(value)
    if kind is float:
        return value
    return float(value) if kind is int else BAD


def check_any(value: Any) -> Any:
    return value


def never(value: Any) -> Any:
    """A field the table does not check (the declaration validates any value given)."""
    return BAD


def check_int_range(low: int | None, high: int | None) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not int:
            return BAD
        if (low is not None and value < low) or (high is not None and value > high):
            return BAD
        return value

    return check


def check_len(inner: Check, low: int | None, high: int | None) -> Check:
    """A `str` or a list with `min_length` / `max_length`: what `inner` takes, when its
    length (characters, items) is within the bounds."""

    def check(value: Any) -> Any:
        out = inner(value)
        if out is BAD:
            return BAD
        size = len(out)
        if (low is not None and size < low) or (high is not None and size > high):
            return BAD
        return out

    return check


def check_optional(inner: Check) -> Check:
    def check(value: Any) -> Any:
        return None if value is None else inner(value)

    return check


def check_optional_str(value: Any) -> Any:
    """`str | None` (the commonest optional field, shared so a reader can tell it)."""
    return value if value is None or type(value) is str else BAD


def check_literal(*allowed: Any) -> Check:
    # A literal's values are strings, ints or bools: the type must match too (True == 1).
    kinds = {(type(v), v) for v in allowed}
    types = {type(v) for v in allowed}

    def check(value: Any) -> Any:
        if type(value) not in types:
            return BAD
        return value if (type(value), value) in kinds else BAD

    return check


def check_list(item: Check) -> Check:
    if item is check_str or item is check_any:
        kind = str if item is check_str else None

        def check_flat(value: Any) -> Any:
            if type(value) is not list:
                return BAD
            if kind is not None and not all(type(x) is kind for x in value):
                return BAD
            return value.copy()

        return check_flat

    def check(value: Any) -> Any:
        if type(value) is not list:
            return BAD
        out = []
        for x in value:
            y = item(x)
            if y is BAD:
                return BAD
            out.append(y)
        return out

    return check


def check_dict(item: Check = check_any) -> Check:
    """`dict[str, X]`: a copy, as pydantic makes one."""

    def check(value: Any) -> Any:
        if type(value) is not dict or not all(type(k) is str for k in value):
            return BAD
        if item is check_any:
            return value.copy()
        out = {}
        for k, x in value.items():
            y = item(x)
            if y is BAD:
                return BAD
            out[k] = y
        return out

    return check


def check_model(resolve: Callable[[], Any]) -> Check:
    """A nested model: an instance as it is (pydantic does not validate it again), a dict
    that is plainly valid for it. `resolve` names the class late (it may be defined
    further down)."""
    cls: Any | None = None

    def check(value: Any) -> Any:
        nonlocal cls
        if cls is None:
            cls = resolve()
        if isinstance(value, cls):
            return value
        if type(value) is dict:
            built = cls._plain(value)
            return BAD if built is None else built
        return BAD

    return check


def check_union(*members: Check) -> Check:
    """A union whose members a value cannot match twice (`str | list[...]`, a model or
    None...): the first member that takes it."""

    def check(value: Any) -> Any:
        for member in members:
            out = member(value)
            if out is not BAD:
                return out
        return BAD

    return check


def check_tagged(key: str, resolve: Callable[[], dict[str, Any]]) -> Check:
    """A union of models told apart by a literal field (pydantic's `discriminator=key`):
    an instance of one of them, or a dict whose tag names one and that is plainly valid
    for it. A dict without a known tag is the declaration's to reject."""
    by_tag: dict[str, Any] | None = None
    classes: tuple[Any, ...] = ()

    def check(value: Any) -> Any:
        nonlocal by_tag, classes
        if by_tag is None:
            by_tag = resolve()
            classes = tuple(by_tag.values())
        if type(value) is dict:
            tag = value.get(key)
            cls = by_tag.get(tag) if type(tag) is str else None
            if cls is None:
                return BAD
            built = cls._plain(value)
            return BAD if built is None else built
        return value if isinstance(value, classes) else BAD

    return check
