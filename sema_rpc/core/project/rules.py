"""Project and user rules, injected as a system reminder on a session's first query.

- project: the first of `AGENTS.md`, `AGENT.md` in the working dir, else `CLAUDE.md`;
- user: `$SEMA_ROOT/AGENT.md`.

Each file is capped at `MAX_RULES_BYTES` (cut at a line boundary, with a note).
"""

from __future__ import annotations

import logging
from pathlib import Path

from sema_rpc.core.config import sema_root

log = logging.getLogger(__name__)

PROJECT_RULE_FILES = ("AGENTS.md", "AGENT.md", "CLAUDE.md")
USER_RULE_FILE = "AGENT.md"
MAX_RULES_BYTES = 40 * 1024

RULES_HEADER = (
    "Codebase and user instructions are shown below. Be sure to adhere to these "
    "instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you "
    "MUST follow them exactly as written."
)


def project_rules_file(working_dir: Path) -> Path | None:
    for name in PROJECT_RULE_FILES:
        path = Path(working_dir) / name
        if path.is_file():
            return path
    return None


def user_rules_file() -> Path | None:
    path = sema_root() / USER_RULE_FILE
    return path if path.is_file() else None


def _read_capped(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_RULES_BYTES + 1)
    except OSError as exc:
        log.warning("cannot read rules file %s: %s", path, exc)
        return None
    truncated = len(data) > MAX_RULES_BYTES
    if truncated:
        data = data[:MAX_RULES_BYTES]
        cut = data.rfind(b"\n")
        if cut > 0:
            data = data[:cut]
    text = data.decode("utf-8", errors="ignore").strip()
    if truncated:
        text += f"\n\n[{path.name} truncated at {MAX_RULES_BYTES // 1024} KB]"
    return text or None


def load_rules(working_dir: Path) -> str | None:
    """The rules as a system-reminder body, or None when there are none.

    Wrap it with `system_prompt.first_query_reminders(rules, …)`.
    """
    sections: list[str] = []
    project = project_rules_file(working_dir)
    if project is not None and (text := _read_capped(project)):
        sections.append(
            f"Contents of {project} (project instructions, checked into the codebase):\n\n{text}"
        )
    user = user_rules_file()
    if user is not None and (text := _read_capped(user)):
        sections.append(
            f"Contents of {user} (user's private global instructions for all projects):\n\n{text}"
        )
    if not sections:
        return None
    return "\n\n".join([RULES_HEADER, *sections])
