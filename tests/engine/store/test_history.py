"""History on disk: append-only JSONL, resume, torn lines, listing, input history."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from pathlib import Path

import pytest

from sema_rpc.core.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    new_message_id,
)
from sema_rpc.engine.store.curated import (
    ORPHANED_TOOL_RESULT,
    append_curated,
    cut_before,
    dangling_tool_results,
)
from sema_rpc.engine.store.history_format import HistoryError, history_path, valid_session_id
from sema_rpc.engine.store.history_reader import load_history
from sema_rpc.engine.store.history_writer import HistoryStore, flush_all
from sema_rpc.engine.store.input_history import InputHistory
from sema_rpc.engine.store.listing import list_sessions


@pytest.fixture(autouse=True)
def sema_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "sema-root"
    root.mkdir()
    monkeypatch.setenv("SEMA_ROOT", str(root))
    return root


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    return d


def user(text: str) -> Message:
    return Message.user_text(text)


def assistant_with_tool(call_id: str = "toolu_1") -> Message:
    return Message(
        role="assistant",
        content=[
            ThinkingBlock(thinking="Let me look.", signature="sig-abc"),
            TextBlock(text="Reading it."),
            ToolUseBlock(id=call_id, name="Read", input={"file_path": "a.py"}),
        ],
    )


def tool_result(call_id: str = "toolu_1") -> Message:
    return Message(
        role="user", content=[ToolResultBlock(tool_use_id=call_id, content="print('hi')")]
    )


def answer(text: str = "It prints hi.") -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)])


def write_session(session_id: str, workdir: Path, messages: list[Message]) -> HistoryStore:
    store = HistoryStore(session_id, workdir)
    for m in messages:
        m.id = m.id or new_message_id()  # as the engine gives them
        store.append_message(m)
    store.flush()  # the writer thread has put them in the file
    return store


def test_round_trip_keeps_every_block_and_signature(workdir):
    messages = [user("What does a.py do?"), assistant_with_tool(), tool_result(), answer()]
    store = write_session("s1", workdir, messages)
    store.append_event("todos", todos=[{"content": "x", "status": "pending", "activeForm": "X"}])
    store.append_event("mode", mode="Plan")
    store.close()

    loaded = load_history("s1")
    assert loaded is not None
    assert loaded.messages == messages
    assert loaded.messages[1].content[0].signature == "sig-abc"  # type: ignore[union-attr]
    assert loaded.message_count == 4
    assert loaded.todos == [{"content": "x", "status": "pending", "activeForm": "X"}]
    assert loaded.mode == "Plan"
    assert loaded.working_dir == str(workdir)
    assert loaded.skipped == 0


def test_files_are_private_and_appended_never_rewritten(workdir, sema_root):
    store = write_session("s2", workdir, [user("one")])
    path = history_path("s2")
    inode = path.stat().st_ino
    first = path.read_bytes()
    store.append_message(answer())
    store.flush()
    assert path.read_bytes().startswith(first)
    assert path.stat().st_ino == inode
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((sema_root / "history").stat().st_mode) == 0o700
    lines = path.read_bytes().splitlines()
    assert [json.loads(x)["t"] for x in lines] == ["meta", "message", "message"]
    assert [json.loads(x)["n"] for x in lines] == [0, 1, 2]


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_a_new_line(workdir, caplog):
    store = write_session("torn", workdir, [user("one"), answer("two")])
    store.close()
    store.flush()
    path = history_path("torn")
    with open(path, "ab") as f:  # killed mid-write
        f.write(b'{"t":"message","n":3,"role":"user","content":[{"type":"te')
    with caplog.at_level(logging.WARNING):
        loaded = load_history("torn")
    assert loaded is not None and loaded.skipped == 1
    assert [m.text() for m in loaded.messages] == ["one", "two"]
    assert "torn last line" in caplog.text

    store = HistoryStore("torn", workdir, loaded.message_count)
    store.append_message(user("three"))
    store.close()
    again = load_history("torn")
    assert again is not None
    assert [m.text() for m in again.messages] == ["one", "two", "three"]
    assert again.skipped == 1


def test_garbage_and_invalid_entries_are_skipped_not_fatal(workdir, caplog):
    path = history_path("junk")
    store = write_session("junk", workdir, [user("one")])
    store.close()
    with open(path, "ab") as f:
        f.write(b"\x00\xff not json\n")
        f.write(b'{"t":"message","role":"robot","content":[]}\n')
        f.write(b"[1, 2, 3]\n")
        f.write(b'{"t":"from-the-future","x":1}\n')
    HistoryStore("junk", workdir, 1).append_message(answer("two"))
    with caplog.at_level(logging.WARNING):
        loaded = load_history("junk")
    assert loaded is not None
    assert [m.text() for m in loaded.messages] == ["one", "two"]
    assert loaded.skipped == 3


def test_unknown_session_has_no_history():
    assert load_history("never-written") is None


def test_an_unreadable_file_is_a_clear_error(workdir):
    path = history_path("dir-not-file")
    path.mkdir(parents=True)
    with pytest.raises(HistoryError, match="cannot read"):
        load_history("dir-not-file")


def test_clear_and_compaction_markers_rebuild_the_curated_history(workdir):
    store = write_session("mark", workdir, [user("old"), answer("old answer")])
    store.append_event("clear")
    store.append_message(user("fresh"))
    store.append_message(answer("fresh answer"))
    summary = Message.user_text("Summary: the user asked for fresh things.")
    store.append_compaction([summary], strategy="summary", trigger="manual")
    store.append_message(user("after"))
    store.close()
    loaded = load_history("mark")
    assert loaded is not None
    # The summary is a user message: the next input merges into it, as in the loop.
    assert len(loaded.messages) == 1
    assert [b.text for b in loaded.messages[0].content] == [summary.text(), "after"]  # type: ignore[union-attr]
    assert loaded.message_count == 5, "the comprehensive history keeps everything"


def test_consecutive_user_messages_are_merged_the_same_way_on_load(workdir):
    messages = [user("first"), user("[Request interrupted by user]"), user("second")]
    write_session("merge", workdir, messages).close()
    curated: list[Message] = []
    for m in messages:
        append_curated(curated, m)
    loaded = load_history("merge")
    assert loaded is not None
    assert loaded.messages == curated and len(curated) == 1


def test_merged_prompts_stay_addressable_and_cut_before_splits_them(workdir):
    first = Message(role="user", content=[TextBlock(text="first")], kind="prompt")
    note = Message(role="user", content=[TextBlock(text="[Request interrupted by user]")])
    second = Message(role="user", content=[TextBlock(text="second")], kind="prompt")
    reply = answer("ok")
    messages = [first, note, second, reply]
    write_session("cut", workdir, messages).close()
    loaded = load_history("cut")
    assert loaded is not None
    history = loaded.messages
    assert [m.id for m in history] == [first.id, reply.id]
    assert [(p.id, p.at, p.kind) for p in history[0].parts or []] == [
        (note.id, 1, None),
        (second.id, 2, "prompt"),
    ]
    assert second.id is not None and note.id is not None and reply.id is not None
    before_second = cut_before(history, second.id)
    assert len(before_second) == 1 and before_second[0].id == first.id
    assert [b.text for b in before_second[0].content] == [  # type: ignore[union-attr]
        "first",
        "[Request interrupted by user]",
    ]
    assert [p.id for p in before_second[0].parts or []] == [note.id]
    assert cut_before(history, reply.id) == history[:1]
    assert cut_before(history, first.id or "") == []
    assert len(history[0].content) == 3  # the history itself is untouched
    with pytest.raises(KeyError):
        cut_before(history, "m_000000000000")


def test_messages_written_without_ids_get_the_same_ids_at_every_load(workdir):
    path = history_path("old")
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {"t": "meta", "v": 1, "n": 0, "at": 1.0, "sessionId": "old", "workingDir": str(workdir)},
        {
            "t": "message",
            "n": 1,
            "at": 1.0,
            "role": "user",
            "content": [{"type": "text", "text": "q"}],
        },
        {
            "t": "message",
            "n": 2,
            "at": 1.0,
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}],
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    first, second = load_history("old"), load_history("old")
    assert first is not None and second is not None
    ids = [m.id for m in first.messages]
    assert ids == [m.id for m in second.messages]
    assert len(set(ids)) == 2 and all(i and i.startswith("m_") and len(i) == 14 for i in ids)
    other = history_path("old-copy")
    other.write_bytes(path.read_bytes())
    copy = load_history("old-copy")
    assert copy is not None and set(m.id for m in copy.messages).isdisjoint(ids)


def test_usage_mark_survives_a_restart(workdir):
    store = HistoryStore("mark-usage", workdir)
    store.append_message(user("q"))
    store.append_message(answer("a"), usage=(2, 1234))
    store.append_message(user("next"))
    store.close()
    loaded = load_history("mark-usage")
    assert loaded is not None and loaded.mark == (2, 1234)


def test_tool_calls_left_without_results_get_an_error_result():
    history = [user("run it"), assistant_with_tool("toolu_9")]
    repair = dangling_tool_results(history)
    assert repair is not None
    block = repair.content[0]
    assert isinstance(block, ToolResultBlock)
    assert block.tool_use_id == "toolu_9" and block.is_error
    assert block.content == ORPHANED_TOOL_RESULT
    assert dangling_tool_results([*history, repair]) is None
    assert dangling_tool_results([user("x"), answer()]) is None


def test_an_unwritable_root_logs_and_keeps_the_entries_for_later(workdir, sema_root, caplog):
    (sema_root / "history").write_text("a file where the folder should be")
    store = HistoryStore("later", workdir)
    with caplog.at_level(logging.ERROR):
        store.append_message(user("one"))
        store.append_message(answer("two"))
        store.flush()
    assert "cannot write session history" in caplog.text
    assert caplog.text.count("cannot write session history") == 1, "logged once per outage"

    (sema_root / "history").unlink()  # the disk is back
    store.append_message(user("three"))
    store.flush()
    loaded = load_history("later")
    assert loaded is not None
    assert [m.text() for m in loaded.messages] == ["one", "two", "three"]


def test_seed_json_is_read_and_continued_as_jsonl(workdir, sema_root):
    (sema_root / "history").mkdir()
    seed = {
        "messages": [
            {"role": "user", "content": "Explain main.py"},
            {
                "type": "assistant",
                "uuid": "u-1",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me read it."},
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Read",
                            "input": {"file_path": "main.py"},
                        },
                    ],
                },
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "x = 1"}],
                    },
                    {"type": "image", "source": {}},
                ],
            },
            {"role": "assistant", "content": "It sets x."},
            {"role": "system", "content": "ignored"},
        ],
        "todos": [{"content": "Read main.py", "status": "completed", "activeForm": "Reading"}],
    }
    (sema_root / "history" / "seed-1.json").write_text(json.dumps(seed))
    loaded = load_history("seed-1")
    assert loaded is not None and loaded.source == "json"
    assert [m.role for m in loaded.messages] == ["user", "assistant", "user", "assistant"]
    result = loaded.messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.content == "x = 1"
    assert loaded.todos and loaded.todos[0]["status"] == "completed"
    assert loaded.skipped == 1

    store = HistoryStore("seed-1", workdir)
    store.import_messages(loaded.messages, loaded.todos)
    store.append_message(user("more"))
    store.close()
    again = load_history("seed-1")
    assert again is not None and again.source == "jsonl"
    assert again.messages[:4] == loaded.messages
    assert again.message_count == 5


def test_list_sessions_newest_first_with_title_count_and_project_filter(
    workdir, tmp_path, sema_root
):
    other = tmp_path / "other"
    other.mkdir()
    write_session("a", workdir, [user("  First   question\nof a "), answer()]).close()
    write_session("b", other, [user("Other project"), answer(), user("more")]).close()
    write_session("c", workdir, [user("Latest")]).close()
    flush_all()
    now = time.time()
    for i, sid in enumerate(["a", "b", "c"]):
        os.utime(history_path(sid), (now - 100 + i, now - 100 + i))
    (sema_root / "history" / "zz.jsonl").write_bytes(b"\x00garbage\n")
    (sema_root / "history" / "notes.txt").write_text("not a session")

    everything = list_sessions()
    assert [s.session_id for s in everything] == ["c", "b", "a"]
    a = everything[2]
    assert a.title == "First question of a"
    assert a.message_count == 2
    assert a.working_dir == str(workdir)
    assert a.updated_iso.endswith("Z")
    assert everything[1].message_count == 3

    mine = list_sessions(workdir)
    assert [s.session_id for s in mine] == ["c", "a"]
    assert list_sessions(tmp_path / "nowhere") == []


def test_list_sessions_counts_without_reading_a_big_file_whole(workdir, monkeypatch):
    monkeypatch.setattr(os, "fsync", lambda _fd: None)  # speed: durability is not tested here
    store = HistoryStore("big", workdir)
    for i in range(3000):
        store.append_message(user(f"q{i}") if i % 2 == 0 else answer("a" * 100))
    store.close()
    (summary,) = list_sessions()
    assert summary.message_count == 3000
    assert summary.title == "q0"


def test_list_sessions_without_a_history_folder_is_empty():
    assert list_sessions() == []


@pytest.mark.parametrize(
    ("session_id", "ok"),
    [
        ("9f2c0d1e", True),
        ("a.b_c-d", True),
        ("../etc/passwd", False),
        ("a/b", False),
        (".hidden", False),
        ("", False),
        ("x" * 129, False),
    ],
)
def test_session_ids_are_safe_file_names(session_id, ok):
    assert valid_session_id(session_id) is ok


def test_input_history_is_newest_first_deduplicated_and_capped(workdir):
    inputs = InputHistory(workdir)
    for i in range(120):
        inputs.add(f"input {i}")
    inputs.add("input 110")
    inputs.add("   ")
    inputs.add("x" * 20_000)
    items = InputHistory(workdir).items()
    assert len(items) == 100
    assert items[0] == "input 110"
    assert items[1] == "input 119"
    assert items.count("input 110") == 1
    assert stat.S_IMODE(inputs.path.stat().st_mode) == 0o600


def test_appends_are_written_off_the_calling_thread_in_order(workdir, monkeypatch):
    """The caller (the event loop) only queues: files are written and synced on the
    writer thread, each file in append order, also across stores of one session."""
    import threading

    synced_on: set[str] = set()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced_on.add(threading.current_thread().name)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    a, b = HistoryStore("order-a", workdir), HistoryStore("order-b", workdir)
    for i in range(200):
        a.append_message(user(f"a{i}"))
        b.append_message(user(f"b{i}"))
    a.close()
    again = HistoryStore("order-a", workdir, 200)  # the session re-created after a dispose
    again.append_message(user("a200"))
    again.close()
    flush_all()
    assert synced_on == {"sema-history"}

    def texts(session_id: str) -> list[str]:
        entries = [json.loads(x) for x in history_path(session_id).read_bytes().splitlines()]
        return [e["content"][0]["text"] for e in entries if e["t"] == "message"]

    assert texts("order-a") == [f"a{i}" for i in range(201)]
    assert texts("order-b") == [f"b{i}" for i in range(200)]


async def test_synced_waits_without_blocking_the_loop(workdir):
    import asyncio

    store = HistoryStore("async", workdir)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.ensure_future(ticker())
    for i in range(50):
        store.append_message(user(f"m{i}"))
    await store.synced()
    task.cancel()
    assert ticks > 0
    assert history_path("async").read_bytes().count(b'"t":"message"') == 50


def test_keys_the_server_knows_never_reach_the_file(workdir, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-history-0001")
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "content")  # even one that is a field name
    store = write_session("keys", workdir, [user("my key is sk-ant-history-0001, content")])
    store.close()
    store.flush()
    raw = history_path("keys").read_text()
    assert "sk-ant-history-0001" not in raw
    loaded = load_history("keys")
    assert loaded is not None and loaded.skipped == 0
    assert loaded.messages[0].text() == "my key is [REDACTED], [REDACTED]"


def test_a_lone_surrogate_written_by_an_older_build_loads_as_a_replacement_character(workdir):
    """History written before the reader replaced lone surrogates: the session resumes with
    U+FFFD in their place (the text can be sent to a model again), and pairs stay emoji."""
    store = write_session("poisoned", workdir, [user("one")])
    store.close()
    with open(history_path("poisoned"), "ab") as f:
        f.write(
            b'{"t":"message","n":2,"role":"assistant",'
            b'"content":[{"type":"text","text":"a \\ud800 b \\ud83d\\ude00"}]}\n'
        )
    loaded = load_history("poisoned")
    assert loaded is not None
    assert [m.text() for m in loaded.messages] == ["one", "a \ufffd b \U0001f600"]
    loaded.messages[-1].text().encode("utf-8")  # encodable: no surrogate left


def test_seed_json_keeps_base64_images_and_drops_others(workdir, sema_root):
    (sema_root / "history").mkdir()
    image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    seed = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image", "source": image},
                    {"type": "image", "source": {"type": "url", "url": "https://x.invalid/a.png"}},
                ],
            },
            {"role": "assistant", "content": "A logo."},
        ]
    }
    (sema_root / "history" / "seed-img.json").write_text(json.dumps(seed))
    loaded = load_history("seed-img")
    assert loaded is not None
    [kept] = loaded.messages[0].images()
    assert kept.source.model_dump() == image
    assert loaded.messages[0].text() == "What is this?"
