"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.scripted_llm import ScriptedLLM


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A scripted model server on 127.0.0.1 (see tests/support/scripted_llm.py)."""
    with ScriptedLLM() as llm:
        yield llm
