"""Plain models: the running form of a pydantic declaration, without pydantic.

Importing pydantic costs a one-shot `hi` a third of its time. The wire's models
(`protocol_plain/`, generated from the declarations in `protocol_*.py`) and the
conversation's (`core/messages.py`) are therefore plain classes built on `PlainModel`: each
class holds a table of its fields (`Field`: name, wire alias, a check, a default) and the
path of its pydantic declaration, which stays the source of truth (the JSON Schema, the
clients' types and the error messages come from it).

Contract (tests/test_plain_model.py checks it against the declarations, input by input):
- Input that is *plainly* valid — every value already of its field's exact type (`str`,
  `int`, `bool`, a `float` or an `int` for a float, a listed literal, a list of such, a
  nested model as an instance or a plainly valid dict) — is taken by the table, and the
  instance equals what the declaration would build from it (values, fields set, dump).
- Anything else (a value to coerce, a constraint the table does not check, a custom
  validator, an error) is validated by the declaration, imported then: the result is the
  declaration's, converted, and an error is pydantic's own `ValidationError` (a
  `ValueError`), so messages and error codes do not depend on which path ran.
- The API is the subset of pydantic's this project uses: keyword construction,
  `model_validate`, `model_dump` (`mode`, `by_alias`, `exclude_none`, `exclude_unset`,
  `include`, `exclude`), `model_dump_json`, `wire()`, `model_copy`, `model_construct`,
  `model_fields_set`; `model_fields` and `model_json_schema` answer from the declaration.
  Instances are not `pydantic.BaseModel`s.
- Unknown keys are ignored (pydantic's `extra="ignore"`, its default); a field with an
  alias is taken by its name too only when the declaration validates by name
  (`populate_by_name`).
- A declaration's private attributes (`PrivateAttr`) are `Private` descriptors: state an
  instance carries between uses, never validated, dumped or compared, kept by copies and
  pickles.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeGuard, TypeVar, overload

from sema_rpc.plain_checks import BAD, MISSING, Check

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "Field",
    "PlainModel",
    "Private",
    "is_validation_error",
    "to_camel",
    "to_plain",
]

_REQUIRED: Any = object()

P = TypeVar("P", bound="PlainModel")
T = TypeVar("T")

_new = object.__new__
_set = object.__setattr__


# --------------------------------------------------------------------------- fields


class Field:
    """One field of a plain model: its Python name, its alias (the key in dumps by alias;
    both are accepted on input), its check, and its default or default factory."""

    __slots__ = ("alias", "check", "default", "factory", "name", "other", "required", "scalar")

    def __init__(
        self,
        name: str,
        check: Check,
        *,
        alias: str | None = None,
        default: Any = _REQUIRED,
        factory: Callable[[], Any] | None = None,
        scalar: bool = False,
        by_name: bool = True,
    ):
        self.name = name
        self.alias = alias or name
        self.other = name if self.alias != name and by_name else None
        """The key also accepted on input (the name, when an alias differs from it and
        the declaration validates by name: `by_name`)."""
        self.check = check
        self.default = default
        self.factory = factory
        self.required = default is _REQUIRED and factory is None
        # A scalar value (str, int, float, bool, a literal, None) dumps as itself.
        self.scalar = scalar

    def __repr__(self) -> str:
        return f"Field({self.name!r}, alias={self.alias!r})"


class Private(Generic[T]):
    """A private attribute of a plain model (the declaration's `PrivateAttr`): state an
    instance carries between uses (a tool's phases) that is no field — never validated,
    dumped or compared; the default until set, kept by copies and pickles. Set as any
    attribute (`PlainModel.__setattr__` lets it through); the default is shared, so a
    constant (plain_gen.py refuses any other)."""

    __slots__ = ("default", "name")

    def __init__(self, default: T) -> None:
        self.default = default
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> Private[T]: ...
    @overload
    def __get__(self, instance: PlainModel, owner: type) -> T: ...
    def __get__(self, instance: PlainModel | None, owner: type) -> Private[T] | T:
        if instance is None:
            return self
        try:
            private = instance._plain_private
        except AttributeError:
            return self.default
        return private.get(self.name, self.default)  # type: ignore[no-any-return]

    def __set__(self, instance: PlainModel, value: T) -> None:
        try:
            private = instance._plain_private
        except AttributeError:
            private = {}
            _set(instance, "_plain_private", private)
        private[self.name] = value


# --------------------------------------------------------------------------- the base


_PLAIN_OF: dict[str, type[PlainModel]] = {}
"""Declaration (`module.Qualname`) → its plain class: how a declaration's result (from the
fallback) becomes plain again."""


class _ClassProperty:
    def __init__(self, getter: Callable[[Any], Any]):
        self.getter = getter

    def __get__(self, instance: Any, owner: type) -> Any:
        return self.getter(owner)


class PlainModel:
    """Base of every plain model. Subclasses set `__plain_fields__` (every field, the
    inherited ones first, as the declaration orders them) and `__plain_source__`
    (`"module:Name"` of the declaration); `__plain_fast__ = False` sends every input to
    the declaration (a class with a validator of its own)."""

    __slots__ = ("__dict__", "_plain_private", "_plain_set")
    _plain_set: set[str]
    _plain_private: dict[str, Any]
    """The values of the class's `Private` attributes that were set (unset until one is)."""

    __plain_fields__: ClassVar[tuple[Field, ...]] = ()
    __plain_source__: ClassVar[str] = ""
    __plain_fast__: ClassVar[bool] = True
    __plain_empty_list_is_empty__: ClassVar[bool] = False
    """A top-level `[]` validates as `{}` (a Lua encoder writes an empty table as `[]`)."""
    __plain_names__: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "__plain_source__" not in own and "__plain_fields__" not in own:
            added = [n for n in own.get("__annotations__", {}) if not n.startswith("_")]
            if added:
                # A field declared here would be neither validated nor in the schema.
                raise TypeError(
                    f"{cls.__name__}: a plain model's fields come from its declaration; "
                    f"derive from the declaration ({cls.__plain_source__}) to add {added}"
                )
        cls.__plain_names__ = frozenset(f.name for f in cls.__plain_fields__)
        source = own.get("__plain_source__")
        if source:
            module, _, name = source.partition(":")
            _PLAIN_OF[f"{module}.{name}"] = cls

    # ------------------------------------------------------------------ building

    def __init__(self, **data: Any) -> None:
        built = type(self)._plain(data)
        if built is None:
            built = type(self)._declared(data)
        _set(self, "__dict__", built.__dict__)
        _set(self, "_plain_set", built._plain_set)

    @classmethod
    def _plain(cls: type[P], data: dict[str, Any]) -> P | None:
        """The instance for plainly valid `data` (keys by alias or by name), else None."""
        if not cls.__plain_fast__:
            return None
        values: dict[str, Any] = {}
        given: set[str] = set()
        for f in cls.__plain_fields__:
            value = data.get(f.alias, MISSING)
            if value is MISSING and f.other is not None:
                value = data.get(f.other, MISSING)
            if value is MISSING:
                if f.required:
                    return None
                values[f.name] = f.factory() if f.factory is not None else f.default
                continue
            value = f.check(value)
            if value is BAD:
                return None
            values[f.name] = value
            given.add(f.name)
        instance = _new(cls)
        _set(instance, "__dict__", values)
        _set(instance, "_plain_set", given)
        return instance

    @classmethod
    def declaration(cls) -> Any:
        """The pydantic class this one is the plain form of (imports it)."""
        module, _, name = cls.__plain_source__.partition(":")
        return getattr(importlib.import_module(module), name)

    @classmethod
    def _declared(cls: type[P], data: Any) -> P:
        """`data` validated by the declaration: its result made plain, or its error."""
        result = cls.declaration().model_validate(_declaration_input(data))
        plain = to_plain(result)
        if not isinstance(plain, cls):
            raise TypeError(f"{cls.__name__}: the declaration gave {type(result).__name__}")
        return plain

    @classmethod
    def model_validate(cls: type[P], obj: Any) -> P:
        if isinstance(obj, cls):
            return obj
        if type(obj) is dict:
            built = cls._plain(obj)
            if built is not None:
                return built
        elif obj == [] and cls.__plain_empty_list_is_empty__:
            built = cls._plain({})
            if built is not None:
                return built
        return cls._declared(obj)

    @classmethod
    def model_validate_json(cls: type[P], data: str | bytes) -> P:
        try:
            obj = json.loads(data)
        except ValueError:
            return cls._declared_json(data)
        return cls.model_validate(obj)

    @classmethod
    def _declared_json(cls: type[P], data: str | bytes) -> P:
        result = cls.declaration().model_validate_json(data)
        return to_plain(result)  # type: ignore[no-any-return]

    @classmethod
    def model_construct(cls: type[P], **values: Any) -> P:
        """An instance from trusted values, unchecked (pydantic's `model_construct`)."""
        instance = _new(cls)
        out: dict[str, Any] = {}
        for f in cls.__plain_fields__:
            if f.name in values:
                out[f.name] = values[f.name]
            elif f.alias in values:
                out[f.name] = values[f.alias]
            elif not f.required:
                out[f.name] = f.factory() if f.factory is not None else f.default
        given = {f.name for f in cls.__plain_fields__ if f.name in values or f.alias in values}
        _set(instance, "__dict__", out)
        _set(instance, "_plain_set", given)
        return instance

    # ------------------------------------------------------------------ reading

    @property
    def model_fields_set(self) -> set[str]:
        return self._plain_set

    model_fields = _ClassProperty(lambda cls: cls.declaration().model_fields)

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return cls.declaration().model_json_schema(*args, **kwargs)  # type: ignore[no-any-return]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__plain_names__:
            if isinstance(getattr(type(self), name, None), Private):
                _set(self, name, value)
                return
            raise ValueError(f'"{type(self).__name__}" object has no field "{name}"')
        self.__dict__[name] = value
        self._plain_set.add(name)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self.__dict__.items())

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({fields})"

    def __copy__(self: P) -> P:
        return self.model_copy()

    def __deepcopy__(self: P, memo: dict[int, Any]) -> P:
        return self.model_copy(deep=True)

    def __reduce__(self) -> Any:
        private = getattr(self, "_plain_private", None)
        if private is None:
            return (_rebuild, (type(self), self.__dict__, self._plain_set))
        return (_rebuild, (type(self), self.__dict__, self._plain_set, private))

    # ------------------------------------------------------------------ writing

    def model_copy(self: P, *, update: dict[str, Any] | None = None, deep: bool = False) -> P:
        values = copy.deepcopy(self.__dict__) if deep else self.__dict__.copy()
        given = set(self._plain_set)
        if update:
            values.update(update)
            given.update(update)
        instance = _new(type(self))
        _set(instance, "__dict__", values)
        _set(instance, "_plain_set", given)
        private = getattr(self, "_plain_private", None)
        if private is not None:
            _set(instance, "_plain_private", copy.deepcopy(private) if deep else dict(private))
        return instance

    def model_dump(
        self,
        *,
        mode: str = "python",
        by_alias: bool | None = None,
        exclude_none: bool = False,
        exclude_unset: bool = False,
        include: set[str] | None = None,
        exclude: set[str] | None = None,
    ) -> dict[str, Any]:
        options = (mode, bool(by_alias), exclude_none, exclude_unset)
        out: dict[str, Any] = {}
        values = self.__dict__
        for f in self.__plain_fields__:
            name = f.name
            if (include is not None and name not in include) or (exclude and name in exclude):
                continue
            if exclude_unset and name not in self._plain_set:
                continue
            value = values[name]
            if value is None and exclude_none:
                continue
            out[f.alias if by_alias else name] = value if f.scalar else _dump(value, options)
        return out

    def model_dump_json(self, **kwargs: Any) -> str:
        """As pydantic writes it: compact, UTF-8 (not ASCII-escaped)."""
        data = self.model_dump(mode="json", **kwargs)
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    def wire(self) -> dict[str, Any]:
        """The wire form: camelCase keys, None left out (`model_dump(mode="json",
        by_alias=True, exclude_none=True)`)."""
        out: dict[str, Any] = {}
        values = self.__dict__
        for f in self.__plain_fields__:
            value = values[f.name]
            if value is not None:
                out[f.alias] = value if f.scalar else _dump(value, _WIRE)
        return out


