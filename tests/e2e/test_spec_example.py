"""protocol/README.md's "Example exchange" is what the current build says on the wire."""

from __future__ import annotations

import json

import pytest

from tests.support import spec_example


@pytest.mark.parametrize("name", sorted(spec_example.BLOCKS))
async def test_the_spec_example_is_captured_from_the_build(name: str):
    documented = spec_example.readme_blocks(spec_example.README.read_text(encoding="utf-8"))
    assert name in documented, f"protocol/README.md has no `<!-- captured: {name} -->` block"
    captured = await spec_example.capture(name)
    assert captured == documented[name], (
        "protocol/README.md's example exchange drifted from the build: run `make spec`"
    )
    # What a reader copies is real JSON-RPC: every shown server message parses.
    for line in captured.splitlines():
        if line.startswith("← "):
            assert json.loads(line[2:])["jsonrpc"] == "2.0"


def test_rewriting_replaces_only_the_captured_blocks():
    text = (
        "# Spec\n\nprose\n\n<!-- captured: main -->\n```\nold line\n```\n\nmore prose\n"
        "```\nnot captured\n```\n<!-- captured: errors -->\n```\n```\n"
    )
    out = spec_example.rewrite(text, {"main": "→ a\n← b", "errors": "→ c"})
    assert out == (
        "# Spec\n\nprose\n\n<!-- captured: main -->\n```\n→ a\n← b\n```\n\nmore prose\n"
        "```\nnot captured\n```\n<!-- captured: errors -->\n```\n→ c\n```\n"
    )
    assert spec_example.readme_blocks(out) == {"main": "→ a\n← b", "errors": "→ c"}
