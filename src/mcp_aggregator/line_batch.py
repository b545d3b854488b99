"""Whole messages for one pipe, written together when several are ready in one turn of the loop.

Both stdio ends of the gateway (the face towards its client, the pipe towards a stdio
upstream) write newline-delimited messages. With several calls in flight, answers or
requests that become ready together leave in one write: one system call, and one wake-up
of the reader for all of them. A message its sender knows to be alone is written at once,
so a single call waits for nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class LineBatch:
    """Messages queued for ``write`` (called with their bytes joined, in order)."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._parts: list[bytes] = []

    def add(self, data: bytes, *, alone: bool) -> None:
        """Queue ``data``; written now when ``alone`` and nothing is queued before it, else at
        the end of this turn of the loop."""
        self._parts.append(data)
        if len(self._parts) == 1:
            if alone:
                self.flush()
            else:
                asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Write what is queued (a cancellation notice or a close must not overtake it)."""
        parts = self._parts
        if not parts:
            return
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        parts.clear()
        self._write(data)
