"""Watching processes a test did not start itself (an upstream its gateway started), and
ending those it did."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from anyio.abc import Process


async def ended(pid: int) -> None:
    """Return once process ``pid`` has exited: its pidfd turns readable (a zombie counts as exited).

    ``pid`` need not be our child. ``/proc/<pid>`` disappears only once its parent reaped it.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def children(pid: int) -> set[int]:
    """The children of every thread of ``pid`` (none once it is gone)."""
    found: set[int] = set()
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found |= {int(child) for child in (task / "children").read_text().split()}
    except OSError:
        return found
    return found


async def stop(process: Process, grace: float = 30.0) -> None:
    """End a process a test started: SIGTERM, ``grace`` seconds to exit (even while the test is
    being cancelled), then SIGKILL; its pipes are closed."""
    process.terminate()
    with anyio.move_on_after(grace, shield=True):
        await process.wait()
    if process.returncode is None:
        process.kill()
    await process.aclose()
