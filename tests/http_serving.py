"""A gateway served over real streamable HTTP on 127.0.0.1, for tests (port picked by the OS)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount

from mcp_aggregator.admin.app import build_admin_app
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.http_app import build_http_app, uvicorn_config
from mcp_aggregator.serve.profile_servers import ProfileServers
from mcp_aggregator.serve.runner import bind_socket
from mcp_aggregator.settings import Settings


@dataclass(frozen=True)
class ServedGateway:
    gateway: Gateway
    app: Starlette
    base: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"


@asynccontextmanager
async def served_over_http(
    settings: Settings, *, stateless: bool = False, admin_token: str | None = None
) -> AsyncIterator[ServedGateway]:
    """The gateway with its MCP endpoints (``/mcp``, ``/mcp/<profile>``; given ``admin_token``,
    the admin API) over HTTP."""
    async with Gateway(settings) as gateway:
        await gateway.wait_settled(30)
        servers = ProfileServers(gateway)
        extra: list[BaseRoute] = []
        if admin_token is not None:
            extra.append(Mount("/", app=build_admin_app(gateway, token=admin_token)))
        app = build_http_app(servers.default, profiles=servers.named, stateless=stateless, extra_routes=extra)
        server = uvicorn.Server(uvicorn_config(app, log_level="warning"))
        # A socket listening before uvicorn starts: clients queue on it, nothing to poll.
        sock = bind_socket("127.0.0.1", 0)
        async with anyio.create_task_group() as background:
            await background.start(servers.run)
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(server.serve, sockets=[sock]))
                try:
                    yield ServedGateway(gateway, app, f"http://127.0.0.1:{sock.getsockname()[1]}")
                finally:
                    # Let uvicorn shut down on its own so it closes its sockets.
                    server.should_exit = True
            sock.close()
            background.cancel_scope.cancel()
