"""End-to-end fixtures: a real `sema-rpc` subprocess, a scripted model server, a temp workspace.

`client` is a fresh server for one test. `shared_server` is one server per framing for a
whole module (per parallel worker), for tests that only send what changes nothing on the
server — bad input, read-only requests — and leave it serving (CONTRIBUTING.md, "Tests in
parallel").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

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


def make_server_env(llm: ScriptedLLM, base: Path) -> dict[str, str]:
    """A server's environment: its own HOME and SEMA_ROOT under `base`, the keys and
    both providers' base URLs pointing at `llm`."""
    sema_root = base / "sema-root"
    sema_root.mkdir()
    home = base / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "SEMA_ROOT": str(sema_root),
        "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
        "ANTHROPIC_BASE_URL": llm.url,
        "OPENAI_API_KEY": "sk-test-openai-000000",
        "OPENAI_BASE_URL": llm.openai_url,
        "SEMA_MAX_RETRIES": "2",
        "SEMA_LOG_LEVEL": "WARNING",
    }


@pytest.fixture
def server_env(scripted_llm: ScriptedLLM, tmp_path: Path) -> dict[str, str]:
    return make_server_env(scripted_llm, tmp_path)


@pytest.fixture
async def client(server_env: dict[str, str]) -> AsyncIterator[WireClient]:
    async with WireClient(env=server_env) as c:
        yield c


SharedServer = Callable[..., Awaitable[WireClient]]


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`server_env` for `shared_server`: its own model server (nothing scripted), HOME and
    SEMA_ROOT, for the module."""
    with ScriptedLLM() as llm:
        yield make_server_env(llm, tmp_path_factory.mktemp("shared-server"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_server(shared_env: dict[str, str]) -> AsyncIterator[SharedServer]:
    """`await shared_server(jsonl=True)`: the module's server for that framing, started on
    first use (again if a test ended it), with what the client saw so far forgotten.

    A test using it runs on the module's event loop:
    `@pytest.mark.asyncio(loop_scope="module")`."""
    clients: dict[bool, WireClient] = {}

    async def get(jsonl: bool = True) -> WireClient:
        client = clients.get(jsonl)
        if client is None or client.proc is None or client.proc.returncode is not None:
            client = clients[jsonl] = await WireClient(env=shared_env, jsonl=jsonl).start()
        client.received.clear()
        client.unsolicited.clear()
        client.server_requests.clear()
        return client

    yield get
    for client in clients.values():
        await client.close()
