"""Cancel scopes, deadlines, shields and threads (sema_rpc/core/scopes.py): where a
cancellation lands, what a scope swallows, what it lets through, and what runs to its end."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from sema_rpc.core.scopes import CancelScope, move_on_after, run_sync_in_thread, shielded


async def test_a_scope_cancelled_by_another_task_stops_its_body_and_the_code_after_goes_on() -> (
    None
):
    scope = CancelScope()
    reached: list[str] = []

    async def body() -> str:
        with scope:
            reached.append("in")
            await asyncio.sleep(10)
            reached.append("after the sleep")
        reached.append("after the scope")
        await asyncio.sleep(0)  # no cancellation left over
        return "done"

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    scope.cancel()
    assert await asyncio.wait_for(task, 5) == "done"
    assert reached == ["in", "after the scope"]
    assert scope.cancel_called and scope.cancelled_caught
    assert task.cancelling() == 0


async def test_a_scope_cancelled_by_its_own_task_stops_at_the_next_await_in_it() -> None:
    with CancelScope() as scope:
        scope.cancel()
        await asyncio.sleep(10)
        pytest.fail("the await after cancel() went on")
    assert scope.cancelled_caught


async def test_a_cancel_with_no_await_left_in_the_body_never_lands_outside_it() -> None:
    with CancelScope() as scope:
        scope.cancel()
    await asyncio.sleep(0.01)  # would raise CancelledError if the request leaked out
    assert scope.cancel_called and not scope.cancelled_caught
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_a_scope_cancelled_before_it_is_entered_cancels_at_its_first_await() -> None:
    scope = CancelScope()
    scope.cancel()
    with scope:
        await asyncio.sleep(10)
    assert scope.cancelled_caught


async def test_an_outer_scope_cancellation_goes_through_an_inner_scope() -> None:
    outer, inner = CancelScope(), CancelScope()
    reached: list[str] = []

    async def body() -> None:
        with outer:
            with inner:
                await asyncio.sleep(10)
            reached.append("between the scopes")
        reached.append("after both")

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    outer.cancel()
    await asyncio.wait_for(task, 5)
    assert reached == ["after both"]
    assert outer.cancelled_caught and not inner.cancelled_caught


async def test_both_scopes_cancelled_at_once_the_outer_one_catches() -> None:
    outer, inner = CancelScope(), CancelScope()

    async def body() -> str:
        with outer:
            with inner:
                await asyncio.sleep(10)
            return "not here"
        return "after both"

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    inner.cancel()
    outer.cancel()
    assert await asyncio.wait_for(task, 5) == "after both"
    assert outer.cancelled_caught and not inner.cancelled_caught


async def test_a_task_cancelled_from_outside_is_not_swallowed_by_a_scope_in_it() -> None:
    scope = CancelScope()

    async def body() -> None:
        with scope:
            await asyncio.sleep(10)
        await asyncio.sleep(10)

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not scope.cancel_called and not scope.cancelled_caught


async def test_a_task_cancelled_while_its_scope_is_cancelled_too_still_ends_cancelled() -> None:
    scope = CancelScope()

    async def body() -> None:
        with scope:
            await asyncio.sleep(10)
        await asyncio.sleep(10)

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    scope.cancel()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not scope.cancelled_caught  # the task's own request was outstanding


async def test_move_on_after_cancels_at_its_deadline_and_not_before() -> None:
    started = time.monotonic()
    with move_on_after(0.05) as slow:
        await asyncio.sleep(10)
    assert slow.cancelled_caught
    assert 0.04 <= time.monotonic() - started < 5
    with move_on_after(5) as fast:
        await asyncio.sleep(0)
    assert not fast.cancel_called and not fast.cancelled_caught
    await asyncio.sleep(0.01)  # its timer is gone with it


async def test_shielded_work_runs_to_its_end_and_the_cancellation_follows() -> None:
    finished = asyncio.Event()

    async def must_finish() -> None:
        await asyncio.sleep(0.05)
        finished.set()

    async def caller() -> None:
        await shielded(must_finish())

    task = asyncio.create_task(caller())
    await asyncio.sleep(0.01)
    task.cancel()
    task.cancel()  # twice: still shielded
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()


async def test_shielded_returns_the_result_and_raises_the_error_when_not_cancelled() -> None:
    async def value() -> int:
        return 7

    async def broken() -> None:
        raise ValueError("no")

    assert await shielded(value()) == 7
    with pytest.raises(ValueError, match="no"):
        await shielded(broken())


async def test_a_thread_is_waited_for_when_cancelled_unless_abandoned() -> None:
    release = threading.Event()
    done: list[str] = []

    def work(name: str) -> str:
        release.wait(5)
        done.append(name)
        return name

    kept = asyncio.create_task(run_sync_in_thread(work, "kept"))
    await asyncio.sleep(0.02)
    kept.cancel()
    await asyncio.sleep(0.02)
    assert not kept.done()  # still waiting for the thread
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await kept
    assert done == ["kept"]

    release.clear()
    abandoned = asyncio.create_task(run_sync_in_thread(work, "abandoned", abandon=True))
    await asyncio.sleep(0.02)
    abandoned.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(abandoned, 1)  # at once, the thread still running
    assert done == ["kept"]
    release.set()


async def test_a_thread_sees_the_callers_context_variables() -> None:
    import contextvars

    current = contextvars.ContextVar("current", default="unset")
    current.set("the caller's")
    assert await run_sync_in_thread(current.get) == "the caller's"


async def test_a_body_that_swallows_the_cancellation_is_cancelled_again_at_its_next_await() -> None:
    """Level-triggered: as `asyncio.wait_for` does when its future completes as it is
    cancelled, the body carries on; its next await in the scope is cancelled too."""
    scope = CancelScope()
    reached: list[str] = []

    async def body() -> None:
        with scope:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                reached.append("swallowed")
            await asyncio.sleep(10)
            reached.append("not here")
        reached.append("after the scope")

    task = asyncio.create_task(body())
    await asyncio.sleep(0)
    scope.cancel()
    await asyncio.wait_for(task, 5)
    assert reached == ["swallowed", "after the scope"]
    assert scope.cancelled_caught and task.cancelling() == 0


async def test_a_thread_in_a_cancelled_scope_keeps_its_result_and_the_next_await_is_cancelled() -> (
    None
):
    release = threading.Event()
    scope = CancelScope()
    reached: list[object] = []

    async def body() -> None:
        with scope:
            reached.append(await run_sync_in_thread(lambda: release.wait(5) and "read"))
            await asyncio.sleep(10)
            reached.append("not here")
        reached.append("after the scope")

    task = asyncio.create_task(body())
    await asyncio.sleep(0.02)
    scope.cancel()
    await asyncio.sleep(0.02)
    assert not task.done()  # the thread is still waited for
    release.set()
    await asyncio.wait_for(task, 5)
    assert reached == ["read", "after the scope"]
    assert scope.cancelled_caught


async def test_a_cancelled_scope_waits_for_an_anyio_shield_inside_it_to_end() -> None:
    """The MCP SDK (built on anyio) shields what must reach a server once a call is
    cancelled; the engine's scopes respect that, as anyio's own did."""
    import anyio

    log: list[str] = []
    with CancelScope() as scope:
        asyncio.get_running_loop().call_later(0.01, scope.cancel)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            with anyio.CancelScope(shield=True):
                await asyncio.sleep(0.1)  # re-delivery would cancel this without the check
                log.append("shielded cleanup finished")
            raise
    assert log == ["shielded cleanup finished"]
    assert scope.cancelled_caught
