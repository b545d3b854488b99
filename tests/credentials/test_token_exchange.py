"""``per_user`` with ``token_exchange``: each user's own ``/mcp`` token is traded (RFC 8693) for theirs."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_aggregator.credentials.oauth_client import OAuthClient, TokenRefused
from mcp_aggregator.credentials.per_user import ActingUser
from mcp_aggregator.credentials.records import AuthServer, ClientInfo
from mcp_aggregator.errors import SignInFailedError, SignInRequiredError
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller
from mcp_aggregator.settings import ServerConfig, Settings
from tests.admin.conftest import served_app
from tests.conftest import settings_for
from tests.credentials.test_per_user import mcp_client, whoami_as
from tests.credentials.test_sign_in_flow import SETTLE, protected
from tests.serve.http_face import http_face
from tests.upstream.oauth_servers import (
    ACCESS_TOKEN_TYPE,
    GATEWAY_AUDIENCE,
    MACHINE_CLIENT_ID,
    MACHINE_CLIENT_SECRET,
    OAuthWorld,
    oauth_world,
)

CAROL_TOKEN = "carol-static-token-4f1e9a7c2b"
"""A named client's static token: the authorization server never issued it."""


def exchanging(world: OAuthWorld, **exchange: Any) -> ServerConfig:
    """The protected server with per-user tokens by exchange; the gateway's own connection
    signs in with client credentials (the same client)."""
    return protected(
        world,
        client_id=MACHINE_CLIENT_ID,
        client_secret="${MACHINE_SECRET}",
        grant="client_credentials",
        per_user=True,
        token_exchange=exchange or True,
    )


def gateway_settings(tmp_path: Path, world: OAuthWorld, *, sections: dict[str, Any] | None = None) -> Settings:
    """``/mcp`` takes the users' JWTs from the same authorization server, and carol's static token."""
    oauth = {"issuer": world.issuer, "audience": GATEWAY_AUDIENCE, "jwks_url": f"{world.issuer}/jwks"}
    clients = [{"name": "carol", "token": CAROL_TOKEN, "profiles": ["default"]}]
    return settings_for(
        exchanging(world),
        data_dir=str(tmp_path / "data"),
        port=0,
        oauth=oauth,
        sections={"clients": clients, **(sections or {})},
    )


def as_user(user: str, token: str) -> ClientIdentity:
    return ClientIdentity(name=user, subject=user, token=SecretStr(token))


