"""``BackgroundThreads``: worker threads that give way to the event loop.

Bulk embedding keeps every core busy for a minute at a cold start of 10,000 tools. At
normal priority its threads take as much CPU as the event loop's thread, and on two cores
the gateway then answers nobody: health checks, the admin page and MCP clients wait behind
the model. These threads run at a lower priority (Linux niceness, which is per thread
there), so the scheduler gives the loop a core whenever it has work and the model the rest.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
U = TypeVar("U")

BACKGROUND_NICENESS = 10
"""How much nicer than the process the background threads are (nice 10 gets about a tenth
of the CPU share of nice 0 when both want it)."""


def lower_thread_priority(niceness: int = BACKGROUND_NICENESS) -> None:
    """Makes the calling thread ``niceness`` nicer; a no-op where a thread has no priority
    of its own (not Linux) or where it cannot be changed."""
    if sys.platform != "linux":
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + niceness))
    except OSError as exc:
        log.debug("cannot lower the priority of thread %d: %s", tid, exc)


class BackgroundThreads:
    """A pool of ``workers`` low-priority threads, started on first use, for blocking work.

    ``run`` and ``map`` block the calling thread until done: call them from a worker thread
    (e.g. ``anyio.to_thread``), never from the event loop. Threads a library starts from
    these (onnxruntime's intra-op pool, made with its session) inherit the lower priority.
    """

    def __init__(self, workers: int, name: str) -> None:
        self._workers = workers
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._workers, thread_name_prefix=self._name, initializer=lower_thread_priority
                )
            return self._pool

    def run(self, fn: Callable[[], T]) -> T:
        return self._executor().submit(fn).result()

    def map(self, fn: Callable[[U], T], items: Iterable[U]) -> Iterator[T]:
        return self._executor().map(fn, items)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
