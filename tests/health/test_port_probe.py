from __future__ import annotations

import socket

import anyio
import pytest

from mcp_aggregator.health.port_probe import address_of, port_open, wait_port_open
from tests.ports import free_port


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8123/mcp", ("127.0.0.1", 8123)),
        ("https://docs.example.com/mcp", ("docs.example.com", 443)),
        ("http://example.com/sse", ("example.com", 80)),
        ("ftp://example.com/x", None),
        ("http://:80/x", None),
        ("http://example.com:notaport/x", None),
        (None, None),
    ],
)
def test_the_address_to_probe_comes_from_the_url(url: str | None, address: tuple[str, int] | None) -> None:
    assert address_of(url) == address


async def test_a_closed_port_is_waited_for_until_it_listens() -> None:
    port = free_port()
    assert not await port_open(("127.0.0.1", port))
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", port))

        async def open_later() -> None:
            listener.listen(1)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_port_open, ("127.0.0.1", port), 0.05)
                tg.start_soon(open_later)
        assert await port_open(("127.0.0.1", port))
    finally:
        listener.close()
