"""Generate the plain forms (see sema_rpc/plain_model.py) of the wire's pydantic
declarations: sema_rpc/protocol_plain.py from the protocol's modules, and
sema_rpc/acp/wire_plain.py from the ACP dialect's params (sema_rpc/acp/wire.py).

python -m sema_rpc.plain_gen          # rewrite both
python -m sema_rpc.plain_gen --check  # exit 1 when one is out of date

Each class gets the declaration's fields (name, wire alias, default, a check derived from
the annotation and its constraints), its class variables (`event`), the methods the
declaration defines (copied as written: they run on the plain instance), and its bases.
A declaration this generator cannot express plainly fails the generation with the reason,
rather than generating something that differs: a new kind of field type needs a check in
plain_model.py and a branch here. Models with `extra="allow"` stay pydantic (`KEPT`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, Discriminator, Tag
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from sema_rpc.protocol import _MODULES

HERE = Path(__file__).resolve().parent
OUT = HERE / "protocol_plain.py"
ACP_OUT = HERE / "acp" / "wire_plain.py"

MODULES = [m for m in _MODULES if m.startswith("sema_rpc.protocol_")]
ACP_MODULES = ["sema_rpc.acp.wire"]

# The base every wire model derives from: its `wire()` and its `[]`-as-`{}` validator are
# PlainModel's own (`__plain_empty_list_is_empty__`).
WIRE_BASE = "WireModel"
_OWN_VALIDATORS = {"_empty_array_is_empty_object"}

_HEADER = '''"""The wire's models as plain classes: what the running server and clients build.

Generated from the pydantic declarations in sema_rpc/protocol_*.py (the schema's source of
truth) by `make generate` (python -m sema_rpc.plain_gen); do not edit by hand. What a plain
class is and how it follows its declaration: sema_rpc/plain_model.py. Import the models from
sema_rpc.protocol.
"""
'''

_ACP_HEADER = '''"""The ACP dialect's request params as plain classes: what the ACP server validates
requests with.

