"""Two HTTP gateways over one upstream (the ``alpha`` stdio fixture unless told), the fast path
on and off, running in a thread's event loop so that a whole test module can share them (a gateway start costs a
stdio upstream process and about half a second of CPU).

Tests reach them only over the network, and read what the fast path forwarded as a
difference from before the test, never as an absolute count."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio.from_thread

from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.settings import ServerConfig
from tests.serve.test_fast_path import http_gateway

Gateways = dict[bool, tuple[FastPath, str]]
"""``fast_path`` -> (the gateway's fast path, its ``/mcp`` URL)."""


@contextmanager
def both_paths(upstream: ServerConfig | None = None) -> Iterator[Gateways]:
    # The portal runs each gateway's whole ``async with`` in one task of its own loop, so its
    # task groups and cancel scopes are entered and left in the same task.
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(http_gateway(upstream=upstream, fast_path=True)) as fast,
        portal.wrap_async_context_manager(http_gateway(upstream=upstream, fast_path=False)) as full,
    ):
        yield {True: fast, False: full}
