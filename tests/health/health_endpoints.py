"""A real HTTP server on 127.0.0.1 with health endpoints of every kind.

``/ok`` 200, ``/fail`` 500, ``/missing`` 404, ``/moved`` 302 to ``/ok``, and ``/hang``,
which never answers (it waits on an event nobody sets). Leaving the context manager
stops the server and every connection it holds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import SocketAttribute, SocketStream

RESPONSES = {
    "/ok": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    "/fail": b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    "/missing": b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    "/moved": b"HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
}


@asynccontextmanager
async def health_endpoints() -> AsyncIterator[str]:
    """Serve the endpoints; yield the base URL (``http://127.0.0.1:<port>``)."""
    never = anyio.Event()

    async def handle(stream: SocketStream) -> None:
        async with stream:
            request = b""
            try:
                while b"\r\n\r\n" not in request:
                    request += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return
            path = request.split(b" ", 2)[1].decode()
            if path == "/hang":
                await never.wait()
            await stream.send(RESPONSES[path])

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        yield f"http://127.0.0.1:{port}"
        tg.cancel_scope.cancel()


async def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()
    return f"http://127.0.0.1:{port}/health"
