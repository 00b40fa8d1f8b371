from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sema_rpc.core.project.skills import find_skill, list_skills, skill_summaries
from tests.engine import _context
from tests.engine._context import write

sema_home = _context.sema_home  # fixture
ws = _context.ws  # fixture

SKILL = """---
name: {name}
description: {description}
allowed-tools: Read, Bash
when-to-use: When releasing.
---
# Release
Steps for $ARGUMENTS.
"""


def test_sources_precedence_and_fields(ws: Path, sema_home: Path) -> None:
    write(ws / ".sema/skills/release/SKILL.md", SKILL.format(name="release", description="Ship it"))
    write(sema_home / "skills/rel/SKILL.md", SKILL.format(name="release", description="user one"))
    write(
        sema_home / "skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Read PDFs\n---\nUse pdftotext.",
    )
    skills = list_skills(ws)
    assert [(s.name, s.source) for s in skills] == [("release", "project"), ("pdf", "user")]
    release = skills[0]
    assert release.description == "Ship it"
    assert release.allowed_tools == ["Read", "Bash"]
    assert release.when_to_use == "When releasing."
    assert release.body == "# Release\nSteps for $ARGUMENTS."
    assert release.base_dir == ws / ".sema/skills/release"
    pdf = find_skill(ws, "pdf")
    assert pdf is not None and (pdf.path, pdf.source) == (skills[1].path, "user")
    assert find_skill(ws, "nope") is None


def test_invalid_skills_are_skipped_with_a_warning(
    ws: Path, sema_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(ws / ".sema/skills/a/SKILL.md", "---\nname: a\n---\nno description")
    write(ws / ".sema/skills/b/SKILL.md", "---\ndescription: no name\n---\n")
    write(ws / ".sema/skills/c/SKILL.md", "no frontmatter at all")
    write(ws / ".sema/skills/SKILL.md", "---\nname: top\ndescription: not in a dir\n---\n")
    write(ws / ".sema/skills/d/README.md", "---\nname: d\ndescription: wrong file\n---\n")
    with caplog.at_level(logging.WARNING, logger="sema_rpc.core.project.skills"):
        assert list_skills(ws) == []
    warnings = [r.getMessage() for r in caplog.records]
    assert any("a/SKILL.md" in w and "description" in w for w in warnings)
    assert any("b/SKILL.md" in w and "name" in w for w in warnings)
    assert any("c/SKILL.md" in w and "name and description" in w for w in warnings)


def test_summaries(ws: Path, sema_home: Path) -> None:
    assert skill_summaries([]) == ""
    write(ws / ".sema/skills/release/SKILL.md", SKILL.format(name="release", description="Ship it"))
    text = skill_summaries(list_skills(ws))
    assert "Skill tool" in text
    assert "- release: Ship it (when to use: When releasing.)" in text
    assert "Steps for" not in text  # bodies are loaded on demand only
