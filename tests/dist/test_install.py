"""The release, built and installed the ways a user installs it, outside the checkout.

Once per run the sdist and the wheel are built as `make dist` builds them (the wheel from
the sdist), into a temporary folder; pip gathers the dependencies as wheels (from its cache
or the package index). Then each route (`uv tool install`, `pipx install`, `uvx --from`)
installs the wheel offline into a new user's folders (tests/support/install_routes.py:
temporary HOME and SEMA_ROOT, fresh tool folders, an empty uv cache) and the installed
`sema-rpc` must: print the package's version, and answer the bundled demo (which needs the
package data: the recording and its workspace). The ACP Registry entry is launched the way
the registry's verification launches it (`uvx <package> <args>`), resolved against the
locally built wheel, and must answer ACP `initialize` over its pipes.

Slow (minutes): `make test-slow` runs it; `make test` leaves it out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.install_routes import (
    DEMO_PROMPT,
    REPO,
    ROUTES,
    build_wheel,
    gather_wheelhouse,
    install,
    route_env,
    run_checked,
    uvx,
)

pytestmark = pytest.mark.slow

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
VERSION = PROJECT["version"]


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the built sdist and wheel."""
    dist = tmp_path_factory.mktemp("dist")
    build_wheel(dist)
    return dist


@pytest.fixture(scope="module")
def wheel(release: Path) -> Path:
    return next(release.glob("sema_rpc-*-py3-none-any.whl"))


@pytest.fixture(scope="module")
def wheelhouse(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gather_wheelhouse(wheel, tmp_path_factory.mktemp("wheelhouse"))


def test_the_release_is_a_checked_sdist_and_wheel_at_the_version(release: Path) -> None:
    built = sorted(p.name for p in release.iterdir())
    assert built == [f"sema_rpc-{VERSION}-py3-none-any.whl", f"sema_rpc-{VERSION}.tar.gz"]
    run_checked([sys.executable, "-m", "twine", "check", "--strict", *map(str, release.iterdir())])


def test_the_wheel_ships_the_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in (
        "sema_rpc/data/cassettes/demo.jsonl",
        "sema_rpc/data/demo-workspace/README.md",
        "sema_rpc/data/demo-workspace/app.py",
        "sema_rpc/data/tool_schemas.json",
    ):
        assert data in names, f"{data} is missing from {wheel.name}"


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("route", ROUTES)
def test_the_installed_agent_prints_its_version_and_answers_the_demo(
    route: str, wheel: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    sema = install(route, wheel, wheelhouse, tmp_path)
    env, cwd = route_env(tmp_path), tmp_path / "home"
    if route != "uvx":  # the installed script, not the checkout's
        assert Path(sema[0]).resolve().is_relative_to(tmp_path)

    version = run_checked([*sema, "--version"], env=env, cwd=cwd)
    assert version.stdout.strip() == f"sema-rpc {VERSION} (protocol 1)"

    demo = ["run", "--format", "jsonl", "--model", "replay/demo", DEMO_PROMPT]
    events = _events(run_checked([*sema, *demo], env=env, cwd=cwd).stdout)
    ready = next(e["params"] for e in events if e.get("method") == "session:ready")
    workspace = Path(ready["workingDir"])
    # The demo's workspace is the one shipped in the installed package, not the checkout's.
    assert workspace.name == "demo-workspace"
    assert not workspace.is_relative_to(REPO)
    assert workspace.is_relative_to(tmp_path) or route == "uvx"
    done = {
        e["params"]["toolName"]: e["params"]["content"]
        for e in events
        if e.get("method") == "tool:execution:complete"
    }
    assert sorted(done["Glob"].split()) == ["app.py", "utils.py"]  # Glob: newest first
    assert "# tasklist" in done["Read"]
    answer = [e["params"]["content"] for e in events if e.get("method") == "message:complete"]
    assert answer[-1].startswith("This is **tasklist**, a tiny command-line to-do list")
    assert events[-1]["result"]["stopReason"] == "end_turn"
    # Its session was kept in this user's SEMA_ROOT.
    assert any((tmp_path / "sema-root").rglob("*.jsonl"))


def test_the_registry_entry_launched_by_uvx_answers_acp_initialize(
    wheelhouse: Path, tmp_path: Path
) -> None:
    entry = json.loads((REPO / "registry" / "sema-rpc" / "agent.json").read_text())
    launch = entry["distribution"]["uvx"]
    # As the registry's verification runs it (`uvx <package> <args>`), the package resolved
    # from the wheels built here instead of the package index.
    cmd = [*uvx(wheelhouse), launch["package"], *launch["args"]]
    stderr = (tmp_path / "stderr.log").open("w")
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=route_env(tmp_path),
        cwd=tmp_path / "home",
    )
    # uvx installs on this first start (offline): a generous deadline for a loaded machine.
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}},
        }
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, f"no answer; stderr:\n{(tmp_path / 'stderr.log').read_text()}"
        answer = json.loads(line)
        assert answer["id"] == 1
        assert answer["result"]["protocolVersion"] == 1
        assert answer["result"]["agentInfo"] == {
            "name": PROJECT["name"],
            "title": entry["name"],
            "version": entry["version"],
        }
        proc.stdin.close()  # the editor goes away: the agent ends, cleanly
        assert proc.wait(timeout=60) == 0
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
