"""The conversation's plain models (`core/messages.py`) held to their pydantic declarations
(`core/messages_schema.py`): the same fields, and for any input — a history line, a dict
or the instances a provider builds, valid or not — the same result (values, fields set,
dumps) or the same error."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from sema_rpc.core import messages, messages_schema
from sema_rpc.core.messages import (
    ImageBlock,
    ImageSource,
    Message,
    MessagePart,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from sema_rpc.plain_model import PlainModel

REPO = Path(__file__).resolve().parents[2]

PLAIN: list[type[PlainModel]] = [
    m
    for m in vars(messages).values()
    if isinstance(m, type) and issubclass(m, PlainModel) and m.__module__ == messages.__name__
]

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- the tables


def test_every_declaration_has_its_plain_class_and_no_more():
    declared = {
        name
        for name, m in vars(messages_schema).items()
        if isinstance(m, type)
        and issubclass(m, BaseModel)
        and m.__module__ == messages_schema.__name__
        and not name.startswith("_")
    }
    assert {m.__name__ for m in PLAIN} == declared
    for cls in PLAIN:
        assert cls.declaration() is getattr(messages_schema, cls.__name__)


@pytest.mark.parametrize("cls", PLAIN, ids=lambda c: c.__name__)
def test_the_field_table_is_the_declarations(cls: type[PlainModel]):
    fields = cls.declaration().model_fields
    assert [f.name for f in cls.__plain_fields__] == list(fields)
    for f in cls.__plain_fields__:
        info = fields[f.name]
        assert f.alias == (info.alias or f.name), f.name
        assert f.required == info.is_required(), f.name
        if not f.required:
            ours = f.factory() if f.factory is not None else f.default
            assert ours == info.get_default(call_default_factory=True), f.name
            assert (f.factory is not None) == (info.default_factory is not None), f.name


def _typed_inits() -> dict[str, ast.FunctionDef]:
    """The `__init__` each class declares for the type checker (under TYPE_CHECKING)."""
    tree = ast.parse(Path(messages.__file__).read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.FunctionDef) and sub.name == "__init__":
                    out[node.name] = sub
    return out


@pytest.mark.parametrize("cls", PLAIN, ids=lambda c: c.__name__)
def test_the_keywords_the_type_checker_sees_are_the_fields(cls: type[PlainModel]):
    init = _typed_inits()[cls.__name__]
    names = [a.arg for a in init.args.kwonlyargs]
    assert names == [f.name for f in cls.__plain_fields__]
    optional = [d is not None for d in init.args.kw_defaults]
    assert optional == [not f.required for f in cls.__plain_fields__]


# --------------------------------------------------------------------------- inputs

_text = st.text(max_size=8)
_json_scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text
_json = st.recursive(
    _json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_odd = st.one_of(_text, st.integers(), st.none(), _json)
"""Any JSON value, a string or a number more often than the rest."""
_opt_text = st.none() | _text
_kind = st.none() | st.sampled_from(["prompt", "summary", "notice"])


@st.composite
def _variant(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A dict from `base` (valid), as it is or spoilt: a key dropped, a value replaced by
    any JSON value, or an extra key."""
    d = dict(draw(base))
    action = draw(st.sampled_from(["keep", "keep", "drop", "odd", "odd", "extra"]))
    if d and action == "drop":
        del d[draw(st.sampled_from(sorted(d)))]
    elif d and action == "odd":
        d[draw(st.sampled_from(sorted(d)))] = draw(_odd)
    elif action == "extra":
        d[draw(_text)] = draw(_odd)
    return d


def _block(tag: str, required: dict[str, Any], optional: dict[str, Any] | None = None):
    return st.fixed_dictionaries({"type": st.just(tag), **required}, optional=optional or {})


