"""``UpstreamBearer``: the ``httpx2.Auth`` an OAuth upstream's transport sends its requests through."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, MutableMapping
from typing import Protocol, TypeVar

import httpx2


class BearerSource(Protocol):
    async def bearer(self) -> str: ...

    async def after_unauthorized(self, rejected: str) -> str: ...


class _Request(Protocol):
    @property
    def headers(self) -> MutableMapping[str, str]: ...


class _Response(Protocol):
    @property
    def status_code(self) -> int: ...


RequestT = TypeVar("RequestT", bound=_Request)


async def bearer_flow(source: BearerSource, request: RequestT) -> AsyncGenerator[RequestT, _Response]:
    """The auth flow both HTTP clients run (httpx2 for MCP upstreams, httpx for a2a-sdk):
    the bearer token; after a 401, one refresh and one retry."""
    token = await source.bearer()
    request.headers["Authorization"] = f"Bearer {token}"
    response = yield request
    if response.status_code == 401:
        token = await source.after_unauthorized(token)
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


class UpstreamBearer(httpx2.Auth):
    """Sets ``Authorization: Bearer`` from ``source``; a 401 earns one refresh and one retry.

    ``source`` raises ``SignInRequiredError`` when it has no token to give; the request then
    fails with it (before anything is sent, or after the 401 that could not be fixed).
    """

    requires_request_body = True

    def __init__(self, source: BearerSource) -> None:
        self.source = source

    async def ensure_ready(self) -> None:
        """Raise ``SignInRequiredError`` now rather than on the first request."""
        await self.source.bearer()

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError("UpstreamBearer works with httpx2.AsyncClient only")

    def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return bearer_flow(self.source, request)
