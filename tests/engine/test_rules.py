from __future__ import annotations

from pathlib import Path

from sema_rpc.core.project import rules as rules_mod
from sema_rpc.core.project.rules import load_rules
from sema_rpc.engine.prompt.system_prompt import first_query_reminders
from tests.engine import _context
from tests.engine._context import write

sema_home = _context.sema_home  # fixture
ws = _context.ws  # fixture


def test_no_rules(ws: Path, sema_home: Path) -> None:
    assert load_rules(ws) is None
    assert first_query_reminders(None, todos_enabled=False) == []


def test_project_file_precedence(ws: Path, sema_home: Path) -> None:
    write(ws / "CLAUDE.md", "claude rules")
    assert "claude rules" in (load_rules(ws) or "")
    write(ws / "AGENT.md", "agent rules")
    text = load_rules(ws) or ""
    assert "agent rules" in text and "claude rules" not in text
    write(ws / "AGENTS.md", "agents rules")
    text = load_rules(ws) or ""
    assert "agents rules" in text and "agent rules" not in text
    assert f"Contents of {ws / 'AGENTS.md'} (project instructions" in text


def test_user_rules_and_reminder(ws: Path, sema_home: Path) -> None:
    write(sema_home / "AGENT.md", "always answer in French")
    write(ws / "AGENTS.md", "use tabs")
    text = load_rules(ws) or ""
    assert text.index("use tabs") < text.index("always answer in French")
    assert str(sema_home / "AGENT.md") in text
    todos, rules = first_query_reminders(text, todos_enabled=True)
    assert "TodoWrite" in todos
    assert rules.startswith("<system-reminder>\n") and rules.endswith("</system-reminder>")
    assert "use tabs" in rules
    assert first_query_reminders(text, todos_enabled=False) == [rules]


def test_cap(ws: Path, sema_home: Path, monkeypatch) -> None:
    monkeypatch.setattr(rules_mod, "MAX_RULES_BYTES", 100)
    write(ws / "AGENTS.md", "".join(f"rule number {i}\n" for i in range(50)))
    text = load_rules(ws) or ""
    assert "rule number 0" in text and "rule number 40" not in text
    assert "[AGENTS.md truncated at 0 KB]" in text
    assert not any(line.startswith("rule number") and len(line) < 13 for line in text.splitlines())


def test_empty_file_is_no_rules(ws: Path, sema_home: Path) -> None:
    write(ws / "AGENTS.md", "   \n")
    assert load_rules(ws) is None
