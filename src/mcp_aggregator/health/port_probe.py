"""Whether an HTTP upstream's port accepts connections: a cheap sign that it is back.

While an upstream that refused connections is waited for between reconnection attempts, a
TCP connect to its port is tried every so often; the attempt is made as soon as the port
accepts, instead of at the end of the backoff delay. A port that accepts while the server
still fails (a hung process, HTTP errors) says nothing new, so then the backoff is kept.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

import anyio

Address = tuple[str, int]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def address_of(url: str | None) -> Address | None:
    """The host and port ``url`` connects to, or None for a URL without a usable host."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return parts.hostname, port


async def port_open(address: Address, timeout_secs: float = 1.0) -> bool:
    """Whether a TCP connection to ``address`` is accepted within ``timeout_secs``."""
    with anyio.move_on_after(timeout_secs):
        try:
            stream = await anyio.connect_tcp(*address)
        except OSError:
            return False
        await stream.aclose()
        return True
    return False


async def wait_port_open(address: Address, every_secs: float) -> None:
    """Return once ``address`` accepts a connection, trying every ``every_secs``."""
    while True:
        if await port_open(address, every_secs):
            return
        await anyio.sleep(every_secs)  # polling is the point: nothing tells us a port opened
