"""The plain models (the wire's, protocol_plain/; the built-in tools' inputs,
tools/input_plain.py) hold to their pydantic declarations: for any input, the plain class
answers what the declaration answers — the same values, fields set and dumps, or an error
(pydantic's own, either way, message included). Inputs are drawn per field from the
declaration's annotation (valid values, wrong types, lengths either side of a bound,
missing and extra keys, keys by alias, by name or both), so the fast path and the
fallback are both exercised."""

from __future__ import annotations

import pickle
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
from sema_rpc.plain_model import PlainModel, Private, to_camel
from sema_rpc.tools import input_plain

REPO = Path(__file__).resolve().parents[1]

PLAIN = [
    cls
    for name in protocol_plain.__all__
    if isinstance(cls := getattr(protocol_plain, name, None), type) and issubclass(cls, PlainModel)
]

TOOL_INPUTS = [
    cls
    for name in input_plain.__all__
    if isinstance(cls := getattr(input_plain, name), type) and issubclass(cls, PlainModel)
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
        # short ones (empty too), and some either side of a `max_length` of 30
        valid: st.SearchStrategy[Any] = st.text(max_size=6) | st.text(min_size=29, max_size=31)
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
        valid = st.lists(_values(args[0], depth), max_size=5)
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
        given = [st.just(None), st.tuples(keys, value)]
        if field.alias and field.alias != name:  # both keys, each with its value
            given.append(st.tuples(st.just(field.alias), value, st.just(name), value))
        parts.append(st.one_of(given))
    extra = st.one_of(st.just(None), st.tuples(st.just("noSuchField"), JSON))

    def build(pairs: list[Any]) -> dict[str, Any]:
        out = {}
        for p in pairs:
            if p is not None:
                out.update(zip(p[::2], p[1::2], strict=True))
        return out

    return st.tuples(*parts, extra).map(lambda t: build(list(t)))


def _outcome(cls: Any, data: Any, *, wire: bool = True) -> Any:
    try:
        model = cls.model_validate(data)
    except ValidationError as exc:
        return ("error", [(e["loc"], e["type"], e["msg"]) for e in exc.errors()])
    return (
        "ok",
        model.model_dump(),
        model.model_dump(mode="json", by_alias=True, exclude_unset=True),
        model.wire() if wire else None,
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


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_tool_input_answers_as_its_declaration(data: Any) -> None:
    """What a model's arguments become, or the error it is told, is the declaration's
    (the message too), whichever path validated them."""
    plain = data.draw(st.sampled_from(TOOL_INPUTS), label="input model")
    value = data.draw(_strategy(plain), label="arguments")
    assert _outcome(plain, value, wire=False) == _outcome(plain.declaration(), value, wire=False)


@pytest.mark.parametrize("plain", PLAIN + TOOL_INPUTS, ids=lambda c: c.__name__)
def test_a_plain_model_has_its_declarations_fields(plain: type[PlainModel]) -> None:
    declared = plain.declaration()
    assert [f.name for f in plain.__plain_fields__] == list(declared.model_fields)
    for f in plain.__plain_fields__:
        field = declared.model_fields[f.name]
        assert f.alias == (field.alias or f.name)
        assert f.required == field.is_required()
    if plain in PLAIN:
        assert issubclass(plain, protocol_plain.WireModel)
    for name in getattr(declared, "__private_attributes__", {}):
        assert isinstance(plain.__dict__.get(name), Private), name


# A typical call of each built-in tool: taken by the table (no pydantic), as the
# declaration takes it. Keys a tool does not know are dropped.
TYPICAL_CALLS: list[tuple[type[PlainModel], dict[str, Any]]] = [
    (input_plain.ReadInput, {"file_path": "src/app.py", "offset": 10, "limit": 50}),
    (input_plain.GlobInput, {"pattern": "**/*.py"}),
    (input_plain.GrepInput, {"pattern": "def ", "-i": True, "-n": True, "output_mode": "content",
                             "-C": 2, "head_limit": 0, "glob": "*.py"}),
    (input_plain.GrepInput, {"pattern": "x", "case_insensitive": True, "context": 1}),
    (input_plain.BashInput, {"command": "ls", "timeout": 1000, "description": "List"}),
    (input_plain.WriteInput, {"file_path": "a.txt", "content": ""}),
    (input_plain.EditInput, {"file_path": "a.txt", "old_string": "a", "new_string": "b",
                             "replace_all": True, "explanation": "not a field"}),
    (input_plain.TodoWriteInput, {"todos": [
        {"content": "Run tests", "status": "in_progress", "activeForm": "Running tests"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping", "id": "2"},
    ]}),
    (input_plain.TaskInput, {"description": "Find it", "prompt": "Find the bug.",
                             "subagent_type": "general-purpose"}),
    (input_plain.SkillInput, {"skill": "pdf", "args": "report.pdf"}),
    (input_plain.AskUserQuestionInput, {"questions": [{
        "question": "Which database?", "header": "Database",
        "options": [{"label": "Postgres"}, {"label": "SQLite", "description": "A file"}],
    }]}),
    (input_plain.ExitPlanModeInput, {"plan": "# Plan\n1. Do it"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("plain", "call"), TYPICAL_CALLS, ids=[f"{c.__name__}-{i}" for i, (c, _) in
                                           enumerate(TYPICAL_CALLS)]
)  # fmt: skip
def test_a_typical_tool_call_is_plainly_valid(
    plain: type[PlainModel], call: dict[str, Any]
) -> None:
    built = plain._plain(call)
    assert built is not None, "the call would load pydantic to be validated"
    declared = plain.declaration().model_validate(call)
    assert built.model_dump() == declared.model_dump()
    assert built.model_fields_set == declared.model_fields_set


@pytest.mark.parametrize(
    ("plain", "call"),
    [
        (input_plain.ReadInput, {"file_path": "a", "offset": -1}),
        (input_plain.ReadInput, {"file_path": "a", "limit": "10"}),  # coerced, not an error
        (input_plain.GrepInput, {"pattern": "x", "-A": True}),
        (input_plain.GrepInput, {"pattern": "x", "output_mode": "lines"}),
        (input_plain.TodoWriteInput, {"todos": [{"content": "", "status": "pending",
                                                 "activeForm": "x"}]}),
        (input_plain.AskUserQuestionInput, {"questions": []}),
        (input_plain.AskUserQuestionInput, {"questions": [{
            "question": "Which?", "header": "x" * 31, "options": [{"label": "a"}]}]}),
        (input_plain.TaskInput, {"description": "", "prompt": "p", "subagent_type": "t"}),
        (input_plain.EditInput, {"file_path": "a", "old_string": "a"}),
    ],
)  # fmt: skip
def test_other_tool_calls_are_the_declarations_to_judge(
    plain: type[PlainModel], call: dict[str, Any]
) -> None:
    """Out of bounds, of another type, missing: the table leaves it to the declaration,
    whose answer (or error, word for word) is the plain class's."""
    assert plain._plain(call) is None
    assert _outcome(plain, call, wire=False) == _outcome(plain.declaration(), call, wire=False)


def test_private_attributes_carry_state_between_a_tools_phases() -> None:
    """Edit and Write keep the planned change on their input (the declaration's
    `PrivateAttr`): not a field, not dumped, kept by a copy, reset in a new instance."""
    args = input_plain.EditInput.model_validate(
        {"file_path": "a", "old_string": "x", "new_string": "y"}
    )
    assert args._change is None and args._buffer is None
    args._buffer = "the editor's text"
    args._change = marker = "a planned change"
    assert args._buffer == "the editor's text" and args._change == marker
    assert "_change" not in args.model_dump() and "_buffer" not in dict(args)
    copied = args.model_copy()
    assert copied._change is marker and copied._buffer == "the editor's text"
    fresh = input_plain.EditInput(file_path="a", old_string="x", new_string="y")
    assert fresh._change is None
    # the fallback's result (a value coerced by the declaration) has them too
    coerced = input_plain.WriteInput.model_validate({"file_path": "a", "content": b"bytes"})
    assert coerced.content == "bytes" and coerced._change is None
    coerced._change = marker
    assert coerced._change is marker
    revived = pickle.loads(pickle.dumps(args))
    assert revived._buffer == "the editor's text" and revived.model_dump() == args.model_dump()
    with pytest.raises(ValueError, match="no field"):
        args._no_such_private = 1


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
