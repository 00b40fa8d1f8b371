"""The version every client sees (`--version`, `initialize`'s `serverInfo`, ACP's
`agentInfo`) is the installed package's metadata, read as `importlib.metadata` reads it.
(tests/dist/test_install.py checks the same for the built wheel, installed elsewhere.)"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import sema_rpc

REPO = Path(__file__).resolve().parents[1]


def test_the_version_is_the_package_metadata() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert sema_rpc.__version__ == importlib.metadata.version("sema-rpc") == declared


def test_without_an_installed_distribution_the_version_says_unknown(tmp_path: Path) -> None:
    # The checkout alone on the path, no site directory: nothing installed to read.
    code = "import sema_rpc; print(sema_rpc.__version__)"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == sema_rpc.UNKNOWN_VERSION


def test_clients_see_it_in_version_initialize_and_agent_info() -> None:
    version = sema_rpc.__version__
    cli = [sys.executable, "-m", "sema_rpc"]
    out = subprocess.run([*cli, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"sema-rpc {version} (protocol 1)"
    native = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
    acp = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    for flag, request, field in (("--jsonl", native, "serverInfo"), ("--acp", acp, "agentInfo")):
        done = subprocess.run(
            [*cli, flag], input=request, capture_output=True, text=True, timeout=60, check=True
        )
        answer = json.loads(done.stdout.splitlines()[0])
        assert answer["result"][field]["version"] == version
