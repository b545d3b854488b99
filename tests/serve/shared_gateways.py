"""Two HTTP gateways over one upstream (the ``alpha`` stdio fixture unless told), the fast path
on and off, that a whole test module can share (a gateway start costs a stdio upstream process
and about half a second of CPU). The module's tests run on its one event loop
(``pytest.mark.asyncio(loop_scope="module")``) and the gateways on that loop, each held open
in a task of its own (``tests.held``).

Tests reach them only over the network, and read what the fast path forwarded as a
difference from before the test, never as an absolute count."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.settings import ServerConfig
from tests.held import held
from tests.serve.test_fast_path import http_gateway

Gateways = dict[bool, tuple[FastPath, str]]
"""``fast_path`` -> (the gateway's fast path, its ``/mcp`` URL)."""


@asynccontextmanager
async def both_paths(upstream: ServerConfig | None = None) -> AsyncIterator[Gateways]:
    # A gateway served from another thread's loop (an anyio portal) failed an initialize now
    # and then in the full suite ("ASGI callable returned without completing response"):
    # these run on the tests' own loop.
    async with (
        held(http_gateway(upstream=upstream, fast_path=True)) as fast,
        held(http_gateway(upstream=upstream, fast_path=False)) as full,
    ):
        yield {True: fast, False: full}
