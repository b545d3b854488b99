"""The HTTP face of the gateway: MCP at ``/mcp``, liveness at ``/healthz``, admin routes mounted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.serve.mcp_server import GatewayServer

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def transport_security(host: str, port: int) -> TransportSecuritySettings:
    """DNS-rebinding protection on loopback; behind a proxy the admin binds elsewhere on purpose."""
    if host in _LOOPBACK:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def build_http_app(
    gateway_server: GatewayServer,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    extra_routes: Sequence[BaseRoute] = (),
    json_response: bool = False,
    stateless: bool = False,
) -> Starlette:
    """A Starlette app whose lifespan runs the MCP session manager."""
    manager = StreamableHTTPSessionManager(
        app=gateway_server.server,
        json_response=json_response,
        stateless=stateless,
        security_settings=transport_security(host, port),
    )
    mcp_endpoint = FastPath(StreamableHTTPASGIApp(manager), gateway_server.gateway)

    async def healthz(_request: Request) -> JSONResponse:
        gateway = gateway_server.gateway
        servers = {name: sup.status.value for name, sup in sorted(gateway.supervisors.items())}
        return JSONResponse({"status": "ok", "servers": servers, "tools": len(gateway.catalog)})

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    routes: list[BaseRoute] = [
        Route("/mcp", endpoint=mcp_endpoint, methods=["GET", "POST", "DELETE"]),
        Route("/healthz", endpoint=healthz, methods=["GET"]),
        *extra_routes,
    ]
    return Starlette(routes=routes, lifespan=lifespan)



