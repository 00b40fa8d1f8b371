"""The OS sandbox every command the model runs is confined by (see protocol/README.md,
Security, Sandbox).

A *policy* is a JSON-serialisable mapping built in the server by `policy()`; the process
that spawns a command passes it to the child, which calls `apply_in_child(policy)` right
before `exec`. The confinement is the kernel's, inherited by everything the command
starts, and cannot be undone from inside. `apply_in_child` raises when it cannot confine
(the spawn then fails: a command never runs less confined than its policy says).

This package is standard library only and imports nothing else of `sema_rpc`: the child
imports it under `python -I -S` with only the package root on `sys.path`. The OS-specific
part is one module (`linux.py`, Landlock); a port adds one module with the same two
functions (`abi_version`-style probe, `restrict`) — macOS: a Seatbelt profile applied with
`sandbox_init` before exec; Windows: an AppContainer / restricted token on the child.

Modes:
- `read-only`: reads anywhere the user can (but `hidden` paths), writes only in the
  private temp dir (and /dev/null & co.), no TCP.
- `workspace-write`: also writes inside the workspace, never inside its `.git` or
  `.sema` (see `_workspace_grants`), no TCP unless `network`.
- `off`: no confinement.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the child imports this package: `typing` would cost it start-up time
    from collections.abc import Mapping, Sequence
    from typing import Any

    from .settings import SandboxSettings as SandboxSettings

MODES = ("read-only", "workspace-write", "off")
PROTECTED = (".git", ".sema")
"""Entries at the workspace's top level no sandboxed command may change: git's config and
hooks run programs at the user's next commit; `.sema` holds the project's agent settings."""


def default_mode() -> str:
    """A new session's mode: `workspace-write` where the kernel can, else `off`."""
    return "workspace-write" if status()[0] else "off"


_status: tuple[bool, str | None, int | None] | None = None


def status() -> tuple[bool, str | None, int | None]:
    """(available, why not, kernel ABI) on this machine, probed once per process."""
    global _status
    if _status is None:
        if os.environ.get("SEMA_SANDBOX") == "0":
            _status = (False, "turned off by SEMA_SANDBOX=0 in the server's environment", None)
        elif sys.platform != "linux":
            _status = (False, f"no sandbox for {sys.platform} yet (Landlock is Linux only)", None)
        else:
            from . import linux

            try:
                abi = linux.abi_version()
            except OSError as exc:
                _status = (False, f"Landlock is unavailable: {exc.strerror}", None)
            else:
                if abi < linux.MIN_ABI:
                    why = f"Landlock ABI {abi} cannot refuse network connections (needs {linux.MIN_ABI})"
                    _status = (False, why, abi)
                else:
                    _status = (True, None, abi)
    return _status


def policy(
    mode: str,
    workspace: str | os.PathLike[str],
    temp_dir: str | os.PathLike[str],
    *,
    network: bool = False,
    hidden: Sequence[str | os.PathLike[str]] = (),
    visible: Sequence[str | os.PathLike[str]] = (),
    denied_subpaths: Sequence[str] = PROTECTED,
) -> dict[str, Any] | None:
    """The policy for one command; None for `off`. `hidden`: trees a sandboxed command may
    not read (the user's SEMA_ROOT); `visible`: trees inside them it still may."""
    if mode not in MODES:
        raise ValueError(f"unknown sandbox mode {mode!r}")
    if mode == "off":
        return None
    return {
        "mode": mode,
        "workspace": os.path.realpath(workspace),
        "tempDir": os.path.realpath(temp_dir),
        "network": bool(network),
        "hidden": [os.path.realpath(p) for p in hidden],
        "visible": [os.path.realpath(p) for p in visible],
        "deniedSubpaths": list(denied_subpaths),
    }


def prepare() -> None:
    """Load what `apply_in_child` needs (the OS module, ctypes, libc) in a process that
    forks commands, so that each forked child starts with it loaded instead of importing
    it again, per command, between fork and exec."""
    if sys.platform == "linux":
        from . import linux

        linux.prepare()


