"""Who decides whether a tool call may run: the session's mode, stored rules, or the editor.

Decision order for a call whose tool asked for consent (`Tool.permission()` returned a
`PermissionAsk`):
1. A path outside the working dir is asked every time; no mode or rule covers it, and
   when the client cannot be asked it is refused.
2. A call that would leave the OS sandbox (`PermissionAsk.leaves_sandbox`) is allowed by
   a stored rule of its own kind or by the user's answer, never by a mode.
3. `bypass` allows; `acceptEdits` allows file edits (`PermissionAsk.file_edit`) inside
   the workspace and commands confined to the workspace by the sandbox (`sandboxed`).
4. A stored "allow always" rule that covers the call allows. What a rule looks like and
   what it covers is the tool's own business: its `PermissionAsk` carries the rule an
   "always" answer stores and, when matching is more than equality, `covered_by`.
5. Otherwise the editor is asked (`tool:permission:request`); a client without the
   `permissions` capability gets nothing asked and the call is refused.

Rules persist per project in `$SEMA_ROOT/projects/<project-key>/settings.json` as
`{"permissions": {"allow": ["Bash(git commit:*)", "Edit", "mcp__srv__tool"]}}`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from sema_rpc.core.config import sema_root
from sema_rpc.core.files import write_private
from sema_rpc.plain_record import Record

log = logging.getLogger(__name__)


class PermissionAsk(Record):
    """What the editor is shown when a call needs consent."""

    # Plain classes (every server loads this module; a dataclass costs its creation).
    __slots__ = (
        "ask_every_time",
        "content",
        "content_kind",
        "covered_by",
        "file_edit",
        "leaves_sandbox",
        "rule",
        "sandboxed",
        "title",
    )
    _fields = (
        "title",
        "content",
        "content_kind",
        "rule",
        "ask_every_time",
        "file_edit",
        "covered_by",
        "sandboxed",
        "leaves_sandbox",
    )

    title: str
    content: str
    content_kind: Literal["text", "diff"]
    rule: str | None
    """The rule an `allow_always` answer would store, e.g. `Bash(git commit:*)`."""
    ask_every_time: bool
    """Asked every time, never covered by a mode or an always-rule: the call touches a path
    outside the working dir, or a protected one inside it (`.git/`, whose config can make
    read-only git commands run programs)."""
    file_edit: bool
    """A change to a file in the workspace: the `acceptEdits` mode allows it."""
    covered_by: Callable[[str], bool] | None
    """Whether a stored rule allows this call; None: a rule equal to `rule` does."""
    sandboxed: bool
    """A command the OS sandbox confines to the workspace (no `.git/`, no network): the
    `acceptEdits` mode allows it, as it allows file edits."""
    leaves_sandbox: bool
    """A command to run outside the session's OS sandbox: only the user (an answer, or an
    "always" rule stored for it) allows it, never `bypass` or `acceptEdits`."""

    def __init__(
        self,
        title: str,
        content: str,
        content_kind: Literal["text", "diff"] = "text",
        rule: str | None = None,
        ask_every_time: bool = False,
        file_edit: bool = False,
        covered_by: Callable[[str], bool] | None = None,
        sandboxed: bool = False,
        leaves_sandbox: bool = False,
    ) -> None:
        self.title = title
        self.content = content
        self.content_kind = content_kind
        self.rule = rule
        self.ask_every_time = ask_every_time
        self.file_edit = file_edit
        self.covered_by = covered_by
        self.sandboxed = sandboxed
        self.leaves_sandbox = leaves_sandbox

    def covered(self, stored: str) -> bool:
        if self.covered_by is not None:
            return self.covered_by(stored)
        return self.rule is not None and stored == self.rule


EDIT_RULE = "Edit"
"""The rule an "always" answer to a file edit stores: every Write and Edit in the workspace."""

REJECT_MESSAGE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected "
    "(eg. if it was a file edit, the new_string was NOT written to the file). "
    "STOP what you are doing and wait for the user to tell you how to proceed."
)
NO_CLIENT_MESSAGE = (
    "Permission to run this tool is required, but no one can be asked: the client does not "
    "answer permission requests and the session's permission mode does not allow it. "
    "The call was not run."
)


def feedback_message(feedback: str) -> str:
    return (
        "The user doesn't want to proceed with this tool use. The call was not run. "
        f"The user said: {feedback}"
    )


def project_key(working_dir: Path) -> str:
    """A stable, filesystem-safe folder name for a project: readable tail + hash of the path."""
    resolved = str(working_dir.resolve())
    tail = re.sub(r"[^A-Za-z0-9._-]+", "-", resolved.strip("/"))[-48:] or "root"
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:12]
    return f"{tail}-{digest}"


class RuleStore:
    """The project's persisted "allow always" rules.

    Every session of a project (in this process or another) shares the file: a rule one
    adds is seen by the others at their next decision (the file's mtime is checked), and
    `add` merges with what is on disk under a lock, so two sessions adding at once keep
    both rules."""

    def __init__(self, working_dir: Path):
        self.path = sema_root() / "projects" / project_key(working_dir) / "settings.json"
        self._rules: list[str] = []
        self._seen: tuple[int, int] | None = None

    def rules(self) -> list[str]:
        try:
            st = self.path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp != self._seen:
            self._seen = stamp
            self._rules = self._allow(self._read()) if stamp is not None else []
        return self._rules

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable permission settings %s: %s", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    @staticmethod
    def _allow(data: dict[str, Any]) -> list[str]:
        permissions = data.get("permissions")
        allow = permissions.get("allow", []) if isinstance(permissions, dict) else []
        return [r for r in allow if isinstance(r, str)] if isinstance(allow, list) else []

    def add(self, rule: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            data = self._read()
            rules = self._allow(data)
            if rule in rules:
                return
            rules.append(rule)
            permissions = data.get("permissions")
            if not isinstance(permissions, dict):
                permissions = data["permissions"] = {}
            permissions["allow"] = rules
            write_private(self.path, json.dumps(data, indent=2), make_dir=False)
        finally:
            os.close(lock_fd)  # releases the lock


Verdict = Literal["allow", "ask", "refuse"]


class PermissionPolicy(Record):
    _fields = ("mode", "store", "client_can_answer")

    mode: str  # PermissionMode
    store: RuleStore
    client_can_answer: bool

    def __init__(self, mode: str, store: RuleStore, client_can_answer: bool) -> None:
        self.mode = mode
        self.store = store
        self.client_can_answer = client_can_answer

    def decide(self, ask: PermissionAsk) -> Verdict:
        if ask.ask_every_time:
            return "ask" if self.client_can_answer else "refuse"
        if ask.leaves_sandbox:
            if any(ask.covered(rule) for rule in self.store.rules()):
                return "allow"
            return "ask" if self.client_can_answer else "refuse"
        if self.mode == "bypass":
            return "allow"
        if self.mode == "acceptEdits" and (ask.file_edit or ask.sandboxed):
            return "allow"
        if any(ask.covered(rule) for rule in self.store.rules()):
            return "allow"
        return "ask" if self.client_can_answer else "refuse"

    def rule_for_always(self, ask: PermissionAsk) -> str | None:
        """The rule an `allow_always` answer stores; None when nothing may be stored."""
        return None if ask.ask_every_time else ask.rule
