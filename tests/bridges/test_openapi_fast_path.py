"""Over the gateway's HTTP face, a plain call to an OpenAPI tool takes the fast path: the
bridge answers the raw request itself, with the same answer the full pipeline gives."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.settings import ServerConfig
from tests.bridges.asgi_serving import serve_asgi
from tests.bridges.books_api import TOKEN, build_books_app
from tests.conftest import settings_for
from tests.http_serving import ServedGateway, served_over_http


def fast_path_of(served: ServedGateway) -> FastPath:
    for route in served.app.routes:
        if getattr(route, "path", None) == "/mcp":
            endpoint = route.endpoint  # type: ignore[attr-defined]
            assert isinstance(endpoint.app, FastPath)
            return endpoint.app
    raise AssertionError("no route /mcp")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_plain_openapi_call_is_answered_on_the_fast_path(mode: str) -> None:
    async with serve_asgi(build_books_app()) as base:
        config = ServerConfig(
            name="books", transport="openapi", spec=f"{base}/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        async with served_over_http(settings_for(config)) as served, Client(served.mcp_url, mode=mode) as client:
            fast = fast_path_of(served)
            await client.list_tools()
            before = fast.forwarded
            got = await client.call_tool("books__getBook", {"book_id": 1})
            missing = await client.call_tool("books__getBook", {"book_id": 99})
            assert fast.forwarded == before + 2
    assert got.structured_content == {"id": 1, "title": "Dune", "author": "Frank Herbert", "year": 1965}
    assert missing.is_error and missing.content[0].text == 'HTTP 404 Not Found: {"detail":"no book 99"}'
