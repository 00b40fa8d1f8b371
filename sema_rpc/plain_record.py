"""Value classes written out by hand, without `dataclasses`.

A `@dataclass` compiles its `__init__`, `__repr__`, `__eq__` (and a frozen one's
`__setattr__`) with an `exec` each when its module is imported: a few milliseconds of
every server's start for the few dozen such classes on its path. The classes on that
path write their `__init__` out instead and take the rest from here, read off one
tuple of field names; nothing here is compiled at import.

Contract: `_fields` names the constructor's fields in its order (as the dataclass did);
`__eq__` (same class, equal fields), `__repr__` (`Name(field=value, ...)`) and `replace`
(a copy through the constructor with some fields changed, as `dataclasses.replace`) are
read off it. A `Record` is mutable and unhashable; a `FrozenRecord` refuses assignment
after `__init__` (which sets its fields with `object.__setattr__`) and hashes by its
fields. A class built in a hot loop (a streamed delta) takes the three functions as its
own attributes instead of the base: a Python base class costs each instance's
deallocation a few nanoseconds.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

__all__ = [
    "FrozenInstanceError",
    "FrozenRecord",
    "Record",
    "fields_eq",
    "fields_replace",
    "fields_repr",
]

R = TypeVar("R")


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a `FrozenRecord`."""


def _values(obj: Any) -> tuple[Any, ...]:
    return tuple([getattr(obj, name) for name in obj._fields])


def fields_eq(self: Any, other: object) -> bool:
    """`__eq__`: the same class, equal fields."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def fields_repr(self: Any) -> str:
    """`__repr__`: `Name(field=value, ...)`."""
    inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in self._fields])
    return f"{self.__class__.__qualname__}({inner})"


def fields_replace(self: R, **changes: Any) -> R:
    """A copy with `changes` (field name → value), built by the constructor."""
    for name in self._fields:  # type: ignore[attr-defined]
        if name not in changes:
            changes[name] = getattr(self, name)
    return self.__class__(**changes)


class Record:
    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    __eq__ = fields_eq
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value
    __repr__ = fields_repr
    replace = fields_replace


class FrozenRecord(Record):
    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]  # Record's is None
        return hash(_values(self))
