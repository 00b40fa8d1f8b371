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
fields.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

__all__ = ["FrozenInstanceError", "FrozenRecord", "Record"]


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a `FrozenRecord`."""


class Record:
    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in self._fields])
        return f"{self.__class__.__qualname__}({inner})"

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (field name → value), built by the constructor."""
        for name in self._fields:
            if name not in changes:
                changes[name] = getattr(self, name)
        return self.__class__(**changes)


class FrozenRecord(Record):
    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]  # Record's is None
        return hash(self._values())
