"""Landlock, through three system calls: the Linux half of the command sandbox.

Binding: a small `ctypes` module rather than a package. The code runs in the child between
fork and exec under `python -I -S` (no site-packages), so it must be standard library only;
the whole binding is three syscalls, two structs and a prctl; and the Python packages that
exist were young single-maintainer releases (a pre-release `landlock`, `landlockpy` and
`py-landlock` at 0.x) whose failure modes we would have to audit anyway on the one path
that must fail closed.

Semantics relied on (Landlock, `landlock(7)`):
- A ruleset *handles* access rights; a handled right is denied everywhere except beneath
  a path a rule grants it on. Rights are inherited down the directory hierarchy and
  checked against the resolved path, so a symlink pointing out is judged where it points.
- Linking or renaming across directories needs REFER on both sides and may never give a
  file more rights than it had: a hard link from outside into the workspace is refused.
- TCP connect/bind (ABI 4+) are refused unless a port is granted; we grant none.
- ABI 6 scopes: no abstract unix socket and no signal outside the sandbox's domain.
- A sandboxed process cannot mount, unmount or ptrace a process outside its domain (so
  `/proc/<server>/environ` is out of reach). Inherited by every child, irreversible.
Not covered by Landlock, hence not promised: UDP, unix sockets reached by path.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

SYS_CREATE_RULESET = 444  # the same number on every architecture (added after the split)
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

WRITE_ABI1 = (
    WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
)
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
"""The only rights a rule on a non-directory may grant."""

DEVICES_WRITABLE = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts")
MIN_ABI = 4
"""Below it TCP cannot be refused: the sandbox is reported unavailable rather than weaker."""


CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
_KEPT_FLAGS = {  # statvfs flag -> mount flag: a bind remount must keep what is locked
    os.ST_NOSUID: 2,
    os.ST_NODEV: 4,
    os.ST_NOEXEC: 8,
    os.ST_NOATIME: 1024,
    os.ST_NODIRATIME: 2048,
    os.ST_RELATIME: 1 << 21,
}


def freeze(paths: Sequence[str]) -> None:
    """Make `paths` read-only for this process and its children only: a private mount
    namespace (inside a user namespace of one's own uid when not root) where each path is
    bind-mounted onto itself read-only. Landlock, applied after, forbids undoing it (a
    sandboxed process may not mount or unmount), and a mount point cannot be renamed or
    removed. Raises OSError where the kernel or its policy refuses namespaces."""
    libc = _syscall()
    uid, gid = os.geteuid(), os.getegid()
    _check(libc.unshare(CLONE_NEWNS | (0 if uid == 0 else CLONE_NEWUSER)), "unshare")
    if uid != 0:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount(private)")
    for path in paths:
        raw = os.fsencode(path)
        _check(libc.mount(raw, raw, None, MS_BIND | MS_REC, None), f"bind {path}")
        st = os.statvfs(path)
        kept = sum(flag for bit, flag in _KEPT_FLAGS.items() if st.f_flag & bit)
        _check(
            libc.mount(None, raw, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, None),
            f"remount {path} read-only",
        )


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc: ctypes.CDLL | None = None


def _syscall() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def prepare() -> None:
    """libc loaded and the syscall's result type set (see `sandbox.prepare`)."""
    _syscall().syscall.restype = ctypes.c_long


def abi_version() -> int:
    """The kernel's Landlock ABI; raises OSError saying why there is none."""
    if not sys.platform.startswith("linux"):
        raise OSError(0, f"Landlock is a Linux feature; this is {sys.platform}")
    libc = _syscall()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    if version < 0:
        err = ctypes.get_errno()
        why = {
            38: "the kernel predates Landlock (5.13)",
            95: "Landlock is built but not enabled (add it to the lsm= boot parameter)",
        }.get(err, os.strerror(err))
        raise OSError(err, why)
    return int(version)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def restrict(
    *,
    write_beneath: Iterable[str],
    write_files: Iterable[str] = (),
    read_beneath: Sequence[str] | None = None,
    network: bool = False,
) -> None:
    """Confine this thread (and all it will exec) for good.

    `write_beneath`: directories where every write right is granted; `write_files`: files
    that may be written and truncated (not removed or replaced). `read_beneath`: None
    leaves reading unrestricted; a list handles READ_FILE and grants it only there (the
    entries may be files). `network`: False refuses TCP connect and bind."""
    abi = abi_version()
    if abi < MIN_ABI:
        raise OSError(0, f"Landlock ABI {abi} cannot refuse TCP (needs {MIN_ABI})")
    write = WRITE_ABI1 | REFER | TRUNCATE
    handled = write | (READ_FILE if read_beneath is not None else 0)
    attr = _RulesetAttr(handled, 0 if network else NET_BIND_TCP | NET_CONNECT_TCP, 0)
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16
    libc = _syscall()
    libc.syscall.restype = ctypes.c_long
    ruleset = _check(
        libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "landlock_create_ruleset",
    )
    try:
        grants: list[tuple[str, int]] = [(p, write) for p in write_beneath]
        grants += [(p, WRITE_FILE | TRUNCATE) for p in write_files]
        grants += [(p, WRITE_FILE) for p in DEVICES_WRITABLE]
        grants += [(p, READ_FILE) for p in read_beneath or ()]
        for path, rights in grants:
            _add_rule(libc, ruleset, path, rights)
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    """Grant `rights` beneath `path`. A path that vanished since it was listed (another
    process's temp file) or cannot be opened is skipped: a missing grant only takes
    rights away, never adds any."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS
        if not rights:
            return
        rule = _PathBeneathAttr(rights, fd)
        _check(
            libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0),
            f"landlock_add_rule({path})",
        )
    finally:
        os.close(fd)