_source = st.fixed_dictionaries(
    {"media_type": st.sampled_from(["image/png", "image/gif"]), "data": _text},
    optional={"type": st.just("base64")},
)
_blocks = st.one_of(
    _block("text", {"text": _text}),
    _block("image", {"source": _variant(_source)}, {"path": _opt_text}),
    _block(
        "thinking",
        {"thinking": _text},
        {"signature": _opt_text, "item_id": _opt_text, "encrypted_content": _opt_text},
    ),
    _block("redacted_thinking", {"data": _text}),
    _block(
        "tool_use",
        {"id": _text, "name": _text},
        {"input": st.dictionaries(_text, _json, max_size=3)},
    ),
    _block("tool_result", {"tool_use_id": _text, "content": _text}, {"is_error": st.booleans()}),
)
BLOCK = _variant(_blocks)
PART = _variant(st.fixed_dictionaries({"id": _text, "at": st.integers()}, optional={"kind": _kind}))
MESSAGE = _variant(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": st.lists(BLOCK, max_size=4)},
        optional={
            "id": _opt_text,
            "kind": _kind,
            "parts": st.none() | st.lists(PART, max_size=2),
            # a history line's own keys, ignored by the message
            "t": st.just("message"),
            "n": st.integers(min_value=1),
            "at": st.floats(allow_nan=False),
        },
    )
)
USAGE = _variant(
    st.fixed_dictionaries(
        {},
        optional={
            name: st.integers(min_value=0) | st.floats(allow_nan=False) | st.booleans()
            for name in (
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            )
        },
    )
)
NOT_A_DICT = _json.filter(lambda x: not isinstance(x, dict))


# --------------------------------------------------------------------------- comparing


def _shape(value: Any) -> Any:
    """A model (plain or pydantic) as its class name, fields set and values, all the way
    down: what the two paths must agree on."""
    if isinstance(value, PlainModel | BaseModel):
        fields = dict(value)
        return (
            type(value).__name__,
            sorted(value.model_fields_set),
            {k: _shape(v) for k, v in fields.items()},
        )
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return (type(value).__name__, value)


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    return False


def _errors(exc: ValidationError) -> list[tuple[str, tuple[Any, ...]]]:
    return [(e["type"], e["loc"]) for e in exc.errors()]


def _same_as_declaration(cls: type[PlainModel], data: Any) -> None:
    declared = cls.declaration()
    try:
        expected = declared.model_validate(data)
    except ValidationError as exc:
        with pytest.raises(ValidationError) as caught:
            cls.model_validate(data)
        assert _errors(caught.value) == _errors(exc)
        return
    got = cls.model_validate(data)
    assert type(got) is cls
    assert _shape(got) == _shape(expected)
    for mode in ("python", "json"):
        for exclude_none in (False, True):
            assert got.model_dump(mode=mode, exclude_none=exclude_none) == expected.model_dump(
                mode=mode, exclude_none=exclude_none
            )
    ours, theirs = (
        got.model_dump_json(exclude_none=True),
        expected.model_dump_json(exclude_none=True),
    )
    assert json.loads(ours) == json.loads(theirs)
    if not _has_float(data):  # Python and pydantic spell an exponent differently
        assert ours == theirs
    # the same input again gives an equal instance, and a copy with an update is the
    # declaration's copy
    assert cls.model_validate(data) == got
    if cls is Message:
        update = {"id": "m_0123456789ab"}
        copied = got.model_copy(update=update, deep=True)
        assert _shape(copied) == _shape(expected.model_copy(update=update, deep=True))
        assert copied == got.model_copy(update=update)


@FUZZ
@given(MESSAGE)
def test_a_message_validates_as_its_declaration_does(data: dict[str, Any]):
    _same_as_declaration(Message, data)


@FUZZ
@given(BLOCK)
def test_a_content_block_validates_as_its_declaration_does(data: dict[str, Any]):
    cls = getattr(messages, _class_of(data))
    _same_as_declaration(cls, data)


@FUZZ
@given(PART)
def test_a_message_part_validates_as_its_declaration_does(data: dict[str, Any]):
    _same_as_declaration(MessagePart, data)


@FUZZ
@given(USAGE)
def test_usage_validates_as_its_declaration_does(data: dict[str, Any]):
    _same_as_declaration(Usage, data)


@settings(max_examples=100, deadline=None)
@given(NOT_A_DICT)
def test_anything_but_a_dict_is_the_declarations_error(data: Any):
    for cls in (Message, TextBlock, Usage):
        _same_as_declaration(cls, data)


@FUZZ
@given(st.lists(BLOCK, max_size=4), st.sampled_from(["user", "assistant"]))
def test_a_message_built_from_instances_as_a_provider_does_is_the_declarations(
    blocks: list[dict[str, Any]], role: Literal["user", "assistant"]
):
    """Keyword construction from block instances (what a provider builds, what the engine
    copies): the same message and dumps as the declaration's from its own instances."""
    plain_blocks, declared_blocks = [], []
    for b in blocks:
        try:
            declared = getattr(messages_schema, _class_of(b)).model_validate(b)
        except ValidationError:
            continue
        declared_blocks.append(declared)
        plain_blocks.append(getattr(messages, _class_of(b))(**b))
    got = Message(role=role, content=plain_blocks, kind="prompt")
    expected = messages_schema.Message(role=role, content=declared_blocks, kind="prompt")
    assert _shape(got) == _shape(expected)
    assert got.model_dump(mode="json", exclude_none=True) == expected.model_dump(
        mode="json", exclude_none=True
    )
    assert got.content == plain_blocks and all(
        a is b for a, b in zip(got.content, plain_blocks, strict=True)
    ), "an instance is kept as it is, as pydantic keeps it"


