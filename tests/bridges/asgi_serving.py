"""Serving an ASGI application on 127.0.0.1 inside a test (uvicorn, a port picked by the OS)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any

import anyio
import uvicorn
from uvicorn.config import Config


def serve_asgi(app: Any) -> AbstractAsyncContextManager[str]:
    """Serve ``app``; yields its base URL (``http://127.0.0.1:PORT``); ends uvicorn after."""
    return serve_built(lambda _: app)


@asynccontextmanager
async def serve_built(build: Callable[[str], Any]) -> AsyncIterator[str]:
    """Serve the app ``build`` makes for its own base URL (an A2A card names its URL)."""
    # A socket listening before uvicorn starts: clients queue on it, nothing to poll.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(Config(build(f"http://127.0.0.1:{port}"), log_level="warning", lifespan="off"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(server.serve, sockets=[sock]))
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
    sock.close()