async def test_each_user_gets_their_own_exchanged_token_reused_until_it_stops_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MACHINE_SECRET", MACHINE_CLIENT_SECRET)
    caplog.set_level(logging.DEBUG)
    answers: list[str] = []
    async with oauth_world() as world:
        alice_jwt, bob_jwt = world.provider.user_token("alice"), world.provider.user_token("bob")
        async with http_face(gateway_settings(tmp_path, world)) as face:
            await face.gateway.wait_settled(SETTLE)
            async with mcp_client(face.mcp_url, alice_jwt) as alice, mcp_client(face.mcp_url, bob_jwt) as bob:
                for client, user in [(alice, "alice"), (bob, "bob"), (alice, "alice"), (bob, "bob")]:
                    result = await client.call_tool("protected__whoami", {})
                    answers.append(result.model_dump_json())
                    assert result.structured_content == {"result": user}
                # One exchange per user, each for the server's resource; the second calls reused them.
                assert world.provider.exchanges == [("alice", world.mcp_url), ("bob", world.mcp_url)]
                exchanged = {
                    t.subject: t.token for t in world.provider.access.values() if t.subject != MACHINE_CLIENT_ID
                }
                assert set(exchanged) == {"alice", "bob"} and exchanged["alice"] != exchanged["bob"]

                # The upstream stops taking alice's token: her next call is exchanged again, once.
                world.provider.expire_access_tokens()
                result = await alice.call_tool("protected__whoami", {})
                answers.append(result.model_dump_json())
                assert result.structured_content == {"result": "alice"}
                assert world.provider.exchanges[2:] == [("alice", world.mcp_url)]
            # Carol's static token means nothing to the authorization server: a clear refusal.
            async with mcp_client(face.mcp_url, CAROL_TOKEN) as carol:
                with pytest.raises(MCPError) as refused:
                    await carol.call_tool("protected__whoami", {})
                answers.append(refused.value.error.model_dump_json())
                assert refused.value.error.message == (
                    "protected: the authorization server refused to exchange the token of user carol: "
                    "invalid_grant (not a token of ours)"
                )
                assert len(world.provider.exchanges) == 3
        tokens = [*world.provider.issued_tokens, CAROL_TOKEN]
    logged = [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    assert "upstream protected: token exchange for user carol refused (invalid_grant (not a token of ours))" in logged
    files = [p.read_bytes() for p in (tmp_path / "data").rglob("*") if p.is_file()]
    database = Path(face.gateway.settings.registry.database_url.split("///", 1)[1])
    files += [p.read_bytes() for p in database.parent.glob(database.name + "*")]
    assert len(tokens) >= 6
    for token in tokens:
        assert not [a for a in answers if token in a]
        assert not [line for line in logged if token in line]
        assert not [f for f in files if token.encode() in f]


async def test_a_token_near_its_expiry_is_exchanged_again_before_it_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_SECRET", MACHINE_CLIENT_SECRET)
    async with oauth_world(access_ttl=600) as world:
        # Every token issued lives 600 s, inside the 3600 s margin: always near its expiry.
        ahead = {"credentials": {"refresh_ahead_secs": 3600}}
        async with http_face(gateway_settings(tmp_path, world, sections=ahead)) as face:
            await face.gateway.wait_settled(SETTLE)
            alice = as_user("alice", world.provider.user_token("alice"))
            assert await whoami_as(face.gateway, alice) == "alice"
            assert await whoami_as(face.gateway, alice) == "alice"
            # Twice a call: the stage's check before it, and the request itself, each find the
            # held token too close to its expiry and get a fresh one.
            assert [user for user, _ in world.provider.exchanges] == ["alice"] * 4


async def test_a_caller_without_a_bearer_token_or_identity_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_SECRET", MACHINE_CLIENT_SECRET)
    async with oauth_world() as world, http_face(gateway_settings(tmp_path, world)) as face:
        await face.gateway.wait_settled(SETTLE)
        pipeline = face.gateway.pipeline
        with pytest.raises(SignInFailedError) as refused:
            await pipeline.call_tool_result(
                "protected__whoami", {}, caller=Caller(identity=ClientIdentity(name="dave"))
            )
        assert str(refused.value).startswith(
            "protected: this server trades each user's own token for theirs (RFC 8693 token exchange) "
            "and the calling client presented no bearer token"
        )
        with pytest.raises(SignInRequiredError, match="calling client is not identified"):
            await pipeline.call_tool_result("protected__whoami", {}, caller=Caller())
        assert world.provider.exchanges == []


async def test_the_configured_audience_scope_and_resource_are_what_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACHINE_SECRET", MACHINE_CLIENT_SECRET)
    async with oauth_world() as world:
        config = exchanging(world, audience="tracker", scopes=["mcp"], resource=world.mcp_url)
        settings = settings_for(config, data_dir=str(tmp_path), port=0)
        async with http_face(settings) as face:
            await face.gateway.wait_settled(SETTLE)
            alice = as_user("alice", world.provider.user_token("alice"))
            assert await whoami_as(face.gateway, alice) == "alice"
        assert world.provider.exchange_forms[-1]["audience"] == "tracker"
        assert world.provider.exchange_forms[-1]["scope"] == "mcp"
        assert world.provider.exchange_forms[-1]["resource"] == world.mcp_url
        assert world.provider.exchange_forms[-1]["client_id"] == MACHINE_CLIENT_ID


def test_the_clients_token_is_masked_wherever_its_identity_or_user_is_shown() -> None:
    canary = "client-token-canary-0a1b2c3d4e"
    identity = as_user("alice", canary)
    acting = ActingUser("alice", identity.token)
    for shown in (repr(identity), str(identity), repr(acting), str(acting), f"{identity.token}"):
        assert canary not in shown
    assert acting.subject_token == canary
    assert identity == ClientIdentity(name="alice", subject="alice"), "the token is no part of who the client is"


async def test_a_refusal_echoing_the_subject_token_is_reported_without_it() -> None:
    canary = "subject-token-canary-5e6f7a8b9c"
    seen: list[dict[str, str]] = []

    async def token(request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        seen.append(form)
        return JSONResponse(
            {"error": "invalid_grant", "error_description": f"unknown token {form['subject_token']}"}, 400
        )

    app = Starlette(routes=[Route("/token", token, methods=["POST"])])
    async with served_app(app) as base, httpx2.AsyncClient() as http:  # type: ignore[arg-type]
        server = AuthServer(issuer=base, token_endpoint=f"{base}/token", resource="https://mcp.example.com/mcp")
        client = ClientInfo(client_id="gw", client_secret="gw-secret")
        with pytest.raises(TokenRefused) as refused:
            await OAuthClient(http, "tracker").exchange_token(server, client, canary, ACCESS_TOKEN_TYPE)
    assert str(refused.value) == "tracker: token request refused: invalid_grant (unknown token ***)"
    assert canary not in repr(refused.value.__cause__) and refused.value.__suppress_context__
    assert seen == [
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": canary,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "client_id": "gw",
            "client_secret": "gw-secret",
            "resource": "https://mcp.example.com/mcp",
        }
    ]
