"""Serving a test upstream over stdio or streamable HTTP, shared by the fixture servers' command lines.

    python -m tests.upstream.<module> --transport stdio
    python -m tests.upstream.<module> --transport http --port 0   (prints "PORT <n>" when listening)

HTTP serves streamable HTTP at ``/mcp`` on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import socket
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer, Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import EventStore
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.upstream.event_store import MemoryEventStore

# How long a client waits before reconnecting to a stream the server closed (SEP-1699).
RETRY_INTERVAL_MS = 100


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=0, help="HTTP port on 127.0.0.1; 0 picks a free one")
    return parser.parse_args()


def run(build: Callable[[], Server[Any] | MCPServer[Any]], description: str, *, legacy_only: bool = False) -> None:
    """Build the server and serve it as the command line asks, until stdin closes or the process is ended.

    ``legacy_only`` serves stdio in the handshake loop alone: the SDK's dual-era loop would settle
    on 2026-07-28 as soon as a client probes ``server/discover``. (Over HTTP each modern request
    stands alone, so the server's own middleware can refuse them.)
    """
    args = parse_args(description)
    # These servers use the legacy-era APIs (logging, sampling, roots) on purpose; the SDK's
    # deprecation warnings would only clutter the gateway's logs of its upstream's stderr.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    server = build()
    if args.transport == "stdio":
        anyio.run(_serve_stdio, server, legacy_only)
    else:
        serve_http(server, args.port)


async def _serve_stdio(server: Server[Any] | MCPServer[Any], legacy_only: bool) -> None:
    if isinstance(server, MCPServer):
        if legacy_only:
            raise ValueError("legacy_only needs a low-level Server; MCPServer.run serves both eras")
        await server.run_stdio_async()
        return
    async with stdio_server() as (read_stream, write_stream):
        if not legacy_only:
            await server.run(read_stream, write_stream, server.create_initialization_options())
            return
        async with server.lifespan(server) as state:
            options = server.create_initialization_options()
            await serve_loop(server, read_stream, write_stream, lifespan_state=state, init_options=options)


def serve_http(server: Server[Any] | MCPServer[Any], port: int, event_store: EventStore | None = None) -> None:
    """Listen before announcing the port, so a client that reads ``PORT <n>`` can connect at once."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only when the socket says TCP.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    # An event store makes streams resumable, which the SSE polling scenario (SEP-1699) needs.
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        event_store=event_store or MemoryEventStore(),
        retry_interval=RETRY_INTERVAL_MS,
        host="127.0.0.1",
    )
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
