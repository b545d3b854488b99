"""A 2025-11-25 session kept beside a connection's 2026-07-28 one (see ``era_choice``).

It is opened on first need, by its own task in the connection's task group, and closed by
that task when the connection ends (python-sdk #922, #1156: a session is closed by the task
that opened it). An upstream that refuses the handshake, or a side session that dies, leaves
it ``UNAVAILABLE``: calls then go to the main session, as they would without it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

import anyio
from mcp import Client

from mcp_aggregator.upstreams.era_choice import SideState

logger = logging.getLogger(__name__)

OpenClient = Callable[[AsyncExitStack], Awaitable[Client]]
"""Opens the side session's ``Client`` on ``stack`` (the connection knows the transport)."""


class SideSession:
    """One lazily opened handshake-era session; ``run`` it once in the connection's task group."""

    def __init__(
        self,
        name: str,
        open_client: OpenClient,
        *,
        connect_timeout_secs: float,
        describe: Callable[[BaseException], str],
    ) -> None:
        self.name = name
        self.state = SideState.IDLE
        self.error: str | None = None
        self.client: Client | None = None
        self._open_client = open_client
        self._timeout = connect_timeout_secs
        self._describe = describe
        self._wanted = anyio.Event()
        self._settled = anyio.Event()

    async def run(self) -> None:
        """Wait until wanted, open, then hold the session until cancelled."""
        await self._wanted.wait()
        self.state = SideState.OPENING
        deadline = anyio.CancelScope(deadline=anyio.current_time() + self._timeout)
        try:
            with deadline:
                async with AsyncExitStack() as stack:
                    self.client = await self._open_client(stack)
                    deadline.deadline = math.inf
                    self.state = SideState.OPEN
                    self._settled.set()
                    await anyio.sleep_forever()
        except Exception as exc:  # boundary: a transport or handshake failure of the side only
            self.error = self._describe(exc)
            logger.info("upstream %s: no 2025-11-25 side session: %s", self.name, self.error)
        finally:
            self.client = None
            if self.state is SideState.OPEN:
                self.state = SideState.CLOSED
            else:
                self.error = self.error or f"handshake timeout after {self._timeout:g}s"
            self._settled.set()
        if self.state is SideState.OPENING:
            self.state = SideState.UNAVAILABLE

    def fail(self, reason: str) -> None:
        """The side session's transport broke during a call: stop using it."""
        if self.state is SideState.OPEN:
            self.state = SideState.UNAVAILABLE
            self.error = reason
            self.client = None

    async def get(self) -> Client | None:
        """The open side client, opening it on first use; None when it is not available."""
        self._wanted.set()
        await self._settled.wait()
        return self.client if self.state is SideState.OPEN else None
