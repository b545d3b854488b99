"""Lines waiting for an SDK session, in the order they came, with what came in behind them.

Both stdio ends of the gateway (the face towards its client, the pipe towards a stdio
upstream) take lines in their read callbacks: most are dealt with there and then (a fast
call, a raw call's answer), the rest go to an SDK session, which takes one message at a
time. Once a line waits for the session, every line after it waits too, so lines are
taken in order: a call behind a ``logging/setLevel`` sees the new level. Reading pauses
while more than ``limit`` bytes wait, as a full pipe would make the writer wait, and
resumes at half.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final, Generic, TypeVar

T = TypeVar("T")
DEFAULT_LIMIT: Final = 1 << 20


class LineBacklog(Generic[T]):
    """See the module docstring; ``run`` it in a task, ``add`` from the read callback."""

    def __init__(
        self,
        size: Callable[[T], int],
        pause: Callable[[], None],
        resume: Callable[[], None],
        limit: int = DEFAULT_LIMIT,
    ) -> None:
        self._size = size
        self._pause = pause
        self._resume = resume
        self._limit = limit
        self._lines: deque[T] = deque()
        self._bytes = 0
        self._paused = False
        self._ended = False
        self._wake = asyncio.Event()

    def __bool__(self) -> bool:
        """Whether a line waits (then the next one must wait behind it)."""
        return bool(self._lines)

    def add(self, line: T) -> None:
        self._lines.append(line)
        self._bytes += self._size(line)
        self._wake.set()
        if self._bytes > self._limit and not self._paused:
            self._paused = True
            self._pause()

    def end(self) -> None:
        """No more lines will come: ``run`` returns once the waiting ones are through."""
        self._ended = True
        self._wake.set()

    async def run(self, took: Callable[[T], bool], deliver: Callable[[T], Awaitable[None]]) -> None:
        """Each waiting line in turn: ``took`` it here and now (its turn may have changed
        that), or ``deliver`` it; until ``end`` and nothing waits."""
        lines = self._lines
        while True:
            if not lines:
                if self._ended:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            line = lines[0]
            if not took(line):
                await deliver(line)
            lines.popleft()
            self._bytes -= self._size(line)
            if self._paused and self._bytes <= self._limit // 2:
                self._paused = False
                self._resume()
