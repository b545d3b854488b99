"""The registry's write-behind: writes in order, and one server's writes brought forward."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from mcp_aggregator.registry.registry_mirror import RegistryMirror


def recorder(done: list[str], name: str, gate: anyio.Event | None = None) -> Callable[[], Awaitable[None]]:
    async def write() -> None:
        if gate is not None:
            await gate.wait()
        done.append(name)

    return write


async def test_a_flush_returns_once_every_write_before_it_is_applied_in_order() -> None:
    mirror, done = RegistryMirror(), []
    async with anyio.create_task_group() as tg:
        await tg.start(mirror.run)
        for name, key in (("a1", "a"), ("b1", "b"), ("a2", "a"), ("skills", None)):
            mirror.submit(name, recorder(done, name), key)
        with anyio.fail_after(10):
            await mirror.flush()
        assert done == ["a1", "b1", "a2", "skills"]
        tg.cancel_scope.cancel()


async def test_a_servers_flush_waits_for_its_writes_not_for_those_of_others_queued_before() -> None:
    mirror, done = RegistryMirror(), []
    applying, proceed, held, flushed = anyio.Event(), anyio.Event(), anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(mirror.run)

        async def first() -> None:
            applying.set()
            await recorder(done, "b1", proceed)()

        async def flush_a() -> None:
            await mirror.flush("a")
            flushed.set()

        mirror.submit("b1", first, "b")
        mirror.submit("b2 (a server's thousand tools)", recorder(done, "b2", held), "b")
        mirror.submit("a1", recorder(done, "a1"), "a")
        mirror.submit("c1", recorder(done, "c1"), "c")
        mirror.submit("a2", recorder(done, "a2"), "a")
        with anyio.fail_after(10):
            await applying.wait()
            tg.start_soon(flush_a)
            await anyio.wait_all_tasks_blocked()
            # The write being applied is finished first; then a's, ahead of b2 and c1.
            proceed.set()
            await flushed.wait()
        assert done == ["b1", "a1", "a2"]

        held.set()
        with anyio.fail_after(10):
            await mirror.flush()
        # Each server's writes kept their order.
        assert done == ["b1", "a1", "a2", "b2", "c1"]
        tg.cancel_scope.cancel()


async def test_a_flush_after_the_writer_ended_returns_and_later_writes_are_dropped() -> None:
    mirror, done = RegistryMirror(), []
    async with anyio.create_task_group() as tg:
        await tg.start(mirror.run)
        tg.cancel_scope.cancel()
    mirror.submit("late", recorder(done, "late"), "a")
    with anyio.fail_after(10):
        await mirror.flush("a")
        await mirror.flush()
    assert done == []


async def test_closing_releases_a_waiting_flush() -> None:
    mirror, done = RegistryMirror(), []
    held, released = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(mirror.run)
        mirror.submit("held", recorder(done, "held", held), "a")

        async def flush() -> None:
            await mirror.flush()
            released.set()

        tg.start_soon(flush)
        await anyio.wait_all_tasks_blocked()
        mirror.close()
        with anyio.fail_after(10):
            await released.wait()
        tg.cancel_scope.cancel()
    assert done == []
