"""The backlog both stdio ends keep for their SDK session: order, the second look at a line
whose turn came, reading paused past the limit and resumed at half, the end."""

from __future__ import annotations

import anyio

from mcp_aggregator.line_backlog import LineBacklog


async def test_lines_go_in_order_and_reading_pauses_past_the_limit_until_half_is_through() -> None:
    events: list[str] = []
    backlog = LineBacklog[bytes](len, lambda: events.append("pause"), lambda: events.append("resume"), limit=10)
    gate = anyio.Event()
    delivered: list[bytes] = []

    async def deliver(line: bytes) -> None:
        if not delivered:
            await gate.wait()  # the session is slow to take the first line
        delivered.append(line)
        events.append(f"delivered {line.decode()}")

    def took(line: bytes) -> bool:
        # A line can be taken when its turn comes, even if it could not when it arrived.
        return line == b"fast"

    assert not backlog
    for line in (b"aaaa", b"fast", b"bbbb", b"cccc"):
        backlog.add(line)
    assert backlog
    assert events == ["pause"], "16 bytes wait, past the limit of 10"
    backlog.end()
    async with anyio.create_task_group() as tg:
        tg.start_soon(backlog.run, took, deliver)
        await anyio.wait_all_tasks_blocked()
        assert delivered == []
        gate.set()
    assert delivered == [b"aaaa", b"bbbb", b"cccc"]
    # After "aaaa" and "fast" 8 bytes wait, not yet half; after "bbbb", 4: reading resumes.
    assert events == ["pause", "delivered aaaa", "delivered bbbb", "resume", "delivered cccc"]
    assert not backlog


async def test_run_waits_for_lines_until_the_end() -> None:
    backlog = LineBacklog[bytes](len, lambda: None, lambda: None)
    delivered: list[bytes] = []

    async def deliver(line: bytes) -> None:
        delivered.append(line)

    async with anyio.create_task_group() as tg:
        tg.start_soon(backlog.run, lambda _: False, deliver)
        await anyio.wait_all_tasks_blocked()
        backlog.add(b"one")
        await anyio.wait_all_tasks_blocked()
        assert delivered == [b"one"]
        backlog.end()
    assert delivered == [b"one"]
