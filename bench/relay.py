"""The floor under any proxy: bytes copied between a client and the upstream, nothing read.

    python bench/relay.py tcp --port 8802 --to 8801      # HTTP client -> HTTP upstream
    python bench/relay.py stdio -- python bench/echo_server.py stdio

No MCP, no HTTP parsing, no routing: what a proxy written in Python cannot go below on the
machine it runs on (the extra process hop: two more socket or pipe writes and two more
wake-ups per call). The proxy bench measures it beside the gateway so that "added latency"
can be read against the hop itself, which differs by an order of magnitude between machines.
A byte relay cannot change transport, so it only stands in the http-http and stdio-stdio pairs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import threading
from typing import cast


class _Upstream(asyncio.Protocol):
    def __init__(self, client: asyncio.Transport) -> None:
        self.client = client

    def data_received(self, data: bytes) -> None:
        self.client.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()


class _Client(asyncio.Protocol):
    """One client connection, relayed over its own upstream connection."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.upstream: asyncio.Transport | None = None
        self.early: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not subclasses
        self.connecting = asyncio.get_running_loop().create_task(self._connect())

    async def _connect(self) -> None:
        try:
            upstream, _ = await asyncio.get_running_loop().create_connection(
                lambda: _Upstream(self.transport), "127.0.0.1", self.upstream_port
            )
        except OSError:
            self.transport.close()
            return
        self.upstream = upstream
        for data in self.early:
            upstream.write(data)
        self.early.clear()

    def data_received(self, data: bytes) -> None:
        if self.upstream is None:
            self.early.append(data)
        else:
            self.upstream.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None:
            self.upstream.close()


async def relay_tcp(port: int, upstream_port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Client(upstream_port), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def _pump(source: int, sink: int) -> None:
    while chunk := os.read(source, 1 << 16):
        view = memoryview(chunk)
        while view:
            view = view[os.write(sink, view) :]


def relay_stdio(argv: list[str]) -> int:
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None
    child_in, child_out = child.stdin.fileno(), child.stdout.fileno()

    def forward() -> None:
        try:
            _pump(sys.stdin.fileno(), child_in)
        finally:
            child.stdin.close()  # type: ignore[union-attr]

    threading.Thread(target=forward, daemon=True).start()
    _pump(child_out, sys.stdout.fileno())
    return child.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="transport", required=True)
    tcp = sub.add_parser("tcp")
    tcp.add_argument("--port", type=int, required=True)
    tcp.add_argument("--to", type=int, required=True, help="the upstream's port on 127.0.0.1")
    stdio = sub.add_parser("stdio")
    stdio.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.transport == "stdio":
        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not argv:
            parser.error("stdio: the upstream command follows --")
        return relay_stdio(argv)
    try:
        import uvloop  # the gateway's own loop, so the floor is measured on the same footing
    except ImportError:
        asyncio.run(relay_tcp(args.port, args.to))
    else:
        uvloop.run(relay_tcp(args.port, args.to))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
