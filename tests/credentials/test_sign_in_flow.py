"""The admin signs the gateway in to a real OAuth-protected MCP server, through a browser's steps."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from mcp import Client
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from mcp_aggregator.credentials import CredentialsSettings, UpstreamOAuth
from mcp_aggregator.settings import ServerConfig, Transport
from tests.cli.conftest import Cli
from tests.serve.http_face import API, Face, face_settings, http_face
from tests.upstream.oauth_servers import OAuthWorld, browser_sign_in, oauth_world

SETTLE = 30.0


def protected(world: OAuthWorld, **auth: object) -> ServerConfig:
    return ServerConfig(
        name="protected", transport=Transport.HTTP, base_url=world.mcp_url, auth=UpstreamOAuth.model_validate(auth)
    )


async def server_id(http: httpx.AsyncClient) -> str:
    servers = (await http.get(f"{API}/servers")).json()
    return str(next(s["id"] for s in servers if s["name"] == "protected"))


async def sign_in(face: Face, http: httpx.AsyncClient, sid: str, user: str = "alice") -> httpx.Response:
    start = await http.post(f"{API}/servers/{sid}/oauth/start")
    assert start.status_code == 200, start.text
    return await browser_sign_in(start.json()["authorization_url"], user)


async def whoami(face: Face) -> str:
    async with Client(face.mcp_url, cache=None) as client:
        result = await client.call_tool("protected__whoami", {})
    assert not result.is_error, result
    return str(result.structured_content["result"] if result.structured_content else result.content[0].text)


async def test_a_server_needing_sign_in_parks_and_the_admin_signs_it_in_through_the_callback(tmp_path: Path) -> None:
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world))) as face:
        await face.gateway.wait_settled(SETTLE)
        async with face.admin() as http:
            sid = await server_id(http)
            before = (await http.get(f"{API}/servers/{sid}")).json()
            assert before["auth_status"] == "sign_in_required"
            assert before["status"] == "ERROR" and "sign-in required" in before["error_message"]
            sup = face.gateway.supervisor("protected")
            start = await http.post(f"{API}/servers/{sid}/oauth/start")
            url = start.json()["authorization_url"]
            query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
            assert url.startswith(f"{world.issuer}/authorize?")
            assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
            assert query["resource"] == world.mcp_url
            assert query["redirect_uri"] == f"{face.base_url}/oauth/callback"
            assert query["scope"] == "mcp" and query["state"]
            assert len(world.provider.clients) == 2, "registered itself (RFC 7591) beside the machine client"
            page = await browser_sign_in(url)
            assert page.status_code == 200, page.text
            assert "Signed in to protected" in page.text and "connected protected" in page.text
            assert page.headers["cache-control"] == "no-store"
            after = (await http.get(f"{API}/servers/{sid}")).json()
            assert after["auth_status"] == "signed_in" and after["status"] == "CONNECTED"
            assert sup.consecutive_failures == 0
        assert await whoami(face) == "alice"


async def test_the_callback_refuses_a_forged_a_replayed_and_a_denied_state(tmp_path: Path) -> None:
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world))) as face:
        await face.gateway.wait_settled(SETTLE)
        async with face.admin() as http, face.client() as browser:
            sid = await server_id(http)
            forged = await browser.get("/oauth/callback", params={"state": "made-up", "code": "x"})
            assert forged.status_code == 400 and "unknown, altered or expired state" in forged.text
            start = (await http.post(f"{API}/servers/{sid}/oauth/start")).json()["authorization_url"]
            state = parse_qs(urlsplit(start).query)["state"][0]
            denied = await browser.get("/oauth/callback", params={"state": state, "error": "access_denied"})
            assert denied.status_code == 400 and "refused the sign-in: access_denied" in denied.text
            replay = await browser.get("/oauth/callback", params={"state": state, "code": "x"})
            assert replay.status_code == 400 and "already completed" in replay.text
            again = (await http.post(f"{API}/servers/{sid}/oauth/start")).json()["authorization_url"]
            other = parse_qs(urlsplit(again).query)["state"][0]
            wrong_code = await browser.get("/oauth/callback", params={"state": other, "code": "not-a-code"})
            assert wrong_code.status_code == 400 and "invalid_grant" in wrong_code.text
            assert (await http.get(f"{API}/servers/{sid}")).json()["auth_status"] == "sign_in_required"


async def test_starting_a_sign_in_for_a_server_without_auth_is_a_conflict(tmp_path: Path) -> None:
    async with oauth_world() as world:
        plain = ServerConfig(name="plain", transport=Transport.HTTP, base_url=world.mcp_url)
        async with http_face(face_settings(tmp_path, plain)) as face, face.admin() as http:
            await face.gateway.wait_settled(SETTLE)
            sid = (await http.get(f"{API}/servers")).json()[0]["id"]
            assert (await http.get(f"{API}/servers/{sid}")).json()["auth_status"] == "not_required"
            start = await http.post(f"{API}/servers/{sid}/oauth/start")
            assert start.status_code == 409 and "has no auth: oauth" in start.json()["detail"]
            missing = await http.post(f"{API}/servers/no-such-id/oauth/start")
            assert missing.status_code == 404


async def test_the_callback_url_can_be_configured_for_a_gateway_behind_a_proxy(tmp_path: Path) -> None:
    async with oauth_world() as world:
        settings = face_settings(tmp_path, protected(world)).model_copy(
            update={"credentials": CredentialsSettings(callback_url="https://gw.example.com/oauth/callback")}
        )
        async with http_face(settings) as face, face.admin() as http:
            await face.gateway.wait_settled(SETTLE)
            start = await http.post(f"{API}/servers/{await server_id(http)}/oauth/start")
            query = parse_qs(urlsplit(start.json()["authorization_url"]).query)
            assert query["redirect_uri"] == ["https://gw.example.com/oauth/callback"]


async def test_a_configured_client_signs_in_where_the_server_offers_no_registration_and_oidc_discovery_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEB_SECRET", "web-client-secret-1234")
    async with oauth_world(registration=False, oidc_only=True) as world:
        unregistered = protected(world)
        async with http_face(face_settings(tmp_path / "a", unregistered)) as face, face.admin() as http:
            await face.gateway.wait_settled(SETTLE)
            start = await http.post(f"{API}/servers/{await server_id(http)}/oauth/start")
            assert start.status_code == 503
            assert "offers no dynamic client registration; set auth.client_id" in start.json()["detail"]["message"]
        configured = protected(world, client_id="gateway-web", client_secret="${WEB_SECRET}")
        async with http_face(face_settings(tmp_path / "b", configured)) as face, face.admin() as http:
            await face.gateway.wait_settled(SETTLE)
            world.provider.clients["gateway-web"] = OAuthClientInformationFull(
                client_id="gateway-web",
                client_secret="web-client-secret-1234",
                redirect_uris=[AnyUrl(f"{face.base_url}/oauth/callback")],
                token_endpoint_auth_method="client_secret_post",
                scope="mcp",
            )
            page = await sign_in(face, http, await server_id(http))
            assert "connected protected" in page.text, page.text
            assert await whoami(face) == "alice"


async def test_a_url_that_publishes_no_metadata_fails_discovery_saying_where_it_looked(tmp_path: Path) -> None:
    async with oauth_world() as world:
        elsewhere = world.mcp_url.replace("/mcp", "/other")
        config = ServerConfig(name="protected", transport=Transport.HTTP, base_url=elsewhere, auth=UpstreamOAuth())
        async with http_face(face_settings(tmp_path, config)) as face, face.admin() as http:
            await face.gateway.wait_settled(SETTLE)
            start = await http.post(f"{API}/servers/{await server_id(http)}/oauth/start")
            assert start.status_code == 503
            message = start.json()["detail"]["message"]
            assert "no authorization server metadata found (tried http://127.0.0.1:" in message


async def test_a_callback_naming_another_issuer_is_refused(tmp_path: Path) -> None:
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world))) as face:
        await face.gateway.wait_settled(SETTLE)
        async with face.admin() as http, face.client() as browser:
            start = (await http.post(f"{API}/servers/{await server_id(http)}/oauth/start")).json()
            state = parse_qs(urlsplit(start["authorization_url"]).query)["state"][0]
            mixed = await browser.get("/oauth/callback", params={"state": state, "code": "x", "iss": "https://evil"})
            assert mixed.status_code == 400 and "names issuer https://evil" in mixed.text


async def test_the_cli_login_prints_the_link_the_admin_signs_in_with(tmp_path: Path) -> None:
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world))) as face:
        await face.gateway.wait_settled(SETTLE)
        cli = Cli(face)
        login = await cli("servers", "login", "protected", "--no-browser", "--json", "--wait", "0")
        assert login.exit_code == 0, login.stderr
        page = await browser_sign_in(json.loads(login.stdout)["authorization_url"])
        assert "connected protected" in page.text
        shown = json.loads((await cli("servers", "show", "protected", "--json")).stdout)
        assert (shown["auth_status"], shown["status"]) == ("signed_in", "CONNECTED")
