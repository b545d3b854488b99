"""Clients of ``/mcp`` authenticate when configured: static tokens, or OAuth 2.1 JWTs from a real JWKS."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import jwt
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_aggregator.identity.clients import ClientBook
from mcp_aggregator.serve.jwt_verifier import JwtVerifier
from mcp_aggregator.serve.runner import bind_socket
from mcp_aggregator.settings import OAuthSettings, ServerConfig, Transport
from tests.admin.conftest import served_app
from tests.serve.http_face import API, face_settings, http_face
from tests.serve.test_host_guard import INITIALIZE, MCP_HEADERS

CLIENT_TOKEN = "client-token-0123456789abcdef"
AUDIENCE = "urn:mcp-aggregator:test"
KID = "test-key-1"


def test_static_tokens_match_only_whole_tokens() -> None:
    tokens = ClientBook([], ["first-token-0123456789", "second-token-0123456789"])
    found = tokens.by_token("second-token-0123456789")
    assert found is not None and found.name is None and found.profiles == {"default"}
    assert tokens.by_token("first-token-012345678") is None
    assert tokens.by_token("first-token-0123456789x") is None
    assert not ClientBook([]).has_tokens


async def post_initialize(http: httpx.AsyncClient, token: str | None) -> httpx.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await http.post("/mcp", json=INITIALIZE, headers=headers)


@asynccontextmanager
async def sdk_client(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        yield client


async def test_with_static_tokens_only_a_listed_token_opens_mcp(tmp_path: Path) -> None:
    settings = face_settings(tmp_path, mcp_tokens=[CLIENT_TOKEN])
    async with http_face(settings) as face, face.client() as http:
        missing = await post_initialize(http, None)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        for wrong in ("nope", CLIENT_TOKEN + "x", face.admin_token):
            refused = await post_initialize(http, wrong)
            assert refused.status_code == 401, wrong
            assert refused.json()["error"] == "invalid_token"
        basic_auth = {**MCP_HEADERS, "Authorization": f"Basic {CLIENT_TOKEN}"}
        basic = await http.post("/mcp", json=INITIALIZE, headers=basic_auth)
        assert basic.status_code == 401
        assert (await post_initialize(http, CLIENT_TOKEN)).status_code == 200
        no_metadata = await http.get("/.well-known/oauth-protected-resource")
        assert no_metadata.status_code == 401, "without serve.oauth no metadata is published (the admin app answers)"
        async with sdk_client(face.mcp_url, CLIENT_TOKEN) as client:
            assert any(t.name == "mcp__proxy__aggregator__query" for t in (await client.list_tools()).tools)


# -- OAuth 2.1 resource server --------------------------------------------------------------


@pytest.fixture(scope="module")
def signing_key() -> RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def foreign_key() -> RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@asynccontextmanager
async def jwks_server(key: RSAPrivateKey) -> AsyncIterator[tuple[str, list[int]]]:
    """An issuer's JWKS endpoint on a loopback port; yields its base URL and a fetch counter."""
    fetches: list[int] = []
    public = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)

    async def jwks(_request: Request) -> JSONResponse:
        fetches.append(1)
        return JSONResponse({"keys": [{**public, "kid": KID, "use": "sig", "alg": "RS256"}]})

    app = Starlette(routes=[Route("/jwks", jwks)])
    async with served_app(app) as base:  # type: ignore[arg-type]
        yield base, fetches


def mint(key: RSAPrivateKey, issuer: str, **overrides: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": issuer,
        "aud": AUDIENCE,
        "sub": "alice",
        "client_id": "cli",
        "scope": "mcp other",
        "iat": now,
        "exp": now + 600,
    }
    claims.update(overrides)
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, key, algorithm="RS256", headers={"kid": KID})


def oauth_settings(tmp_path: Path, issuer: str, **extra: Any) -> Any:
    oauth = {"issuer": issuer, "audience": AUDIENCE, "jwks_url": f"{issuer}/jwks", "required_scopes": ["mcp"]}
    return face_settings(tmp_path, oauth=oauth, **extra)