def _class_of(block: dict[str, Any]) -> str:
    """The block class a dict's tag names (`TextBlock` for a tag that names none)."""
    tag = block.get("type")
    names = {
        "text": "TextBlock",
        "image": "ImageBlock",
        "thinking": "ThinkingBlock",
        "redacted_thinking": "RedactedThinkingBlock",
        "tool_use": "ToolUseBlock",
        "tool_result": "ToolResultBlock",
    }
    return names.get(tag, "TextBlock") if isinstance(tag, str) else "TextBlock"


# --------------------------------------------------------------------------- behaviour


def test_the_methods_read_the_blocks():
    image = ImageBlock(source=ImageSource(media_type="image/png", data="aGk="), path="a.png")
    call = ToolUseBlock(id="toolu_1", name="Read", input={"file_path": "a.py"})
    m = Message(
        role="assistant",
        content=[
            ThinkingBlock(thinking="Let me ", signature="sig"),
            TextBlock(text="Reading "),
            ThinkingBlock(thinking="look."),
            image,
            TextBlock(text="it."),
            call,
        ],
    )
    assert m.text() == "Reading it."
    assert m.thinking() == "Let me look."
    assert m.images() == [image]
    assert m.tool_uses() == [call]
    hi = Message.user_text("hi")
    assert hi.model_dump(mode="json", exclude_none=True) == {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
    }
    assert hi.model_fields_set == {"role", "content"}
    usage = Usage(input_tokens=10, cache_creation_input_tokens=3, cache_read_input_tokens=100)
    assert usage.prompt_tokens == 113
    assert Usage().model_dump_json() == messages_schema.Usage().model_dump_json()


def test_a_deep_copy_shares_nothing_with_its_original():
    original = Message(
        role="assistant", content=[ToolUseBlock(id="t", name="Bash", input={"argv": ["ls"]})]
    )
    copied = original.model_copy(update={"id": "m_1"}, deep=True)
    copied.tool_uses()[0].input["argv"].append("-l")
    assert original.tool_uses()[0].input == {"argv": ["ls"]}
    assert copied.id == "m_1" and original.id is None
    assert "id" in copied.model_fields_set and "id" not in original.model_fields_set


def test_an_unknown_block_type_is_the_declarations_error():
    line = {"t": "message", "role": "user", "content": [{"type": "video", "url": "x"}]}
    with pytest.raises(ValidationError) as caught:
        Message.model_validate(line)
    assert caught.value.errors()[0]["type"] == "union_tag_invalid"
    assert isinstance(caught.value, ValueError)


# --------------------------------------------------------------------------- no pydantic

_PROBE = """
import json, sys
from sema_rpc.core.messages import (
    ImageBlock, ImageSource, Message, TextBlock, ThinkingBlock, ToolResultBlock,
    ToolUseBlock, Usage,
)
m = Message(role="assistant", content=[
    ThinkingBlock(thinking="hm", signature="s"), TextBlock(text="hi"),
    ToolUseBlock(id="t1", name="Read", input={"file_path": "a.py"}),
])
line = {"t": "message", "n": 1, **m.model_dump(mode="json", exclude_none=True)}
again = Message.model_validate(json.loads(json.dumps(line)))
assert again == m, (again, m)
image = ImageBlock(source=ImageSource(media_type="image/png", data="aGk="))
Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="x"), image])
m.model_copy(update={"id": "m_1"}, deep=True).model_dump_json()
Usage(input_tokens=3).model_dump_json()
loaded = sorted(k for k in sys.modules if k.split(".")[0] in ("pydantic", "pydantic_core"))
try:
    Message.model_validate({"role": "robot", "content": []})
except ValueError as exc:
    error = type(exc).__name__
print(json.dumps({"loaded": loaded, "error": error,
                  "schema": "sema_rpc.core.messages_schema" in sys.modules}))
"""


def test_building_dumping_and_reading_a_message_imports_no_pydantic():
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["loaded"] == []
    # a line that is not a message is still pydantic's error (imported then)
    assert seen["error"] == "ValidationError"
    assert seen["schema"] is True
