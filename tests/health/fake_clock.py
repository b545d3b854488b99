"""A fake clock for loops with an injected clock: no real sleeps, the test drives time."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import anyio


class FakeClock:
    """``sleep`` reports that it was entered, then blocks until the test calls ``wake``.

    ``await clock.next_sleep()`` therefore means "the loop has finished its work and is
    waiting again"; ``await clock.wake()`` advances time by that sleep and lets it go.
    Close it (``async with``) so its streams do not leak.
    """

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._entered_send, self._entered = anyio.create_memory_object_stream[float](math.inf)
        self._wake_send, self._wake = anyio.create_memory_object_stream[None]()

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        await self._entered_send.send(seconds)
        await self._wake.receive()
        self._now += timedelta(seconds=seconds)

    async def next_sleep(self) -> float:
        with anyio.fail_after(10):
            return await self._entered.receive()

    async def wake(self) -> None:
        with anyio.fail_after(10):
            await self._wake_send.send(None)

    async def __aenter__(self) -> FakeClock:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for stream in (self._entered_send, self._entered, self._wake_send, self._wake):
            stream.close()
