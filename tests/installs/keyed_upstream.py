"""An HTTP MCP server that refuses every request without the right ``X-Api-Key`` (401):
a registry install reaches it only if the sealed secret was opened and sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio
import uvicorn
from mcp.server import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_aggregator.serve.runner import bind_socket


def build() -> MCPServer:
    app: MCPServer = MCPServer("keyed", log_level="WARNING")

    @app.tool()
    def forecast(city: str) -> str:
        """The weather in ``city``."""
        return f"sunny in {city}"

    return app


class KeyGuard:
    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self.key = key.encode()
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"x-api-key") != self.key:
            self.refused += 1
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"wrong or missing X-Api-Key"})
            return
        await self.app(scope, receive, send)


@asynccontextmanager
async def keyed_upstream(key: str) -> AsyncIterator[str]:
    """The server's ``/mcp`` URL on 127.0.0.1 while the block runs."""
    guarded = KeyGuard(build().streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"), key)
    server = uvicorn.Server(uvicorn.Config(guarded, log_level="warning"))
    sock = bind_socket("127.0.0.1", 0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(server.serve, sockets=[sock]))
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
            finally:
                server.should_exit = True
    finally:
        sock.close()
