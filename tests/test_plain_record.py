"""The hand-written value classes (sema_rpc/plain_record.py) behave as the dataclasses they
replaced: equality by fields, a `Name(field=value)` repr, `replace` through the
constructor, frozen ones refusing assignment and hashing by their fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from sema_rpc.core.catalog import Price
from sema_rpc.core.config import ModelProfile
from sema_rpc.core.stream import ModelRequest, ProviderError, TextDelta, ToolSpec
from sema_rpc.engine.store.checkpoint_index import ABSENT, Content
from sema_rpc.plain_record import FrozenInstanceError
from sema_rpc.tools.base import ToolContext


def test_equal_by_fields_and_never_to_another_class() -> None:
    assert TextDelta("a") == TextDelta("a")
    assert TextDelta("a") != TextDelta("b")
    assert ToolSpec("Read", "reads", {}) == ToolSpec("Read", "reads", {})
    assert Content(None) == ABSENT and Content("x") != ABSENT
    assert Content(None) != (None, False)


def test_the_repr_names_the_class_and_its_fields_in_order() -> None:
    assert repr(TextDelta("hi")) == "TextDelta(text='hi')"
    assert repr(Content("abc", lost=True)) == "Content(sha='abc', lost=True)"
    request = ModelRequest("m", "sys", [])
    assert repr(request) == (
        "ModelRequest(model='m', system='sys', messages=[], tools=[], max_tokens=8192,"
        " thinking_budget=None, temperature=None)"
    )


def test_a_model_profile_never_shows_its_key() -> None:
    profile = ModelProfile("main", "anthropic", "claude-sonnet-4-5", api_key="sk-ant-hidden")
    assert "sk-ant-hidden" not in repr(profile)
    assert repr(profile).startswith("ModelProfile(name='main', provider='anthropic'")


def test_a_frozen_one_refuses_assignment_and_is_a_dict_key() -> None:
    price = Price(3.0, 15.0, 0.3, 3.75)
    with pytest.raises(FrozenInstanceError):
        price.input = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del price.output
    assert price.input == 3.0
    assert {price: "sonnet"}[Price(3.0, 15.0, 0.3, 3.75)] == "sonnet"
    with pytest.raises(TypeError):
        hash(TextDelta("mutable"))


def test_replace_copies_through_the_constructor() -> None:
    profile = ModelProfile("main", "anthropic", "claude-sonnet-4-5")
    thinking = profile.replace(thinking=True)
    assert thinking.thinking and not profile.thinking
    assert thinking.price == profile.price and thinking.images == profile.images
    assert thinking == ModelProfile("main", "anthropic", "claude-sonnet-4-5", thinking=True)

    error = ProviderError("authentication", "bad key")
    echoed = error.replace(message="invalid x-api-key: sk-ant-api03-echoedbytheprovider")
    assert "sk-ant-api03-echoedbytheprovider" not in echoed.message  # redacted as when built
    assert echoed.kind == "authentication"

    ctx = ToolContext(Path("/ws"), "s1")
    call = ctx.replace(tool_call_id="toolu_1", plan_mode=True)
    assert call.tool_call_id == "toolu_1" and call.plan_mode and not ctx.plan_mode
    assert call.read_files is ctx.read_files and call.services is ctx.services  # shared
    with pytest.raises(TypeError):
        ctx.replace(no_such_field=1)
