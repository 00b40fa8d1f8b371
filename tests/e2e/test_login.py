"""`sema-rpc login` / `logout` / `status`, and what uses the stored key.

The interactive flow runs in a real terminal (tmux: a pty, the key typed character by
character, the screen read back with `capture-pane`); the key check goes to the scripted
model server's `GET /v1/models` on 127.0.0.1, so it passes (or is refused) offline. Then
the stored key is used by `run` and by the ACP server, loses to the environment, is
redacted from tool output, and `logout` removes it. Every process gets a temporary HOME
and SEMA_ROOT and none of the model variables, unless a test sets them.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.ports import refusing_port
from tests.support.scripted_llm import Reply, ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
SEMA = [sys.executable, "-m", "sema_rpc"]
KEY = "compat-0a1b2c3d4e5f6a7b8c9d"
"""Not shaped like `sk-…`: only the stored-secret redaction can catch it."""
MODEL_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir()
    base = {k: v for k, v in os.environ.items() if k not in MODEL_VARS}
    return {**base, "HOME": str(tmp_path / "home"), "SEMA_ROOT": str(tmp_path / "root")}


def _sema(env: dict[str, str], *args: str, stdin: str = "", cwd: Path | None = None):
    return subprocess.run(
        [*SEMA, *args],
        input=stdin,
        env=env,
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _credentials(env: dict[str, str]) -> Path:
    return Path(env["SEMA_ROOT"]) / "credentials.json"


# --------------------------------------------------------------------------- tmux


class Tmux:
    def __init__(self, tmp: Path):
        if shutil.which("tmux") is None:
            pytest.fail("tmux is missing: `make test` installs it (Debian's tmux package)")
        self.socket = str(tmp / "tmux.sock")
        self.name = f"login-{uuid.uuid4().hex[:8]}"

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self, command: str) -> None:
        self._tmux("new-session", "-d", "-s", self.name, "-x", "200", "-y", "50", command)
        self._tmux("set-option", "-t", self.name, "remain-on-exit", "on")

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", self.name)

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared on the screen:\n{self.screen()}")

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.name, "-l", text)
        self._tmux("send-keys", "-t", self.name, "Enter")

    def kill(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)


def test_login_in_a_terminal_never_shows_the_key_and_stores_it_0600(
    env: dict[str, str], scripted_llm: ScriptedLLM, tmp_path: Path, workspace: Path
) -> None:
    scripted_llm.valid_keys = {KEY}
    tmux = Tmux(tmp_path)
    exports = " ".join(f"{k}={shlex.quote(env[k])}" for k in ("HOME", "SEMA_ROOT", "PATH"))
    command = f"cd {shlex.quote(str(REPO))} && env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY "
    command += f"{exports} {shlex.join(SEMA)} login; echo EXIT=$?"
    try:
        tmux.start(f"sh -c {shlex.quote(command)}")
        tmux.wait_for("Choose 1-3:")
        tmux.type("3")
        tmux.wait_for("Base URL")
        tmux.type(scripted_llm.openai_url)
        tmux.wait_for("Model id")
        tmux.type("scripted-model")
        tmux.wait_for("(not shown as you type):")
        tmux.type(KEY)
        screen = tmux.wait_for("EXIT=")
        full = tmux.screen()
    finally:
        tmux.kill()
    assert "EXIT=0" in screen
    assert "The key works" in screen and "Stored the openai key" in screen
    assert KEY not in full and KEY[:12] not in full
    path = _credentials(env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(path.read_text())
    assert stored == {
        "openai": {"apiKey": KEY, "baseURL": scripted_llm.openai_url, "model": "scripted-model"}
    }
    (check,) = scripted_llm.requests
    assert check.path == "/v1/models" and check.headers["authorization"] == f"Bearer {KEY}"

    # `status` names where the key comes from, never the key.
    status = _sema(env, "status")
    assert status.returncode == 0 and KEY not in status.stdout + status.stderr
    assert f"openai:     key from {path}" in status.stdout
    assert f"default model: openai/scripted-model at {scripted_llm.openai_url}" in status.stdout

    # `run` uses it (no model named, no key in the environment) and redacts it from what a
    # tool reads.
    (workspace / "notes.txt").write_text(f"the key is {KEY}\n")
    scripted_llm.script(Reply.tools([("Read", {"file_path": "notes.txt"}, "r1")]), Reply.text("ok"))
    done = _sema(env, "run", "--format", "text", "read notes", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    first, second = scripted_llm.requests[1:]
    assert first.path == "/v1/chat/completions" and first.body["model"] == "scripted-model"
    assert first.headers["authorization"] == f"Bearer {KEY}"
    tool_message = next(m for m in second.body["messages"] if m["role"] == "tool")
    assert "[REDACTED]" in json.dumps(tool_message) and KEY not in json.dumps(second.body)


def test_a_refused_key_is_not_stored(env: dict[str, str], scripted_llm: ScriptedLLM) -> None:
    scripted_llm.valid_keys = {"another-key-123456"}
    done = _sema(
        env, "login", "--provider", "anthropic", "--base-url", scripted_llm.url, stdin=KEY + "\n"
    )
    assert done.returncode == 1
    assert "refused this key (HTTP 401" in done.stdout and "Nothing was stored" in done.stdout
    assert KEY not in done.stdout + done.stderr
    assert not _credentials(env).exists()
    assert scripted_llm.requests[0].headers["x-api-key"] == KEY


def test_an_unreachable_endpoint_is_said_and_the_key_stored_unchecked(
    env: dict[str, str],
) -> None:
    port = refusing_port()  # a port nobody listens on
    done = _sema(
        env,
        "login",
        "--provider",
        "compatible",
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--model",
        "m1",
        stdin=KEY + "\n",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Could not check the key: cannot reach 127.0.0.1:{port}" in done.stdout
    assert "Storing it unchecked" in done.stdout
    assert json.loads(_credentials(env).read_text())["openai"]["apiKey"] == KEY


def test_the_environment_wins_and_logout_removes_the_stored_key(
    env: dict[str, str], scripted_llm: ScriptedLLM, workspace: Path
) -> None:
    done = _sema(
        env, "login", "--provider", "anthropic", "--base-url", scripted_llm.url, stdin=KEY + "\n"
    )
    assert done.returncode == 0 and "The key works" in done.stdout
    env_key = "sk-ant-from-the-environment-1"
    with_env = {**env, "ANTHROPIC_API_KEY": env_key, "ANTHROPIC_BASE_URL": scripted_llm.url}
    status = _sema(with_env, "status").stdout
    assert "anthropic:  key from the environment (ANTHROPIC_API_KEY)" in status
    assert "not used: the environment wins" in status
    scripted_llm.script(Reply.text("from env"))
    run = _sema(with_env, "run", "--format", "text", "hi", cwd=workspace)
    assert run.stdout.strip() == "from env"
    sent = [json.dumps(r.headers) for r in scripted_llm.requests[1:]]
    assert sent and all(env_key in h and KEY not in h for h in sent)

    out = _sema(env, "logout").stdout
    assert f"Removed the stored anthropic key from {_credentials(env)}" in out
    assert not _credentials(env).exists()
    after = _sema(env, "status")
    assert after.returncode == 1 and "anthropic:  no key" in after.stdout
    assert "No stored key to remove" in _sema(env, "logout", "openai").stdout


# --------------------------------------------------------------------------- ACP


def _acp(env: dict[str, str], *requests: dict) -> list[dict]:
    lines = "".join(
        json.dumps({"jsonrpc": "2.0", "id": i, **r}) + "\n" for i, r in enumerate(requests, 1)
    )
    done = subprocess.run(
        [*SEMA, "--acp"], input=lines, env=env, capture_output=True, text=True, timeout=60
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return sorted((a for a in answers if "id" in a), key=lambda a: a["id"])


def test_acp_advertises_the_terminal_login_and_authenticate_reports_a_usable_key(
    env: dict[str, str], scripted_llm: ScriptedLLM
) -> None:
    plain = {"method": "initialize", "params": {"protocolVersion": 1}}
    terminal = {
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True}}},
    }
    login = {"method": "authenticate", "params": {"methodId": "login"}}
    (without,) = _acp(env, plain)
    assert [m["id"] for m in without["result"]["authMethods"]] == ["environment"]
    init, before = _acp(env, terminal, login)
    methods = init["result"]["authMethods"]
    assert [m["id"] for m in methods] == ["environment", "login"]
    assert methods[1]["type"] == "terminal" and methods[1]["args"] == ["login"]
    assert "_meta" not in methods[1]
    assert before["error"]["code"] == -32000 and "sema-rpc login" in before["error"]["message"]

    # What the editor's terminal runs: the agent's command with the method's args.
    done = _sema(
        env,
        *methods[1]["args"],
        "--provider",
        "anthropic",
        "--base-url",
        scripted_llm.url,
        stdin=KEY + "\n",
    )
    assert done.returncode == 0
    _init, after = _acp(env, terminal, login)
    assert after["result"] == {}
    _init, unknown = _acp(env, terminal, {"method": "authenticate", "params": {"methodId": "x"}})
    assert unknown["error"]["code"] == -32602
