"""End-to-end fixtures: a real `sema-rpc` subprocess, a scripted model server, a temp workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.scripted_llm import ScriptedLLM
from tests.support.wire_client import WireClient


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\n\nA tiny project.\n")
    for i in range(8):
        (root / "src" / f"mod{i}.py").write_text(
            f"VALUE_{i} = {i}\n" + "".join(f"line {n}\n" for n in range(200))
        )
    return root


@pytest.fixture
def server_env(scripted_llm: ScriptedLLM, tmp_path: Path) -> dict[str, str]:
    sema_root = tmp_path / "sema-root"
    sema_root.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "SEMA_ROOT": str(sema_root),
        "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
        "ANTHROPIC_BASE_URL": scripted_llm.url,
        "OPENAI_API_KEY": "sk-test-openai-000000",
        "OPENAI_BASE_URL": scripted_llm.openai_url,
        "SEMA_MAX_RETRIES": "2",
        "SEMA_LOG_LEVEL": "WARNING",
    }


@pytest.fixture
async def client(server_env: dict[str, str]) -> AsyncIterator[WireClient]:
    async with WireClient(env=server_env) as c:
        yield c
