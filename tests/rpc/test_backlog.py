"""A session's backlog: what a client attaching after `seq` is replayed, and when it can
no longer be brought up to date (`truncated`)."""

from __future__ import annotations

from sema_rpc.rpc.backlog import Backlog


def replay(backlog: Backlog, after: int) -> tuple[list[int], bool]:
    entries, truncated = backlog.after(after)
    return [e.seq for e in entries], truncated


def test_replays_after_a_seq_in_order_skipping_numbers_it_never_held():
    backlog = Backlog()
    for seq in (1, 2, 4, 5):  # 3 was a server→client request: never buffered
        backlog.append(seq, b"{}", batch=False)
    assert replay(backlog, 0) == ([1, 2, 4, 5], False)
    assert replay(backlog, 2) == ([4, 5], False)
    assert replay(backlog, 5) == ([], False)


def test_the_oldest_fall_out_by_count_and_a_replay_from_before_them_is_truncated():
    backlog = Backlog(max_items=3)
    for seq in range(1, 6):
        backlog.append(seq, b"x", batch=True)
    assert len(backlog) == 3
    assert replay(backlog, 2) == ([3, 4, 5], False)  # 3.. still held: nothing lost
    assert replay(backlog, 1) == ([3, 4, 5], True)  # 2 fell out: a hole
    assert replay(backlog, 0)[1] is True


def test_the_oldest_fall_out_by_size_but_the_newest_is_always_kept():
    backlog = Backlog(max_bytes=10)
    backlog.append(1, b"aaaa", batch=False)
    backlog.append(2, b"bbbb", batch=False)
    backlog.append(3, b"cccc", batch=False)  # 12 bytes: the first goes
    assert replay(backlog, 0) == ([2, 3], True)
    backlog.append(4, b"d" * 50, batch=False)  # larger than the cap on its own
    assert replay(backlog, 3) == ([4], False)
