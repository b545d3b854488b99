"""A fake clock for loops with an injected clock: no real sleeps, the test drives time."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import anyio


class FakeClock:
    """``sleep`` reports that it was entered, then blocks until the test calls ``wake``.

    ``await clock.next_sleep()`` therefore means "the loop has finished its work and is
    waiting again"; ``await clock.wake()`` advances time by that sleep and lets it go.
    ``await clock.advance(seconds)`` does both until that much time passed, for a loop that
    sleeps in steps (the health monitor's slots). Close it (``async with``) so its streams
    do not leak.
    """

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._entered_send, self._entered = anyio.create_memory_object_stream[float](math.inf)
        self._wake_send, self._wake = anyio.create_memory_object_stream[None]()
        self._entered_seen: float | None = None  # a sleep ``advance`` saw begin, not yet woken

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        await self._entered_send.send(seconds)
        await self._wake.receive()
        self._now += timedelta(seconds=seconds)

    async def next_sleep(self) -> float:
        if self._entered_seen is not None:
            return self._entered_seen
        with anyio.fail_after(10):
            self._entered_seen = await self._entered.receive()
            return self._entered_seen

    async def wake(self) -> None:
        self._entered_seen = None
        with anyio.fail_after(10):
            await self._wake_send.send(None)

    async def advance(self, seconds: float) -> list[float]:
        """Wake the loop's sleeps until ``seconds`` passed (to a microsecond, the resolution
        of ``now``), then wait until it sleeps again (its work done); the sleeps woken."""
        woken: list[float] = []
        while sum(woken) < seconds - 1e-6 * (len(woken) + 1):
            woken.append(await self.next_sleep())
            await self.wake()
        await self.next_sleep()
        return woken

    async def __aenter__(self) -> FakeClock:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for stream in (self._entered_send, self._entered, self._wake_send, self._wake):
            stream.close()
