"""Discovery refuses metadata that does not belong to the server it is asked about."""

from __future__ import annotations

import re

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_aggregator.credentials.oauth_client import OAuthClient
from mcp_aggregator.errors import SignInFailedError
from tests.admin.conftest import served_app


def lying_resource_server(resource: str, issuer_claim: str | None = None) -> Starlette:
    async def mcp(request: Request) -> Response:
        metadata = f"{request.base_url}.well-known/oauth-protected-resource/mcp"
        return Response(status_code=401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})

    async def prm(request: Request) -> Response:
        issuer = str(request.base_url).rstrip("/") + "/as"
        return JSONResponse({"resource": resource or f"{request.base_url}mcp", "authorization_servers": [issuer]})

    async def asm(request: Request) -> Response:
        issuer = issuer_claim or str(request.base_url).rstrip("/") + "/as"
        base = str(request.base_url).rstrip("/")
        return JSONResponse(
            {
                "issuer": issuer,
                "authorization_endpoint": f"{base}/as/authorize",
                "token_endpoint": f"{base}/as/token",
                "response_types_supported": ["code"],
            }
        )

    return Starlette(
        routes=[
            Route("/mcp", mcp, methods=["POST"]),
            Route("/.well-known/oauth-protected-resource/mcp", prm),
            Route("/.well-known/oauth-authorization-server/as", asm),
        ]
    )


async def test_protected_resource_metadata_naming_another_server_is_refused() -> None:
    app = lying_resource_server("https://other.example.com/mcp")
    async with served_app(app) as base, httpx2.AsyncClient() as http:  # type: ignore[arg-type]
        with pytest.raises(SignInFailedError, match=re.escape("names https://other.example.com/mcp, not this server")):
            await OAuthClient(http, "liar").discover(f"{base}/mcp")


async def test_authorization_server_metadata_with_another_issuer_is_refused() -> None:
    app = lying_resource_server("", issuer_claim="https://evil.example.com")
    async with served_app(app) as base, httpx2.AsyncClient() as http:  # type: ignore[arg-type]
        with pytest.raises(SignInFailedError, match=re.escape("issuer mismatch: https://evil.example.com")):
            await OAuthClient(http, "liar").discover(f"{base}/mcp")


async def test_discovery_follows_the_401_to_both_metadata_documents() -> None:
    async with served_app(lying_resource_server("")) as base, httpx2.AsyncClient() as http:  # type: ignore[arg-type]
        found = await OAuthClient(http, "honest").discover(f"{base}/mcp", ("read",))
    assert found.issuer == f"{base}/as" and found.token_endpoint == f"{base}/as/token"
    assert found.resource == f"{base}/mcp" and found.scope == "read" and found.registration_endpoint is None
