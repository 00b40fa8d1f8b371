"""The in-process scripted provider, as its module docstring tells embedders to use it."""

from __future__ import annotations

import re

import sema_rpc.providers.scripted as scripted
from sema_rpc.core.messages import Message, TextBlock, ToolUseBlock
from sema_rpc.core.stream import ModelRequest, ResponseDone, ResponseFailed, TextDelta


def _docstring_example() -> str:
    """The `provider = ScriptedProvider([...])` block of the module docstring, dedented."""
    doc = scripted.__doc__ or ""
    match = re.search(r"^( +)provider = ScriptedProvider\(\[\n.*?^\1\]\)$", doc, re.M | re.S)
    assert match, "the module docstring lost its example"
    return "\n".join(line.removeprefix(match.group(1)) for line in match.group(0).splitlines())


async def test_the_docstring_example_runs_and_streams_its_replies_in_order():
    namespace = {
        "ScriptedProvider": scripted.ScriptedProvider,
        "ScriptedReply": scripted.ScriptedReply,
        "ToolUseBlock": ToolUseBlock,
    }
    exec(_docstring_example(), namespace)
    provider = namespace["provider"]
    request = ModelRequest(
        model="m", system="", messages=[Message(role="user", content=[TextBlock(text="go")])]
    )

    first = [event async for event in provider.stream(request)]
    second = [event async for event in provider.stream(request)]
    third = [event async for event in provider.stream(request)]

    assert isinstance(first[-1], ResponseDone) and first[-1].stop_reason == "tool_use"
    assert [
        block.name for block in first[-1].message.content if isinstance(block, ToolUseBlock)
    ] == ["Read"]
    assert "".join(e.text for e in second if isinstance(e, TextDelta)) == "Done."
    assert isinstance(second[-1], ResponseDone) and second[-1].stop_reason == "end_turn"
    assert isinstance(third[-1], ResponseFailed)  # the script ran out: a value, not an exception
