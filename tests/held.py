"""An async context manager held open in a task of its own, for module-scoped fixtures.

pytest-asyncio runs an async fixture's set-up and its tear-down as two separate tasks on the
module's loop; a gateway's task groups and cancel scopes must be left by the task that entered
them (anyio refuses otherwise). ``held`` enters and leaves the manager in one task it owns, on
the same loop as the tests, so a test module can share one gateway and still call it directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TypeVar

T = TypeVar("T")


@asynccontextmanager
async def held(manager: AbstractAsyncContextManager[T]) -> AsyncIterator[T]:
    """What ``manager`` yields, the manager entered and left in one task of its own; an error
    entering it is raised here, and so is one leaving it."""
    entered: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    leave = asyncio.Event()

    async def hold() -> None:
        try:
            async with manager as value:
                entered.set_result(value)
                await leave.wait()
        except BaseException as exc:
            if entered.done():
                raise
            entered.set_exception(exc)

    # Awaited below, whatever happens: the task never outlives this context.
    task = asyncio.create_task(hold())
    try:
        yield await entered
    finally:
        leave.set()
        await task