_WIRE = ("json", True, True, False)
_INFINITIES = (float("inf"), float("-inf"))


def _rebuild(
    cls: type[P], values: dict[str, Any], given: set[str], private: dict[str, Any] | None = None
) -> P:
    instance = _new(cls)
    _set(instance, "__dict__", dict(values))
    _set(instance, "_plain_set", set(given))
    if private is not None:
        _set(instance, "_plain_private", dict(private))
    return instance


def _dump(value: Any, options: tuple[str, bool, bool, bool]) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        # JSON has no infinity nor NaN: pydantic's JSON mode writes them as null.
        if options[0] == "json" and (value != value or value in _INFINITIES):
            return None
        return value
    if isinstance(value, PlainModel):
        if options is _WIRE:
            return value.wire()
        mode, by_alias, exclude_none, exclude_unset = options
        return value.model_dump(
            mode=mode, by_alias=by_alias, exclude_none=exclude_none, exclude_unset=exclude_unset
        )
    if kind is list or (kind is tuple and options[0] == "json"):
        return [_dump(x, options) for x in value]
    if kind is dict:
        return {k: _dump(x, options) for k, x in value.items()}
    dump = getattr(value, "model_dump", None)
    if dump is not None:  # a pydantic model kept as it is (see `to_plain`)
        mode, by_alias, exclude_none, exclude_unset = options
        return dump(
            mode=mode, by_alias=by_alias, exclude_none=exclude_none, exclude_unset=exclude_unset
        )
    return value