def apply_in_child(policy: Mapping[str, Any] | None) -> None:
    """Confine the calling process for good, as `policy` says; raises OSError or
    ValueError when it cannot (never returns less confined than asked)."""
    if policy is None or policy.get("mode") == "off":
        return
    mode = policy.get("mode")
    if mode not in ("read-only", "workspace-write"):
        raise ValueError(f"unknown sandbox mode {mode!r}")
    if sys.platform != "linux":
        raise OSError(0, f"no sandbox for {sys.platform}")
    from . import linux

    temp = str(policy["tempDir"])
    write_dirs: list[str] = [temp]
    write_files: list[str] = []
    if mode == "workspace-write":
        write_dirs, write_files = _workspace_grants(
            str(policy["workspace"]), list(policy.get("deniedSubpaths", PROTECTED))
        )
        write_dirs.append(temp)
    read: list[str] | None = None
    hidden = [str(p) for p in policy.get("hidden", ())]
    if hidden:
        read = _all_but("/", hidden)
        read += [str(p) for p in policy.get("visible", ()) if os.path.exists(p)]
        read += [str(policy["workspace"]), temp]
    linux.restrict(
        write_beneath=write_dirs,
        write_files=write_files,
        read_beneath=read,
        network=bool(policy.get("network", False)),
    )


def _workspace_grants(workspace: str, denied: list[str]) -> tuple[list[str], list[str]]:
    """Where a workspace-write command may write: (directories, files).

    Landlock only adds rights down a hierarchy: it cannot take `.git` back out of a
    writable workspace. So when a protected entry exists it is first frozen: bind-mounted
    read-only onto itself in a mount namespace of the command's own (`linux.freeze`), and
    the whole workspace is then writable. Where namespaces are refused (some distributions
    restrict unprivileged user namespaces), the fallback is stricter, never looser: write
    on each other top-level entry (a directory: everything beneath; a file: its content;
    symlinks skipped) and none on the workspace directory itself, so no entry can be
    created, removed or renamed at the top level. With no protected entry present the whole
    workspace is writable (creating `.git` is then like `git init`: the workspace's own,
    untrusted content)."""
    try:
        names = os.listdir(workspace)
    except OSError:
        return [], []
    present = [os.path.join(workspace, name) for name in names if name in denied]
    if not present:
        return [workspace], []
    from . import linux

    try:
        linux.freeze(present)
    except OSError:
        pass
    else:
        return [workspace], []
    dirs: list[str] = []
    files: list[str] = []
    for name in names:
        if name in denied:
            continue
        path = os.path.join(workspace, name)
        if os.path.islink(path):
            continue
        (dirs if os.path.isdir(path) else files).append(path)
    return dirs, files


def _all_but(root: str, hidden: list[str]) -> list[str]:
    """Paths that together cover everything under `root` except the `hidden` trees:
    the siblings of each hidden tree and of each of its ancestors below `root`."""
    hidden = [h for h in hidden if h != root and _inside(h, root)]
    if not hidden:
        return [root]
    out: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return out
    for name in names:
        path = os.path.join(root, name)
        if path in hidden or os.path.islink(path):
            continue
        below = [h for h in hidden if _inside(h, path)]
        out += _all_but(path, below) if below else [path]
    return out


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


# ------------------------------------------------------------ spawning today's way

BOOT = (
    "import sys,os,marshal\n"
    "sys.path.insert(0,sys.argv[1])\n"
    "from sema_rpc.sandbox import apply_in_child\n"
    "try:\n"
    " apply_in_child(marshal.loads(bytes.fromhex(sys.argv[2])))\n"
    "except Exception as e:\n"
    " sys.stderr.write('sema-rpc: the sandbox could not be set up, nothing was run: %s\\n'%e)\n"
    " os._exit(126)\n"
    "os.execv(sys.argv[3],sys.argv[3:])\n"
)
"""Confine, then exec the command: `python -I -S -c BOOT <package root> <policy> argv...`.
The policy travels as `marshal` (built in: no import, unlike json, on every command's
path). Exit status 126 (as a shell's "cannot execute") when the sandbox cannot be applied."""


def wrap_argv(policy: Mapping[str, Any] | None, argv: Sequence[str]) -> list[str]:
    """`argv` to run confined by `policy` (unchanged for None)."""
    if policy is None:
        return list(argv)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import marshal

    encoded = marshal.dumps(dict(policy)).hex()
    return [sys.executable, "-I", "-S", "-c", BOOT, root, encoded, *argv]


def __getattr__(name: str) -> Any:
    if name == "SandboxSettings":  # the server's side only; kept off the child's path
        from .settings import SandboxSettings

        return SandboxSettings
    raise AttributeError(name)
