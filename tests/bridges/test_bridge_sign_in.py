"""``auth: oauth`` on an ``openapi`` and an ``a2a`` server: the gateway's own upstream sign-in,
told where to sign in by the document's or the agent card's ``oauth2`` security scheme, against
the real authorization server the upstream sign-in tests use (the SDK's auth pieces): a
machine client's ``clientCredentials`` for a FastAPI service, and a person's
``authorizationCode`` sign-in (through the admin API and a browser's steps) for an agent."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp import Client

from mcp_aggregator.bridges.scheme_sign_in import scheme_server
from mcp_aggregator.credentials import UpstreamOAuth
from mcp_aggregator.credentials.records import AuthServer
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.settings import ServerConfig
from tests.bridges.asgi_serving import serve_asgi, serve_built
from tests.bridges.signed_in_services import build_reports_app, build_signed_in_agent
from tests.conftest import running_gateway, settings_for
from tests.serve.http_face import API, face_settings, http_face
from tests.upstream.oauth_servers import MACHINE_CLIENT_ID, MACHINE_CLIENT_SECRET, browser_sign_in, oauth_world

SETTLE = 30.0
FLOWS = {
    "people": {
        "type": "oauth2",
        "flows": {
            "authorizationCode": {
                "authorizationUrl": "https://id.example/authorize",
                "tokenUrl": "https://id.example/token",
                "scopes": {"read": "", "write": ""},
            }
        },
    },
    "machines": {
        "type": "oauth2",
        "flows": {"clientCredentials": {"tokenUrl": "https://m.example/token", "scopes": {}}},
    },
}


def test_the_scheme_with_the_grants_flow_says_where_to_sign_in() -> None:
    person = scheme_server(FLOWS, UpstreamOAuth(), resource="https://api.example", scopes=(), where="w")
    machine = scheme_server(
        FLOWS,
        UpstreamOAuth(grant="client_credentials", client_id="c", client_secret="s"),
        resource="https://api.example",
        scopes=("x",),
        where="w",
    )
    assert person == AuthServer(
        issuer="https://id.example",
        token_endpoint="https://id.example/token",
        resource="https://api.example",
        authorization_endpoint="https://id.example/authorize",
        scope="read write",
    )
    assert machine.token_endpoint == "https://m.example/token" and machine.scope == "x"


def test_a_document_without_the_grants_flow_names_what_it_has() -> None:
    with pytest.raises(ValueError) as caught:
        scheme_server(
            {"machines": FLOWS["machines"]}, UpstreamOAuth(), resource="r", scopes=(), where="securitySchemes"
        )
    assert str(caught.value) == (
        "securitySchemes: no oauth2 security scheme has the authorizationCode flow auth.grant "
        "authorization_code needs (oauth2 schemes: machines)"
    )


async def test_a_document_oauth2_client_credentials_flow_signs_the_gateway_in_by_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPORTS_SECRET", MACHINE_CLIENT_SECRET)
    async with oauth_world() as world, serve_asgi(build_reports_app(world.provider)) as base:
        auth = {"grant": "client_credentials", "client_id": MACHINE_CLIENT_ID, "client_secret": "${REPORTS_SECRET}"}
        config = ServerConfig.model_validate(
            {"name": "reports", "transport": "openapi", "spec": f"{base}/openapi.json", "auth": auth}
        )
        async with running_gateway(settings_for(config)) as (_, client):
            answer = await client.call_tool("reports__whoami", {})
            world.provider.expire_access_tokens()
            again = await client.call_tool("reports__whoami", {})
    assert answer.structured_content == {"who": MACHINE_CLIENT_ID}
    assert again.structured_content == {"who": MACHINE_CLIENT_ID}, "a 401 earned a new token and one retry"
    assert world.provider.machine_grants == 2


async def test_an_agent_cards_authorization_code_flow_is_signed_in_by_the_admin(tmp_path: Path) -> None:
    holders: list[str] = []
    async with (
        oauth_world() as world,
        serve_built(lambda url: build_signed_in_agent(url, world.provider, holders)) as base,
    ):
        config = ServerConfig.model_validate({"name": "travel", "transport": "a2a", "base_url": base, "auth": "oauth"})
        async with http_face(face_settings(tmp_path, config)) as face:
            await face.gateway.wait_settled(SETTLE)
            sup = face.gateway.supervisor("travel")
            assert sup.status is ServerStatus.ERROR
            assert sup.error_message is not None and "sign-in required" in sup.error_message
            async with face.admin() as http:
                servers = (await http.get(f"{API}/servers")).json()
                sid = next(s["id"] for s in servers if s["name"] == "travel")
                start = await http.post(f"{API}/servers/{sid}/oauth/start")
                assert start.status_code == 200, start.text
                url = start.json()["authorization_url"]
                query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
                page = await browser_sign_in(url)
                status = (await http.get(f"{API}/servers/{sid}")).json()
            async with Client(face.mcp_url, cache=None) as client:
                hello = await client.call_tool("travel__greet", {"message": "hi"})
    assert url.startswith(f"{world.issuer}/authorize?")
    assert query["resource"] == base and query["scope"] == "mcp"
    assert "Signed in to travel" in page.text
    assert status["auth_status"] == "signed_in" and status["status"] == "CONNECTED"
    assert [block.text for block in hello.content] == ["Hello! You said: hi"]
    assert holders and set(holders) == {"alice"}


async def test_a_documents_openid_connect_scheme_says_where_to_sign_in_through_its_discovery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REPORTS_SECRET", MACHINE_CLIENT_SECRET)
    async with oauth_world(oidc_only=True) as world, serve_asgi(build_reports_app(world.provider, oidc=True)) as base:
        auth = {"grant": "client_credentials", "client_id": MACHINE_CLIENT_ID, "client_secret": "${REPORTS_SECRET}"}
        config = ServerConfig.model_validate(
            {"name": "reports", "transport": "openapi", "spec": f"{base}/openapi.json", "auth": auth}
        )
        async with running_gateway(settings_for(config)) as (_, client):
            answer = await client.call_tool("reports__whoami", {})
    assert answer.structured_content == {"who": MACHINE_CLIENT_ID}
    assert world.provider.machine_grants == 1