Generated from the pydantic declarations in sema_rpc/acp/wire.py by `make generate`
(python -m sema_rpc.plain_gen); do not edit by hand. What a plain class is and how it
follows its declaration: sema_rpc/plain_model.py.
"""
'''

_IMPORTS = """
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from sema_rpc.plain_model import Field, PlainModel
from sema_rpc.plain_checks import (
    check_any,
    check_bool,
    check_dict,
    check_float,
    check_int,
    check_int_range,
    check_list,
    check_literal,
    check_model,
    check_optional,
    check_optional_str,
    check_str,
    check_tagged,
    check_union,
    never,
)
"""


class Unsupported(Exception):
    pass


def _models(modules: list[str]) -> list[type[BaseModel]]:
    """Every pydantic model `modules` declare, bases before subclasses."""
    found: dict[str, type[BaseModel]] = {}
    for name in modules:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == name
                and value.__name__ not in found
            ):
                found[value.__name__] = value
    ordered: list[type[BaseModel]] = []

    def visit(cls: type[BaseModel]) -> None:
        if cls in ordered:
            return
        for base in cls.__bases__:
            if base.__name__ in found and found[base.__name__] is base:
                visit(base)
        ordered.append(cls)

    for cls in sorted(found.values(), key=lambda c: c.__name__):
        visit(cls)
    return ordered


def _aliases(modules: list[str]) -> dict[str, Any]:
    """The named types of `modules` that are not models (`Mode`, `PromptInput`…)."""
    out: dict[str, Any] = {}
    for name in modules:
        module = importlib.import_module(name)
        for exported in getattr(module, "__all__", ()):
            value = getattr(module, exported)
            if not (isinstance(value, type) and issubclass(value, BaseModel)):
                out[exported] = value
            elif value.__name__ != exported:
                out[exported] = value  # another name for a model: `X = Y`
    return out


def _kept(cls: type[BaseModel]) -> bool:
    return cls.model_config.get("extra") == "allow"


# --------------------------------------------------------------------------- types


def _strip(tp: Any) -> tuple[Any, list[Any]]:
    """An annotation without `Annotated`, and the metadata it carried."""
    meta: list[Any] = []
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp, meta = args[0], [*meta, *args[1:]]
    return tp, meta


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _render(tp: Any, kept: set[str]) -> str:
    """The annotation as the type checker should read it in protocol_plain.py."""
    tp, _ = _strip(tp)
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
        return " | ".join(_render(a, kept) for a in args)
    if origin in (list, dict, tuple, set):
        return f"{origin.__name__}[{', '.join(_render(a, kept) for a in args)}]"
    raise Unsupported(f"annotation {tp!r}")


def _check(tp: Any, meta: list[Any], discriminator: Any = None) -> str:
    """The check expression for a value of `tp` (see plain_model.py)."""
    tp, more = _strip(tp)
    meta = [*meta, *more]
    for m in meta:
        if isinstance(m, FieldInfo):
            discriminator = discriminator or m.discriminator
            meta = [*meta, *m.metadata]
        elif isinstance(m, Discriminator):
            discriminator = discriminator or m
    constraints = [m for m in meta if not isinstance(m, (FieldInfo, Discriminator, Tag))]
    if tp is int and constraints:
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
    if constraints:
        return "never"  # a constraint the table does not check: the declaration's
    if tp is Any:
        return "check_any"
    if tp in (str, int, float, bool):
        return f"check_{tp.__name__}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "never" if _kept(tp) else f"check_model(lambda: {tp.__name__})"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return f"check_literal({', '.join(repr(a) for a in args)})"
    if origin is list:
        return f"check_list({_check(args[0], [])})"
    if origin is dict:
        if _strip(args[0])[0] is not str:
            raise Unsupported(f"dict keys {args[0]!r}")
        inner = _check(args[1], [])
        return "check_dict()" if inner == "check_any" else f"check_dict({inner})"
    if _is_union(tp):
        members = [a for a in args if a is not type(None)]
        optional = len(members) < len(args)
        if isinstance(discriminator, str):
            classes = [_strip(m)[0] for m in members]
            if not all(isinstance(c, type) and issubclass(c, BaseModel) for c in classes):
                raise Unsupported(f"discriminated union of non-models {tp!r}")
            tags = []
            for c in classes:
                field = c.model_fields[discriminator]
                for tag in typing.get_args(_strip(field.annotation)[0]):
                    tags.append(f"{tag!r}: {c.__name__}")
            inner = f"check_tagged({discriminator!r}, lambda: {{{', '.join(tags)}}})"
        else:
            # A callable discriminator (or none): members a value cannot match twice are
            # tried in turn; models as instances only (a dict is the declaration's).
            checks = []
            for m in members:
                base, _ = _strip(m)
                if isinstance(base, type) and issubclass(base, BaseModel) and len(members) > 1:
                    raise Unsupported(f"union of a model with other members {tp!r}")
                checks.append(_check(m, []))
            inner = checks[0] if len(checks) == 1 else f"check_union({', '.join(checks)})"
        if optional and inner == "check_str":
            return "check_optional_str"
        return f"check_optional({inner})" if optional else inner
    raise Unsupported(f"annotation {tp!r}")


def _scalar(tp: Any) -> bool:
    tp, _ = _strip(tp)
    if tp in (str, int, float, bool, type(None)):
        return True
    if typing.get_origin(tp) is typing.Literal:
        return True
    if _is_union(tp):
        return all(_scalar(a) for a in typing.get_args(tp))
    return False


def _default(field: FieldInfo) -> str | None:
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


def _class_source(
    cls: type[BaseModel], generated: set[str], kept: set[str], outside: set[str]
) -> str:
    name = cls.__name__
    bases = [b.__name__ for b in cls.__bases__ if b.__name__ in generated | outside]
    bases = bases or ["PlainModel"]
    lines = [f"class {name}({', '.join(bases)}):"]
    lines.append(f'    __plain_source__ = "{cls.__module__}:{name}"')
    decorators = cls.__pydantic_decorators__
    own = set(decorators.model_validators) - _OWN_VALIDATORS
    if own or decorators.field_validators or decorators.validators or decorators.root_validators:
        lines.append("    __plain_fast__ = False  # a validator of its own: the declaration's")
    if decorators.field_serializers or decorators.model_serializers or decorators.computed_fields:
        raise Unsupported(f"{name}: serializers or computed fields")
    if name == WIRE_BASE:
        lines.append("    __plain_empty_list_is_empty__ = True")
    fields = []
    for fname, field in cls.model_fields.items():
        annotation = field.annotation
        check = _check(annotation, list(field.metadata), field.discriminator)
        args = [repr(fname), check]
        if field.alias and field.alias != fname:
            args.append(f"alias={field.alias!r}")
        default = _default(field)
        if default:
            args.append(default)
        if _scalar(annotation):
            args.append("scalar=True")
        fields.append(f"        Field({', '.join(args)}),")
    lines.append("    __plain_fields__: ClassVar[tuple[Field, ...]] = (")
    lines.extend(fields)
    lines.append("    )")
    for var in sorted(cls.__class_vars__):
        if var not in cls.__dict__:
            continue  # inherited from a plain base
        value = cls.__dict__[var]
        if not isinstance(value, (str, int, float, bool)):
            raise Unsupported(f"{name}.{var} = {value!r}")
        lines.append(f"    {var}: ClassVar[{type(value).__name__}] = {value!r}")
    for fname, field in cls.model_fields.items():
        if fname in _own_field_names(cls):
            lines.append(f"    {fname}: {_render(field.annotation, kept)}")
    params = []
    for fname, field in cls.model_fields.items():
        # Typed `Any`, as the declarations' own `__init__` reads to the type checker
        # (pydantic's plugin, `init_typed` off): a literal field takes a `str` variable.
        required = field.default is PydanticUndefined and field.default_factory is None
        params.append(f"{fname}: Any" + ("" if required else " = ..."))
    if params:
        lines.append("")
        lines.append("    if TYPE_CHECKING:")
        lines.append("")
        lines.append(f"        def __init__(self, *, {', '.join(params)}) -> None: ...")
    for attr, value in cls.__dict__.items():
        if attr.startswith("__") or attr in decorators.model_validators:
            continue
        if attr in decorators.field_validators or attr == "model_config":
            continue
        if isinstance(value, (types.FunctionType, property, classmethod, staticmethod)):
            source = textwrap.dedent(inspect.getsource(value))  # type: ignore[arg-type]
            lines.append("")
            lines.extend("    " + line if line else "" for line in source.rstrip().splitlines())
    return "\n".join(lines)


def _own_field_names(cls: type[BaseModel]) -> set[str]:
    own = set(inspect.get_annotations(cls))
    return own & set(cls.model_fields)


def _alias_source(name: str, value: Any, kept: set[str]) -> str | None:
    try:
        return f"{name} = {_render(value, kept)}"
    except Unsupported:
        return None


def generate(
    modules: list[str] | None = None, header: str = _HEADER, outside: tuple[str, ...] = ()
) -> str:
    """The plain module for the declarations of `modules` (default: the protocol's).
    `outside`: plain classes of the protocol the declarations derive from, imported."""
    models = _models(modules or MODULES)
    kept = {c.__name__ for c in models if _kept(c)}
    generated = {c.__name__ for c in models if c.__name__ not in kept}
    parts = [header + _IMPORTS]
    if outside:
        parts.append(f"from sema_rpc.protocol_plain import {', '.join(outside)}\n")
    if kept:
        parts.append("if TYPE_CHECKING:")
        for cls in models:
            if cls.__name__ in kept:
                parts.append(f"    from {cls.__module__} import {cls.__name__}")
        parts.append("")
    names = []
    for cls in models:
        if cls.__name__ in generated:
            parts.append("\n" + _class_source(cls, generated, kept, set(outside)) + "\n")
            names.append(cls.__name__)
    parts.append("")
    for name, value in sorted(_aliases(modules or MODULES).items()):
        source = _alias_source(name, value, kept)
        if source is None:
            raise Unsupported(f"type alias {name}")
        parts.append(source)
        names.append(name)
    exported = sorted({*names, *kept} - {n for n in names if n.startswith("_")})
    parts.append("")
    parts.append("__all__ = [")
    parts.extend(f"    {n!r}," for n in exported)
    parts.append("]")
    parts.append("")
    parts.append(f"KEPT = {tuple(sorted(kept))!r}")
    parts.append('"""Models that stay pydantic (`extra="allow"`): from their own modules."""')
    text = "\n".join(parts) + "\n"
    body = text[text.index(")\n", text.index("from sema_rpc.plain_checks import")) :]
    for name in _CHECK_NAMES:  # import what the classes use only
        if not re.search(rf"\b{name}\b", body):
            text = text.replace(f"    {name},\n", "", 1)
    return text


_CHECK_NAMES = re.findall(r"^    (\w+),$", _IMPORTS, re.MULTILINE)


def _formatted(text: str, path: Path) -> str:
    import subprocess

    # The project's own linter and formatter, so the files pass `make lint` as written
    # (unused imports dropped, imports sorted).
    for command in (["check", "--fix-only", "--quiet"], ["format"]):
        try:
            text = subprocess.run(
                [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(path), "-"],
                input=text,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            pass
    return text


def main(argv: list[str]) -> int:
    targets = {
        OUT: generate(),
        ACP_OUT: generate(ACP_MODULES, _ACP_HEADER, outside=("WireModel",)),
    }
    stale = 0
    for path, text in targets.items():
        text = _formatted(text, path)
        if "--check" in argv:
            if (path.read_text() if path.exists() else "") != text:
                print(f"{path} is out of date: run `make generate`", file=sys.stderr)
                stale = 1
        else:
            path.write_text(text)
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
