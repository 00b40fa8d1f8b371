"""The wire's plain models (protocol_plain/) hold to their pydantic declarations: for any
input, the plain class answers what the declaration answers — the same values, fields
set and dumps, or an error (pydantic's own, either way). Inputs are drawn per field from
the declaration's annotation (valid values, wrong types, missing and extra keys, camelCase
and snake_case keys), so the fast path and the fallback are both exercised."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from sema_rpc import plain_gen, protocol_plain
from sema_rpc.plain_model import PlainModel, to_camel

REPO = Path(__file__).resolve().parents[1]

PLAIN = [
    cls
    for name in protocol_plain.__all__
    if isinstance(cls := getattr(protocol_plain, name, None), type) and issubclass(cls, PlainModel)
]

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _values(tp: Any, depth: int) -> st.SearchStrategy[Any]:
    """Values for a field of type `tp`: mostly of the type, sometimes anything."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        valid: st.SearchStrategy[Any] = st.text(max_size=6)
    elif tp is bool:
        valid = st.booleans()
    elif tp is int:
        valid = st.integers(-3, 2000)
    elif tp is float:
        valid = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-3, 3)
    elif tp is type(None):
        valid = st.none()
    elif tp is Any:
        valid = JSON
    elif origin is typing.Literal:
        valid = st.sampled_from(args)
    elif origin in (typing.Union, __import__("types").UnionType):
        valid = st.one_of([_values(a, depth) for a in args])
    elif origin is list:
        valid = st.lists(_values(args[0], depth), max_size=3)
    elif origin is dict:
        valid = st.dictionaries(st.text(max_size=4), _values(args[1], depth), max_size=3)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        valid = _inputs(tp, depth + 1) if depth < 3 else st.fixed_dictionaries({})
    else:
        raise AssertionError(f"no strategy for {tp!r}")
    return st.one_of(valid, valid, valid, JSON)


def _inputs(declared: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """A dict for `declared`: each field absent or given (by alias or by name), plus maybe
    a key no field has."""
    parts = []
    for name, field in declared.model_fields.items():
        keys = st.sampled_from(sorted({name, field.alias or name}))
        value = _values(field.annotation, depth)
        parts.append(st.one_of(st.just(None), st.tuples(keys, value)))
    extra = st.one_of(st.just(None), st.tuples(st.just("noSuchField"), JSON))

    def build(pairs: list[Any]) -> dict[str, Any]:
        return dict(p for p in pairs if p is not None)

    return st.tuples(*parts, extra).map(lambda t: build(list(t)))


def _outcome(cls: Any, data: Any) -> Any:
    try:
        model = cls.model_validate(data)
    except ValidationError as exc:
        return ("error", [e["loc"] for e in exc.errors()])
    return (
        "ok",
        model.model_dump(),
        model.model_dump(mode="json", by_alias=True, exclude_unset=True),
        model.wire(),
        sorted(model.model_fields_set),
    )


_STRATEGIES: dict[type[PlainModel], st.SearchStrategy[dict[str, Any]]] = {}


def _strategy(plain: type[PlainModel]) -> st.SearchStrategy[dict[str, Any]]:
    if plain not in _STRATEGIES:
        _STRATEGIES[plain] = _inputs(plain.declaration())
    return _STRATEGIES[plain]


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_plain_model_answers_as_its_declaration(data: Any) -> None:
    plain = data.draw(st.sampled_from(PLAIN), label="model")
    value = data.draw(_strategy(plain), label="input")
    assert _outcome(plain, value) == _outcome(plain.declaration(), value)


@pytest.mark.parametrize("plain", PLAIN, ids=lambda c: c.__name__)
def test_a_plain_model_has_its_declarations_fields(plain: type[PlainModel]) -> None:
    declared = plain.declaration()
    assert [f.name for f in plain.__plain_fields__] == list(declared.model_fields)
    for f in plain.__plain_fields__:
        field = declared.model_fields[f.name]
        assert f.alias == (field.alias or f.name)
        assert f.required == field.is_required()
    assert issubclass(plain, protocol_plain.WireModel)


def test_keyword_construction_and_copies_follow_the_declaration() -> None:
    for plain in PLAIN:
        declared = plain.declaration()
        if any(f.is_required() for f in declared.model_fields.values()):
            continue
        assert plain().wire() == declared().wire(), plain.__name__
    event = protocol_plain.TextChunkParams(delta="a", message_id="m")
    copy = event.model_copy(update={"delta": "b"})
    assert copy.delta == "b" and event.delta == "a" and copy.message_id == "m"
    assert copy.model_fields_set == {"delta", "message_id"}
    with pytest.raises(ValidationError):
        protocol_plain.TextChunkParams(delta=3)
    with pytest.raises(ValueError, match="no field"):
        event.no_such_field = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "name", ["session_id", "cache_read_tokens", "a1b", "x_2", "__private", "already", "HTTPError"]
)
def test_to_camel_is_pydantics(name: str) -> None:
    from pydantic.alias_generators import to_camel as pydantics

    assert to_camel(name) == pydantics(name)


def test_the_plain_models_are_up_to_date() -> None:
    """protocol_plain/ is what the generator writes today (`make generate`)."""
    run = subprocess.run(
        [sys.executable, "-m", "sema_rpc.plain_gen", "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr
    assert plain_gen.OUT == REPO / "sema_rpc" / "protocol_plain"
