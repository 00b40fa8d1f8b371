from __future__ import annotations

import os
import time
from pathlib import Path

from sema_rpc.core.project import markdown_files
from sema_rpc.core.project.custom_commands import expand, list_commands, parse_command
from sema_rpc.core.project.markdown_files import parse_frontmatter
from sema_rpc.protocol import CommandListResult
from tests.engine import _context
from tests.engine._context import age_tree, write

sema_home = _context.sema_home  # fixture
ws = _context.ws  # fixture


def test_frontmatter_subset() -> None:
    text = (
        "---\n"
        "description: Run the tests  # a comment\n"
        'argument-hint: "[path] [--fast]"\n'
        "allowed-tools: [Read, 'Grep']\n"
        "tools:\n"
        "  - Read\n"
        "  - Glob\n"
        "when-to-use: >\n"
        "  When the user\n"
        "  asks for it.\n"
        "literal: |\n"
        "  line one\n"
        "  line two\n"
        "empty:\n"
        "not a key line\n"
        "---\n"
        "Body $ARGUMENTS\n"
    )
    meta, body = parse_frontmatter(text)
    assert meta == {
        "description": "Run the tests",
        "argument-hint": "[path] [--fast]",
        "allowed-tools": "Read, Grep",
        "tools": "Read, Glob",
        "when-to-use": "When the user asks for it.",
        "literal": "line one\nline two",
        "empty": "",
    }
    assert body == "Body $ARGUMENTS\n"
    assert parse_frontmatter("no frontmatter\n---\n") == ({}, "no frontmatter\n---\n")
    assert parse_frontmatter("---\nunterminated: yes\n") == ({}, "---\nunterminated: yes\n")
    assert parse_frontmatter("\ufeff---\r\na: b\r\n---\r\nx")[0] == {"a": "b"}


def test_names_sources_and_listing(ws: Path, sema_home: Path) -> None:
    write(ws / ".sema/commands/review.md", "---\ndescription: Review code\n---\nReview it.")
    write(
        ws / ".sema/commands/frontend/test.md",
        "---\nargument-hint: <file>\n---\n# Run the frontend tests\nnpm test $ARGUMENTS",
    )
    write(sema_home / "commands/review.md", "---\ndescription: user review\n---\nMine.")
    write(sema_home / "commands/deploy.md", "Deploy now.")
    commands = list_commands(ws)
    assert [(c.name, c.source) for c in commands] == [
        ("deploy", "user"),
        ("frontend:test", "project"),
        ("review", "project"),
    ]
    test = commands[1]
    assert test.description == "Run the frontend tests"  # from the first body line
    assert test.argument_hint == "<file>"
    wire = CommandListResult.model_validate({"commands": [c.wire() for c in commands]}).wire()
    assert wire["commands"][1] == {
        "name": "frontend:test",
        "description": "Run the frontend tests",
        "argumentHint": "<file>",
        "source": "project",
    }


def test_expand(ws: Path, sema_home: Path) -> None:
    write(ws / ".sema/commands/frontend/test.md", "---\nx: y\n---\nnpm test $ARGUMENTS --ci\n")
    write(ws / ".sema/commands/explain.md", "Explain this code simply.")
    assert expand("/frontend:test src/a.ts", ws) == "npm test src/a.ts --ci"
    assert expand("  /frontend:test  ", ws) == "npm test  --ci"
    assert expand("/explain", ws) == "Explain this code simply."
    assert expand("/explain the parser\nand the lexer", ws) == (
        "Explain this code simply.\n\nthe parser\nand the lexer"
    )
    assert expand("/unknown thing", ws) is None  # goes to the model unchanged
    assert expand("explain", ws) is None
    assert expand("/", ws) is None
    assert parse_command("/a:b  x y ") == ("a:b", "x y")


def test_cache_sees_new_edited_and_removed_files(ws: Path, sema_home: Path) -> None:
    root = ws / ".sema" / "commands"
    write(root / "one.md", "one")
    age_tree(ws)
    first = list_commands(ws)
    first = list_commands(ws)  # a racy first scan may have been redone; now cached
    assert list_commands(ws) == first
    cached = markdown_files._cache[(str(root), "", markdown_files.MAX_DEPTH)].files
    assert markdown_files.scan(root) is cached  # no rescan while nothing changed

    write(root / "sub" / "two.md", "two")
    assert [c.name for c in list_commands(ws)] == ["one", "sub:two"]
    age_tree(ws)
    write(root / "one.md", "ONE")
    os.utime(root / "one.md", (time.time() + 5, time.time() + 5))
    assert expand("/one", ws) == "ONE"
    (root / "sub" / "two.md").unlink()
    assert [c.name for c in list_commands(ws)] == ["one"]


def test_missing_directories(ws: Path, sema_home: Path) -> None:
    assert list_commands(ws) == []
    write(ws / ".sema/commands/late.md", "late")
    assert [c.name for c in list_commands(ws)] == ["late"]


def test_fifty_commands_are_fast(ws: Path, sema_home: Path) -> None:
    for i in range(50):
        write(ws / f".sema/commands/group{i % 5}/cmd{i}.md", f"---\ndescription: c{i}\n---\nDo {i}")
    age_tree(ws)
    list_commands(ws)
    list_commands(ws)
    start = time.perf_counter()
    for _ in range(20):
        assert expand("/group3:cmd13 now", ws) == "Do 13\n\nnow"
    per_call = (time.perf_counter() - start) / 20
    assert per_call < 0.01, per_call  # generous: it is ~0.1 ms warm