async def test_oauth_accepts_a_good_jwt_and_refuses_expired_foreign_and_misaddressed_ones(
    tmp_path: Path, signing_key: RSAPrivateKey, foreign_key: RSAPrivateKey
) -> None:
    async with (
        jwks_server(signing_key) as (issuer, fetches),
        http_face(oauth_settings(tmp_path, issuer)) as face,
        face.client() as http,
    ):
        metadata_url = f"{face.base_url}/.well-known/oauth-protected-resource/mcp"
        missing = await post_initialize(http, None)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
        refused = {
            "expired": mint(signing_key, issuer, iat=int(time.time()) - 7200, exp=int(time.time()) - 3600),
            "foreign issuer": mint(signing_key, "https://other-issuer.example"),
            "wrong audience": mint(signing_key, issuer, aud="urn:someone-else"),
            "no audience": mint(signing_key, issuer, aud=None),
            "no expiry": mint(signing_key, issuer, exp=None),
            "foreign key": mint(foreign_key, issuer),
            "not a jwt": "definitely.not.a-jwt",
            "unsigned": jwt.encode({"iss": issuer, "aud": AUDIENCE, "exp": int(time.time()) + 60}, None, "none"),
        }
        for why, token in refused.items():
            answer = await post_initialize(http, token)
            assert answer.status_code == 401, why
            challenge = answer.headers["www-authenticate"]
            assert 'error="invalid_token"' in challenge and f'resource_metadata="{metadata_url}"' in challenge
        scopeless = await post_initialize(http, mint(signing_key, issuer, scope="other"))
        assert scopeless.status_code == 403
        assert 'error="insufficient_scope"' in scopeless.headers["www-authenticate"]

        good = mint(signing_key, issuer)
        assert (await post_initialize(http, good)).status_code == 200
        async with sdk_client(face.mcp_url, good) as client:
            assert (await client.list_tools()).tools
        assert len(fetches) == 1, "the key set is cached, unknown tokens do not refetch it each time"


async def test_protected_resource_metadata_is_served_at_both_well_known_urls(
    tmp_path: Path, signing_key: RSAPrivateKey
) -> None:
    async with (
        jwks_server(signing_key) as (issuer, _fetches),
        http_face(oauth_settings(tmp_path, issuer)) as face,
        face.client() as http,
    ):
        for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"):
            answer = await http.get(path)
            assert answer.status_code == 200, path
            body = answer.json()
            assert body["resource"] == f"{face.base_url}/mcp"
            assert [s.rstrip("/") for s in body["authorization_servers"]] == [issuer]
            assert body["scopes_supported"] == ["mcp"]
            assert body["bearer_methods_supported"] == ["header"]
        foreign = await http.get("/.well-known/oauth-protected-resource", headers={"Host": "evil.example"})
        assert foreign.status_code == 421


# -- the client's token is never passed upstream -------------------------------------------


class RecordingHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[str | None] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            value = dict(scope["headers"]).get(b"authorization")
            self.seen.append(value.decode() if value is not None else None)
        await self.app(scope, receive, send)


@pytest.fixture
def recording_upstream() -> Iterator[RecordingHeaders]:
    upstream: MCPServer[Any] = MCPServer("recorder")

    @upstream.tool(description="Echo the text back.")
    async def echo(text: str) -> str:
        return text

    yield RecordingHeaders(upstream.streamable_http_app(stateless_http=True, json_response=True))


async def test_the_clients_authorization_header_never_reaches_an_upstream(
    tmp_path: Path, recording_upstream: RecordingHeaders
) -> None:
    recorder = recording_upstream
    with bind_socket("127.0.0.1", 0) as sock:
        server = uvicorn.Server(uvicorn.Config(recorder, log_level="warning", lifespan="on"))
        port = sock.getsockname()[1]
        config = ServerConfig(
            name="rec",
            transport=Transport.HTTP,
            base_url=f"http://127.0.0.1:{port}/mcp",
            headers={"Authorization": "Bearer upstream-credential"},
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            settings = face_settings(tmp_path, config, mcp_tokens=[CLIENT_TOKEN])
            async with http_face(settings) as face:
                await face.gateway.wait_settled(30)
                async with sdk_client(face.mcp_url, CLIENT_TOKEN) as client:
                    result = await client.call_tool("rec__echo", {"text": "hi"})
                    assert not result.is_error
                async with face.admin() as admin:
                    servers = (await admin.get(f"{API}/servers")).json()
                    answer = await admin.post(f"{API}/servers/{servers[0]['id']}/tools/echo/call", json={})
                    assert answer.status_code == 200
            server.should_exit = True
    assert recorder.seen, "the upstream was called"
    assert set(recorder.seen) == {"Bearer upstream-credential"}


async def test_unknown_key_ids_refetch_the_key_set_at_most_once_per_interval(signing_key: RSAPrivateKey) -> None:
    async with jwks_server(signing_key) as (issuer, fetches):
        now = [0.0]
        settings = OAuthSettings(issuer=issuer, audience=AUDIENCE, jwks_url=f"{issuer}/jwks")
        verifier = JwtVerifier(settings, clock=lambda: now[0], cache_secs=300, refetch_interval_secs=30)
        accepted = await verifier.verify_token(mint(signing_key, issuer))
        assert accepted is not None and accepted.subject == "alice" and accepted.scopes == ["mcp", "other"]
        stranger = jwt.encode(
            {"iss": issuer, "aud": AUDIENCE, "exp": int(time.time()) + 60}, signing_key, "RS256", {"kid": "rotated"}
        )
        for _ in range(5):
            assert await verifier.verify_token(stranger) is None
        assert len(fetches) == 1
        now[0] = 31.0
        assert await verifier.verify_token(stranger) is None
        assert len(fetches) == 2, "a rotated key is looked for again after the interval"
        now[0] = 400.0
        assert await verifier.verify_token(mint(signing_key, issuer)) is not None
        assert len(fetches) == 3, "the cached key set expires"
