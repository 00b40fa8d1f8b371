from sema_rpc.tools.base import Tool
from sema_rpc.tools.registry import BUILTIN_TOOLS, WRITE_TOOL_NAMES, builtin_tools


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


def test_order_and_instances() -> None:
    assert [c.name for c in BUILTIN_TOOLS] == [
        "Read", "Glob", "Grep", "Bash", "Write", "Edit", "TodoWrite",
    ]  # fmt: skip
    tools = builtin_tools()
    assert names(tools) == [c.name for c in BUILTIN_TOOLS]
    assert all(isinstance(t, Tool) for t in tools)


def test_use_tools_and_plan_mode() -> None:
    assert names(builtin_tools(["Edit", "Read", "Nope"])) == ["Read", "Edit"]
    assert names(builtin_tools(plan_mode=True)) == ["Read", "Glob", "Grep", "Bash"]
    assert names(builtin_tools(["Bash", "Write"], plan_mode=True)) == ["Bash"]
    assert WRITE_TOOL_NAMES == {"Write", "Edit"}


def test_every_tool_is_described() -> None:
    for cls in BUILTIN_TOOLS:
        assert cls.description.strip() and len(cls.description) < 1500
        schema = cls.input_schema()
        assert schema["type"] == "object" and schema["properties"]
    assert [c.read_only for c in BUILTIN_TOOLS] == [True, True, True, False, False, False, False]
