"""Watching processes a test did not start itself (an upstream its gateway started)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio


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
