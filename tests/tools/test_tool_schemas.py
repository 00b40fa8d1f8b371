"""The built-in tools' input schemas are generated ahead (sema_rpc/data/tool_schemas.json):
the file matches what pydantic builds from each tool's `Input` now, and a tool hands the
model the file's schema, key order included (a reordered schema is another request)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import Field

from sema_rpc.tools import input_models
from sema_rpc.tools.base import TOOL_SCHEMAS_FILE, build_input_schema
from sema_rpc.tools.read import ReadTool
from sema_rpc.tools.registry import AGENT_TOOLS, BUILTIN_TOOLS, agent_tools, builtin_tools
from sema_rpc.tools.schemas import render


def test_the_generated_schemas_are_up_to_date():
    assert TOOL_SCHEMAS_FILE.read_text("utf-8") == render(), (
        f"{TOOL_SCHEMAS_FILE.name} is out of date with the tools' Input models. Rewrite it "
        "with:\n    make generate   (or: python -m sema_rpc.tools.schemas)"
    )


def test_every_built_in_tool_offers_the_generated_schema():
    stored = json.loads(TOOL_SCHEMAS_FILE.read_text("utf-8"))
    assert len(stored) == len(BUILTIN_TOOLS) + len(AGENT_TOOLS)
    for cls in [*BUILTIN_TOOLS, *AGENT_TOOLS]:
        offered = cls.input_schema()
        assert json.dumps(offered) == json.dumps(build_input_schema(cls)), cls.name
        assert offered == stored[f"{cls.__module__}:{cls.__qualname__}"]["input_schema"]
        assert "title" not in offered


def test_the_registry_offers_each_tool_as_its_class_describes_it(tmp_path: Path) -> None:
    """The tools a turn is offered come from the generated cards, their modules not
    imported; each says what its class says."""
    offered = [*builtin_tools(), *agent_tools(tmp_path, plan_mode=True)]
    classes = [*BUILTIN_TOOLS, *AGENT_TOOLS]
    assert [t.name for t in offered] == [c.name for c in classes]
    for tool, cls in zip(offered, classes, strict=True):
        assert tool.description == cls.description, cls.name
        assert tool.read_only == cls.read_only, cls.name
        assert json.dumps(tool.input_schema()) == json.dumps(cls.input_schema()), cls.name


def test_a_tool_the_file_does_not_name_builds_its_own():
    class Narrow(ReadTool):
        class Input(input_models.ReadInput):
            pages: int = Field(1, description="not in the generated file")

    schema = Narrow.input_schema()
    assert "pages" in schema["properties"]
    assert "pages" not in ReadTool.input_schema()["properties"]
    assert Narrow.Input.model_validate({"file_path": "a", "pages": 2}).pages == 2


def test_a_built_in_input_is_extended_through_its_declaration():
    """A built-in tool's `Input` is a generated plain form: a field added to it would be
    neither validated nor offered, so it is refused; its declaration is the one to extend."""
    with pytest.raises(TypeError, match="derive from the declaration"):

        class Wider(ReadTool.Input):  # type: ignore[misc]
            pages: int = 1
