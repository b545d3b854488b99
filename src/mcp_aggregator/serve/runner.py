"""Running the gateway: build the parts, serve MCP on stdio or HTTP, stop cleanly."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TextIO

import anyio
import uvicorn
from mcp.server.stdio import stdio_server

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.http_app import build_http_app
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.settings import Settings

logger = logging.getLogger(__name__)


async def serve_stdio(settings: Settings) -> None:
    """MCP over this process's stdin/stdout; logs go to stderr so the stream stays clean."""
    async with Gateway(settings) as gateway:
        gateway_server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(gateway_server.run_notifier)
            async with stdio_server() as (read_stream, write_stream):
                server = gateway_server.server
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()


async def serve_http(
    settings: Settings,
    *,
    announce: Callable[[Gateway, str], None] | None = None,
    out: TextIO = sys.stderr,
) -> None:
    """MCP over streamable HTTP at ``/mcp`` (plus ``/healthz``) until interrupted."""
    serve = settings.serve
    async with Gateway(settings) as gateway:
        gateway_server = GatewayServer(gateway, build_surface(gateway))
        app = build_http_app(gateway_server, host=serve.host, port=serve.port)
        config = uvicorn.Config(app, host=serve.host, port=serve.port, log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        async def announce_when_listening() -> None:
            while not server.started:
                await anyio.sleep(0.02)
            port = server.servers[0].sockets[0].getsockname()[1] if server.servers else serve.port
            url = f"http://{serve.host}:{port}/mcp"
            if announce is not None:
                announce(gateway, url)
            else:
                print(f"mcp-aggregator: MCP endpoint {url}", file=out, flush=True)

        async with anyio.create_task_group() as tg:
            await tg.start(gateway_server.run_notifier)
            tg.start_soon(announce_when_listening)
            await server.serve()
            tg.cancel_scope.cancel()
