"""Skills: instructions the model loads on demand with the Skill tool.

Sources, project first (a project skill wins a name clash):
- `<working dir>/.sema/skills/<dir>/SKILL.md`  (source `project`)
- `$SEMA_ROOT/skills/<dir>/SKILL.md`            (source `user`)

Frontmatter `name` and `description` are required (a skill missing either is skipped
with a warning, once per file version); `allowed-tools` (comma list) and `when-to-use`
are optional. The system prompt lists each skill's name, description and when-to-use
(`skill_summaries`); the body is only sent when the model calls the Skill tool.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Literal

from sema_rpc.core.config import sema_root
from sema_rpc.core.project.markdown_files import MarkdownFile, scan

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_SUMMARY_CHARS = 400
"""Per skill in the system prompt; the full text comes with the Skill tool."""
_VALID_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]*$")
_warned: set[tuple[str, str]] = set()


class Skill:
    __slots__ = ("allowed_tools", "body", "description", "name", "path", "source", "when_to_use")

    def __init__(
        self,
        name: str,
        description: str,
        body: str,
        path: Path,
        source: Literal["project", "user"],
        allowed_tools: list[str] | None = None,
        when_to_use: str | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.body = body
        self.path = path
        """The SKILL.md file; its directory is the skill's base directory."""
        self.source: Literal["project", "user"] = source
        self.allowed_tools = allowed_tools
        self.when_to_use = when_to_use

    @property
    def base_dir(self) -> Path:
        return self.path.parent


def skill_dirs(working_dir: Path) -> list[tuple[Path, Literal["project", "user"]]]:
    return [
        (Path(working_dir) / ".sema" / "skills", "project"),
        (sema_root() / "skills", "user"),
    ]


def _warn_once(file: MarkdownFile, message: str) -> None:
    key = (str(file.path), message)
    if key not in _warned:
        _warned.add(key)
        log.warning("skipping skill %s: %s", file.path, message)


def _skill(file: MarkdownFile, source: Literal["project", "user"]) -> Skill | None:
    if file.rel.count("/") != 1:  # only <dir>/SKILL.md
        return None
    name = file.meta.get("name", "").strip()
    description = file.meta.get("description", "").strip()
    missing = [k for k, v in (("name", name), ("description", description)) if not v]
    if missing:
        _warn_once(file, f"frontmatter lacks {' and '.join(missing)}")
        return None
    if not _VALID_NAME.match(name):
        _warn_once(file, f"invalid name {name!r}")
        return None
    tools = file.meta.get("allowed-tools", "").strip()
    return Skill(
        name=name,
        description=description,
        body=file.body.strip(),
        path=file.path,
        source=source,
        allowed_tools=[t.strip() for t in tools.split(",") if t.strip()] or None,
        when_to_use=file.meta.get("when-to-use", "").strip()
        or file.meta.get("when_to_use", "").strip()
        or None,
    )


def list_skills(working_dir: Path) -> list[Skill]:
    """Every valid skill, project ones first, then user ones; cached by mtimes."""
    skills: dict[str, Skill] = {}
    for root, source in skill_dirs(working_dir):
        for file in scan(root, filename=SKILL_FILE, max_depth=1):
            skill = _skill(file, source)
            if skill is not None and skill.name not in skills:
                skills[skill.name] = skill
    return list(skills.values())


def find_skill(working_dir: Path, name: str) -> Skill | None:
    return next((s for s in list_skills(working_dir) if s.name == name), None)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def skill_summaries(skills: list[Skill]) -> str:
    """The system-prompt section listing the skills; "" when there are none."""
    if not skills:
        return ""
    lines = [
        "# Skills",
        "These skills hold instructions for specific tasks. When a task matches a skill, call "
        "the Skill tool with its name (and optional args) before doing the task, then follow "
        "the instructions it returns. Do not call a skill that is already loaded in this "
        "conversation.",
        "<available_skills>",
    ]
    for skill in skills:
        line = f"- {skill.name}: {_clip(skill.description)}"
        if skill.when_to_use:
            line += f" (when to use: {_clip(skill.when_to_use)})"
        lines.append(line)
    lines.append("</available_skills>")
    return "\n".join(lines)
