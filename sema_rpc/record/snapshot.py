"""The saved state a session starts from: taken when recording (a meta line before each
`session/create`), written into the replay's empty SEMA_ROOT so the replay starts from
the same state:

    {"kind": "project", "workingDir": "<as sent>",
     "permissions": {"allow": [...]},       # the project's stored rules, if it has any file
     "inputHistory": [...],                 # the project's input history, if it has a file
     "sessionId": "…",                      # when session/create named one
     "sessionHistory": {"sessionId", "file", "text"}}   # that session's saved history

Nothing else of SEMA_ROOT is copied (never models.json, mcp.json or anything with keys).
The engine's modules are imported only when a snapshot is taken or restored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sema_rpc.core.files import write_private

if TYPE_CHECKING:
    from sema_rpc.record.paths import PathMap


def project_snapshot(params: Any) -> dict[str, Any] | None:
    """The saved state a `session/create` starts from (see the module doc); None when the
    params name no usable working dir."""
    if not isinstance(params, dict) or not isinstance(params.get("workingDir"), str):
        return None
    working_dir = Path(params["workingDir"]).expanduser()
    if not working_dir.is_absolute() or not working_dir.is_dir():
        return None
    from sema_rpc.core.policy.permissions import RuleStore
    from sema_rpc.engine.store.history_format import history_path, seed_json_path, valid_session_id
    from sema_rpc.engine.store.input_history import InputHistory

    meta: dict[str, Any] = {"kind": "project", "workingDir": params["workingDir"]}
    rules = RuleStore(working_dir)
    if rules.path.is_file():
        meta["permissions"] = {"allow": list(rules.rules())}
    inputs = InputHistory(working_dir)
    if inputs.path.is_file():
        meta["inputHistory"] = inputs.items()
    session_id = params.get("sessionId")
    if isinstance(session_id, str) and valid_session_id(session_id):
        meta["sessionId"] = session_id
        for path in (history_path(session_id), seed_json_path(session_id)):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            meta["sessionHistory"] = {"sessionId": session_id, "file": path.name, "text": text}
            break
    return meta


class Seeder:
    """Writes the saved state of the meta lines into the replay's empty SEMA_ROOT: each
    project's and each resumed session's state once, from its first meta line (later
    ones describe what the replayed run itself wrote)."""

    def __init__(self, root: Path, paths: PathMap):
        self.root = root
        self.paths = paths
        self._projects: set[str] = set()
        self._sessions: set[str] = set()

    def seed(self, meta: dict[str, Any]) -> None:
        from sema_rpc.core.policy.permissions import project_key

        if meta.get("kind") != "project" or not isinstance(meta.get("workingDir"), str):
            return
        meta = self.paths.apply_json(meta)
        key = project_key(Path(meta["workingDir"]).expanduser())
        if key not in self._projects:
            self._projects.add(key)
            folder = self.root / "projects" / key
            permissions = meta.get("permissions")
            if isinstance(permissions, dict):
                rules = [r for r in permissions.get("allow") or [] if isinstance(r, str)]
                settings = {"permissions": {"allow": rules}}
                write_private(folder / "settings.json", json.dumps(settings, indent=2))
            inputs = meta.get("inputHistory")
            if isinstance(inputs, list):
                from sema_rpc.engine.store.input_history import write_items

                write_items(
                    folder / "input-history.json", [i for i in inputs if isinstance(i, str)]
                )
        sid = meta.get("sessionId")
        if not isinstance(sid, str) or sid in self._sessions:
            return
        self._sessions.add(sid)  # later lines: the history the replayed run wrote itself
        history = meta.get("sessionHistory")
        if isinstance(history, dict) and isinstance(history.get("text"), str):
            name = history.get("file")
            if name in (f"{sid}.jsonl", f"{sid}.json"):
                write_private(self.root / "history" / str(name), history["text"])
