"""Always-rules are one file per project that every session (and process) shares."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from sema_rpc.core.policy.permissions import RuleStore


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEMA_ROOT", str(tmp_path / "sema-root"))
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_two_sessions_adding_rules_keep_both(project: Path) -> None:
    first, second = RuleStore(project), RuleStore(project)
    assert first.rules() == [] and second.rules() == []
    first.add("Bash(npm test:*)")
    second.add("Bash(make build:*)")
    on_disk = json.loads(first.path.read_text())["permissions"]["allow"]
    assert on_disk == ["Bash(npm test:*)", "Bash(make build:*)"]
    # each sees the other's rule at its next decision
    assert first.rules() == second.rules() == on_disk
    assert first.path.stat().st_mode & 0o777 == 0o600


def test_concurrent_adds_lose_nothing(project: Path) -> None:
    rules = [f"Bash(tool{i} run:*)" for i in range(40)]

    def add(rule: str) -> None:
        RuleStore(project).add(rule)

    threads = [threading.Thread(target=add, args=(r,)) for r in rules]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(RuleStore(project).rules()) == sorted(rules)


def test_other_settings_are_kept_and_a_corrupt_file_is_not_fatal(project: Path) -> None:
    store = RuleStore(project)
    store.path.parent.mkdir(parents=True)
    store.path.write_text('{"theme": "dark", "permissions": {"deny": ["Bash(rm:*)"]}}')
    store.add("Edit")
    data = json.loads(store.path.read_text())
    assert data == {"theme": "dark", "permissions": {"deny": ["Bash(rm:*)"], "allow": ["Edit"]}}
    store.path.write_text("{not json")
    assert RuleStore(project).rules() == []
