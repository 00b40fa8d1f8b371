"""Installing the release wheel the ways the README tells users to, outside the checkout:
`uv tool install`, `pipx install`, `uvx --from`. Shared by tests/dist/test_install.py (does
the installed agent work?) and bench/bench_install_routes.py (how long does it take?).

Every route runs in its own folder standing in for a new user's machine: a temporary HOME,
fresh uv and pipx tool directories, an empty uv cache, the interpreter the venv was made
from (never a downloaded one), and `--no-index` with a folder of wheels gathered once by
pip (from its cache or the package index), as from an index whose files are cached.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BASE_PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
ROUTES = ("uv tool", "pipx", "uvx")
DEMO_PROMPT = "What is in this project?"


def run_checked(
    cmd: list[str], timeout: float = 900, **kw: object
) -> subprocess.CompletedProcess[str]:
    """`cmd` run to its end; a failure raises with its whole output (what to fix is in it)."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[:5]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def _pip_env() -> dict[str, str]:
    """pip's environment with the user's own pip configuration (where it finds packages)
    even while HOME points elsewhere (the test suite moves it): read, never written."""
    env = dict(os.environ)
    real_home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    if "PIP_CONFIG_FILE" not in env and Path(env.get("HOME", "")) != real_home:
        for conf in (real_home / ".config/pip/pip.conf", real_home / ".pip/pip.conf"):
            if conf.is_file():
                env["PIP_CONFIG_FILE"] = str(conf)
                break
    return env


def build_wheel(outdir: Path) -> Path:
    """The release wheel, built as `make dist` builds it (sdist first, the wheel from it)."""
    cmd = [sys.executable, "-m", "build", "--outdir", str(outdir), str(REPO)]
    run_checked(cmd, env=_pip_env())  # its build environment is installed by pip
    return next(outdir.glob("sema_rpc-*-py3-none-any.whl"))


def gather_wheelhouse(wheel: Path, wheelhouse: Path) -> Path:
    """`wheel` and every dependency as wheels in `wheelhouse`, for `--no-index` installs."""
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "-w", str(wheelhouse), str(wheel)]
    run_checked(cmd, env=_pip_env(), cwd=wheelhouse.parent)
    return wheelhouse


def offline_args(wheelhouse: Path) -> list[str]:
    return ["--no-index", "--find-links", str(wheelhouse)]


def route_env(root: Path) -> dict[str, str]:
    """A new user's environment under `root` (created): nothing inherited but PATH's system
    folders and TMPDIR; HOME, SEMA_ROOT, tool folders and the uv cache all inside `root`."""
    (root / "home").mkdir(parents=True, exist_ok=True)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(root / "home"),
        "SEMA_ROOT": str(root / "sema-root"),
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "UV_TOOL_DIR": str(root / "uv-tools"),
        "UV_TOOL_BIN_DIR": str(root / "bin"),
        "UV_CACHE_DIR": str(root / "uv-cache"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_CONFIG": "1",
        "PIPX_HOME": str(root / "pipx"),
        "PIPX_BIN_DIR": str(root / "bin"),
        "PIPX_MAN_DIR": str(root / "man"),
    }


def uvx(wheelhouse: Path) -> list[str]:
    """`uvx` with this machine's Python, offline from `wheelhouse`; the package follows."""
    return [str(BIN / "uvx"), "--python", BASE_PYTHON, *offline_args(wheelhouse)]


def install(route: str, wheel: Path, wheelhouse: Path, root: Path) -> list[str]:
    """Install `wheel` by `route` into `root` (see `route_env`); the command that starts the
    installed `sema-rpc` (arguments follow). `uvx` installs on its first start instead."""
    if route == "uvx":
        return [*uvx(wheelhouse), "--from", str(wheel), "sema-rpc"]
    offline = offline_args(wheelhouse)
    if route == "uv tool":
        cmd = [str(BIN / "uv"), "tool", "install", "--python", BASE_PYTHON, *offline]
    elif route == "pipx":
        cmd = [str(BIN / "pipx"), "install", "--python", BASE_PYTHON]
        cmd += ["--pip-args", " ".join(offline)]
    else:
        raise ValueError(f"unknown install route {route!r}: one of {', '.join(ROUTES)}")
    run_checked([*cmd, str(wheel)], env=route_env(root), cwd=root / "home")
    return [str(root / "bin" / "sema-rpc")]
