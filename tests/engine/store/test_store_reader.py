"""One reading of a history file for every reader: the engine's loader, ACP's replay
(`conversation`) and the HTML view agree on what each line says, also on the lines the
old readers each took differently (a line nested too deep, a lone surrogate escape, a
message without a stored id, a torn last line, a kind this version does not know)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from sema_rpc.core.messages import TextBlock
from sema_rpc.engine.store.checkpoint_index import read_index
from sema_rpc.engine.store.history_format import history_path
from sema_rpc.engine.store.history_reader import conversation, load_history
from sema_rpc.record.view import load, render

SID = "edge-cases"
NESTED = b"[" * 100_000 + b"\n"
"""A line no JSON parser reads without running out of stack."""


@pytest.fixture(autouse=True)
def sema_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "sema-root"
    root.mkdir()
    monkeypatch.setenv("SEMA_ROOT", str(root))
    return root


def line(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry).encode() + b"\n"


def message(n: int, role: str, text: str, **extra: Any) -> bytes:
    content = [{"type": "text", "text": text}]
    return line({"t": "message", "n": n, "at": 1.0 + n, "role": role, "content": content, **extra})


def write_history(*lines: bytes) -> Path:
    path = history_path(SID)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"t": "meta", "v": 1, "n": 0, "at": 1.0, "sessionId": SID, "workingDir": "/w"}
    path.write_bytes(line(meta) + b"".join(lines))
    return path


def texts(messages: list[Any]) -> list[str]:
    return [b.text for m in messages for b in m.content if isinstance(b, TextBlock)]


def page_of(path: Path) -> tuple[str, int]:
    """The view's page for the file, and the lines the view says it skipped."""
    view = load(path)
    out = io.StringIO()
    render(view, out)
    return out.getvalue(), view.skipped


def test_a_line_nested_too_deep_is_skipped_by_every_reader():
    # The replay used to fail the whole `session/load` on it (RecursionError).
    path = write_history(
        message(1, "user", "first"), NESTED, message(2, "assistant", "second", id="m_a2")
    )
    loaded = load_history(SID)
    assert loaded is not None and loaded.skipped == 1
    assert texts(loaded.messages) == ["first", "second"]
    assert texts(conversation(SID)) == ["first", "second"]
    page, skipped = page_of(path)
    assert skipped == 1 and "second" in page


def test_a_checkpoint_index_line_nested_too_deep_is_skipped(tmp_path: Path):
    index = tmp_path / "index.jsonl"
    change = {"t": "change", "turn": "m_1", "path": "/w/a", "before": None, "after": "ab"}
    index.write_bytes(line({"t": "turn", "turn": "m_1"}) + NESTED + line(change))
    events, turns = read_index(index)
    assert [(e.path, e.after.sha) for e in events] == [("/w/a", "ab")]
    assert turns == {"m_1": 0}


def test_messages_without_a_stored_id_get_the_same_id_from_every_reader():
    # The replay used to give them none (no `messageId` to fork or rewind from).
    write_history(message(1, "user", "old prompt"), message(2, "assistant", "old answer"))
    loaded = load_history(SID)
    assert loaded is not None
    engine_ids = [m.id for m in loaded.messages]
    assert all(i and i.startswith("m_") for i in engine_ids)
    assert [m.id for m in conversation(SID)] == engine_ids
    again = load_history(SID)
    assert again is not None and [m.id for m in again.messages] == engine_ids


def test_a_lone_surrogate_escape_is_dropped_by_every_reader():
    # The view used to fail writing the page (a lone surrogate cannot be UTF-8).
    path = write_history(
        b'{"t":"message","n":1,"at":2.0,"role":"user","content":'
        b'[{"type":"text","text":"odd \\ud800 output"}]}\n'
    )
    loaded = load_history(SID)
    assert loaded is not None
    [engine_text] = texts(loaded.messages)
    assert "\ud800" not in engine_text and engine_text.startswith("odd ")
    assert texts(conversation(SID)) == [engine_text]
    page, skipped = page_of(path)
    assert skipped == 0
    assert engine_text in page and "\ud800" not in page


def test_a_torn_last_line_is_skipped_and_counted_by_every_reader():
    path = write_history(
        message(1, "user", "kept"), b'{"t":"message","n":2,"role":"assistant","content":[{"ty'
    )
    loaded = load_history(SID)
    assert loaded is not None and loaded.skipped == 1 and loaded.message_count == 1
    assert texts(conversation(SID)) == ["kept"]
    page, skipped = page_of(path)
    assert skipped == 1 and "kept" in page


def test_a_kind_this_version_does_not_know_changes_no_state_and_the_view_shows_it():
    path = write_history(
        message(1, "user", "hello"),
        line({"t": "bookmark", "n": 1, "at": 3.0, "label": "here"}),
        message(2, "assistant", "hi"),
    )
    loaded = load_history(SID)
    assert loaded is not None and loaded.skipped == 0
    assert texts(loaded.messages) == ["hello", "hi"]
    assert texts(conversation(SID)) == ["hello", "hi"]
    page, skipped = page_of(path)
    assert skipped == 0 and "bookmark" in page and "here" in page


def test_the_conversation_keeps_what_compaction_and_clear_hide_and_follows_rewinds():
    write_history(
        message(1, "user", "one", id="m_1"),
        message(2, "assistant", "two", id="m_2"),
        line({"t": "clear", "n": 2, "at": 4.0}),
        message(3, "user", "three", id="m_3"),
        message(4, "assistant", "four", id="m_4"),
        line({"t": "rewind", "n": 4, "at": 5.0, "messageId": "m_3", "restore": "both"}),
    )
    loaded = load_history(SID, whole=True)
    assert loaded is not None
    assert texts(loaded.messages) == []  # the model's view: cleared, then rewound
    assert texts(conversation(SID)) == ["one", "two"]
    with history_path(SID).open("ab") as f:
        f.write(line({"t": "redo", "n": 4, "at": 6.0}))
    assert texts(conversation(SID)) == ["one", "two", "three", "four"]
    again = load_history(SID)
    assert again is not None and texts(again.messages) == ["three", "four"]
