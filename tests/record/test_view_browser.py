"""`sema-rpc view`'s page in headless Chromium: what a person sees when opening it.

Needs Chromium (`/usr/bin/chromium`, or SEMA_CHROMIUM) and playwright-core from the VS
Code client's `npm ci`. Without them the test is skipped, except where
SEMA_VIEW_BROWSER=required: `make test-vscode` (CI) installs Chromium first
(clients/vscode/scripts/setup-e2e.sh) and runs this test that way, so it cannot skip
there. The screenshot and the page are kept in artifacts/view/ (gitignored).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.record.view_support import ANSWER, INJECTED, THINKING, record_session, run_view
from tests.support.wire_client import REPO

ARTIFACTS = REPO / "artifacts" / "view"
SCRIPT = Path(__file__).with_name("view_browser.mjs")


def _browser() -> tuple[str, str]:
    """(node, chromium), or skip/fail saying what is missing."""
    chromium = os.environ.get("SEMA_CHROMIUM") or (
        "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else shutil.which("chromium")
    )
    if chromium and not os.access(chromium, os.X_OK):
        chromium = None
    node = shutil.which("node")
    playwright = REPO / "clients" / "vscode" / "node_modules" / "playwright-core"
    missing = [
        what
        for what, ok in (
            ("chromium (clients/vscode/scripts/setup-e2e.sh installs it)", chromium),
            ("node", node),
            ("playwright-core (make clients/vscode/node_modules/.installed)", playwright.is_dir()),
        )
        if not ok
    ]
    if missing:
        message = "cannot open the page in a browser: missing " + ", ".join(missing)
        if os.environ.get("SEMA_VIEW_BROWSER") == "required":
            pytest.fail(message)
        pytest.skip(message)
    assert chromium and node
    return node, chromium


async def _open(node: str, chromium: str, page: Path, shot: Path, home: Path) -> dict:
    proc = await asyncio.create_subprocess_exec(
        node,
        str(SCRIPT),
        str(page),
        str(shot),
        chromium,
        str(home),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_the_page_in_chromium(server_env, scripted_llm, workspace, tmp_path: Path):
    node, chromium = _browser()
    run_dir, history = await record_session(server_env, scripted_llm, workspace, tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    home = tmp_path / "browser-home"
    home.mkdir()

    for name, source in (("recording", run_dir), ("history", history)):
        page = ARTIFACTS / f"{name}.html"
        code, err = await run_view(str(source), "-o", str(page))
        assert code == 0, err
        seen = await _open(node, chromium, page, ARTIFACTS / f"{name}.png", home)

        assert seen["requests"] == [], "the page loads nothing"
        assert seen["console_errors"] == [], "no CSP violation, no script error"
        assert seen["dialogs"] == [] and seen["pwned"] is None, "the tool output's script never ran"
        text = seen["text"]
        assert ANSWER in text and "What is this?" in text
        assert INJECTED in text, "shown as text"
        assert seen["svg"] >= 1, "the usage chart"
        assert len(seen["durations"]) == 2, "Read and Bash"
        assert all(t["duration"] for t in seen["durations"]), seen["durations"]
        # thinking is folded until opened; "expand all" (the page's one script) opens it
        assert THINKING not in text and THINKING in seen["text_open"]
        assert seen["open_before"] == 0 and seen["open_after"] == seen["details"] > 0
        if name == "recording":
            [bash] = [t for t in seen["durations"] if "touch marker" in t["title"]]
            assert bash["decision"] == "allow_once"
            assert bash["duration"].endswith(" ms") and int(bash["duration"][:-3]) >= 200
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000
