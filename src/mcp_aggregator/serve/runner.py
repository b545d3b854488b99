"""Running the gateway: build the parts, serve MCP on stdio or HTTP, stop cleanly."""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable
from typing import TextIO

import anyio
import uvicorn
from mcp.server.stdio import stdio_server
from starlette.routing import Mount

from mcp_aggregator.admin.app import build_admin_app
from mcp_aggregator.admin.auth import check_bind_allowed
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
            await tg.start(gateway_server.run)
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
    check_bind_allowed(serve.host, serve.admin_token)
    # Bind before starting so the announced URL is right even for port 0.
    sock = bind_socket(serve.host, serve.port)
    with sock:
        async with Gateway(settings) as gateway:
            gateway_server = GatewayServer(gateway, build_surface(gateway))
            admin = Mount("/", app=build_admin_app(gateway))
            app = build_http_app(
                gateway_server,
                host=serve.host,
                port=serve.port,
                extra_routes=[admin],
                json_response=serve.http_json_response,
                stateless=serve.http_stateless,
            )
            config = uvicorn.Config(app, log_level="warning", lifespan="on")
            server = uvicorn.Server(config)
            port = sock.getsockname()[1]
            host = f"[{serve.host}]" if ":" in serve.host else serve.host
            url = f"http://{host}:{port}/mcp"
            async with anyio.create_task_group() as tg:
                await tg.start(gateway_server.run)
                if announce is not None:
                    announce(gateway, url)
                else:
                    print(f"mcp-aggregator: MCP endpoint {url}", file=out, flush=True)
                await server.serve(sockets=[sock])
                tg.cancel_scope.cancel()


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket for uvicorn.

    Created with an explicit IPPROTO_TCP: asyncio enables TCP_NODELAY only on sockets whose
    ``proto`` says TCP, and ``socket.create_server`` leaves it 0. Without it a JSON response
    (headers and body written separately) waits ~40 ms on the client's delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock
