"""The type side of sema_rpc/plain_gen.py: a pydantic field's annotation, constraints and
default rendered as the plain form's source (a check from sema_rpc/plain_checks.py, a
default expression), or `Unsupported` with the reason when a plain form cannot express it.
"""

from __future__ import annotations

import ast
import types
import typing
from typing import Any

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel, Discriminator, Tag
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


class Unsupported(Exception):
    pass


def stays_pydantic(cls: type[BaseModel]) -> bool:
    return cls.model_config.get("extra") == "allow"


# --------------------------------------------------------------------------- types


def strip_annotated(tp: Any) -> tuple[Any, list[Any]]:
    """An annotation without `Annotated`, and the metadata it carried."""
    meta: list[Any] = []
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp, meta = args[0], [*meta, *args[1:]]
    return tp, meta


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def render(tp: Any, kept: set[str]) -> str:
    """The annotation as the type checker should read it in protocol_plain/."""
    tp, _ = strip_annotated(tp)
    if tp is type(None) or tp is None:
        return "None"
    if tp is Any:
        return "Any"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp.__name__
    if tp in (str, int, float, bool):
        return tp.__name__
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if _is_union(tp):
        return " | ".join(render(a, kept) for a in args)
    if origin in (list, dict, tuple, set):
        return f"{origin.__name__}[{', '.join(render(a, kept) for a in args)}]"
    raise Unsupported(f"annotation {tp!r}")


def check_source(tp: Any, meta: list[Any], discriminator: Any = None) -> str:
    """The check expression for a value of `tp` (see plain_model.py)."""
    tp, more = strip_annotated(tp)
    meta = [*meta, *more]
    for m in meta:
        if isinstance(m, FieldInfo):
            discriminator = discriminator or m.discriminator
            meta = [*meta, *m.metadata]
        elif isinstance(m, Discriminator):
            discriminator = discriminator or m
    constraints = [m for m in meta if not isinstance(m, (FieldInfo, Discriminator, Tag))]
    if constraints:
        if _is_union(tp):
            # `X | None` with a constraint: pydantic applies it to X.
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) == 1 and len(typing.get_args(tp)) == 2:
                return f"check_optional({check_source(members[0], constraints)})"
            return "never"
        return _constrained(tp, constraints)
    if tp is Any:
        return "check_any"
    if tp in (str, int, float, bool):
        return f"check_{tp.__name__}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "never" if stays_pydantic(tp) else f"check_model(lambda: {tp.__name__})"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return f"check_literal({', '.join(repr(a) for a in args)})"
    if origin is list:
        return f"check_list({check_source(args[0], [])})"
    if origin is dict:
        if strip_annotated(args[0])[0] is not str:
            raise Unsupported(f"dict keys {args[0]!r}")
        inner = check_source(args[1], [])
        return "check_dict()" if inner == "check_any" else f"check_dict({inner})"
    if _is_union(tp):
        members = [a for a in args if a is not type(None)]
        optional = len(members) < len(args)
        if isinstance(discriminator, str):
            classes = [strip_annotated(m)[0] for m in members]
            if not all(isinstance(c, type) and issubclass(c, BaseModel) for c in classes):
                raise Unsupported(f"discriminated union of non-models {tp!r}")
            tags = []
            for c in classes:
                field = c.model_fields[discriminator]
                for tag in typing.get_args(strip_annotated(field.annotation)[0]):
                    tags.append(f"{tag!r}: {c.__name__}")
            inner = f"check_tagged({discriminator!r}, lambda: {{{', '.join(tags)}}})"
        else:
            # A callable discriminator (or none): members a value cannot match twice are
            # tried in turn; models as instances only (a dict is the declaration's).
            checks = []
            for m in members:
                base, _ = strip_annotated(m)
                if isinstance(base, type) and issubclass(base, BaseModel) and len(members) > 1:
                    raise Unsupported(f"union of a model with other members {tp!r}")
                checks.append(check_source(m, []))
            inner = checks[0] if len(checks) == 1 else f"check_union({', '.join(checks)})"
        if optional and inner == "check_str":
            return "check_optional_str"
        return f"check_optional({inner})" if optional else inner
    raise Unsupported(f"annotation {tp!r}")


def _constrained(tp: Any, constraints: list[Any]) -> str:
    """The check for `tp` (no union) under `constraints`: bounds on an `int`, lengths of
    a `str` or a list; any other constraint is the declaration's to check (`never`)."""
    if tp is int:
        low = high = None
        for c in constraints:
            if isinstance(c, Ge):
                low = c.ge
            elif isinstance(c, Gt):
                low = c.gt + 1  # type: ignore[operator]
            elif isinstance(c, Le):
                high = c.le
            elif isinstance(c, Lt):
                high = c.lt - 1  # type: ignore[operator]
            else:
                return "never"
        return f"check_int_range({low!r}, {high!r})"
    if tp is str or typing.get_origin(tp) is list:
        shortest = longest = None
        for c in constraints:
            if isinstance(c, MinLen):
                shortest = c.min_length
            elif isinstance(c, MaxLen):
                longest = c.max_length
            else:
                return "never"
        return f"check_len({check_source(tp, [])}, {shortest!r}, {longest!r})"
    return "never"  # a constraint the table does not check: the declaration's


def is_scalar(tp: Any) -> bool:
    tp, _ = strip_annotated(tp)
    if tp in (str, int, float, bool, type(None)):
        return True
    if typing.get_origin(tp) is typing.Literal:
        return True
    if _is_union(tp):
        return all(is_scalar(a) for a in typing.get_args(tp))
    return False


def default_source(field: FieldInfo) -> str | None:
    """`default=…` or `factory=…` for a field, None when required."""
    if field.default_factory is not None:
        factory = field.default_factory
        if factory in (list, dict):
            return f"factory={factory.__name__}"
        if isinstance(factory, type) and issubclass(factory, BaseModel):
            return f"factory=lambda: {factory.__name__}()"
        raise Unsupported(f"default factory {factory!r}")
    if field.default is PydanticUndefined:
        return None
    value = field.default
    if value is None or isinstance(value, (str, int, float, bool)):
        return f"default={value!r}"
    if isinstance(value, (list, dict)) and ast.literal_eval(repr(value)) == value:
        return f"factory=lambda: {value!r}"  # a fresh copy each time, as pydantic's
    raise Unsupported(f"default {value!r}")


# --------------------------------------------------------------------------- classes