def _declaration_input(value: Any) -> Any:
    """What the declaration is given: plain instances inside `value` as their fields (by
    name), which pydantic validates as it would a dict."""
    if isinstance(value, PlainModel):
        return {k: _declaration_input(v) for k, v in value.__dict__.items()}
    kind = type(value)
    if kind is dict:
        return {k: _declaration_input(v) for k, v in value.items()}
    if kind is list:
        return [_declaration_input(v) for v in value]
    return value


def to_plain(value: Any) -> Any:
    """A declaration's result (or a value holding some) in plain form: each pydantic model
    with a plain class becomes an instance of it (fields and fields set as they were);
    one without stays as it is."""
    fields = getattr(value, "__pydantic_fields__", None)
    if fields is not None and not isinstance(value, type):
        kind = type(value)
        cls = _PLAIN_OF.get(f"{kind.__module__}.{kind.__qualname__}")
        if cls is None:
            return value
        instance = _new(cls)
        _set(instance, "__dict__", {k: to_plain(v) for k, v in value.__dict__.items()})
        _set(instance, "_plain_set", set(value.model_fields_set))
        return instance
    kind = type(value)
    if kind is list:
        return [to_plain(v) for v in value]
    if kind is dict:
        return {k: to_plain(v) for k, v in value.items()}
    return value


def is_validation_error(exc: BaseException) -> TypeGuard[ValidationError]:
    """Whether `exc` is pydantic's `ValidationError` (a `ValueError`), told without
    importing pydantic: an instance of it exists only once pydantic_core is loaded. A path
    that catches `ValueError` and re-raises what this refuses keeps pydantic off until a
    validation actually fails (a plain model's invalid input raises it)."""
    core = sys.modules.get("pydantic_core")
    return core is not None and isinstance(exc, core.ValidationError)


_CAMEL: dict[str, str] = {}


def to_camel(snake: str) -> str:
    """A field's wire alias, as pydantic's `alias_generators.to_camel` makes it (its rules,
    without importing pydantic); cached (bounded), as it runs for each key a client sends
    as a dict."""
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
