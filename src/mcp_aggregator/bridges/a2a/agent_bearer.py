"""``AgentBearer``: the gateway's upstream sign-in as the ``httpx.Auth`` a2a-sdk's client takes
(a2a-sdk speaks httpx, the rest of the gateway httpx2)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator

import httpx

from mcp_aggregator.credentials.upstream_bearer import BearerSource, bearer_flow


class AgentBearer(httpx.Auth):
    """Sets ``Authorization: Bearer`` from ``source``; a 401 earns one refresh and one retry,
    as ``UpstreamBearer`` does for MCP servers. ``source`` raises ``SignInRequiredError`` when
    it has no token to give."""

    requires_request_body = True

    def __init__(self, source: BearerSource) -> None:
        self.source = source

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("AgentBearer works with httpx.AsyncClient only")

    def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        return bearer_flow(self.source, request)
