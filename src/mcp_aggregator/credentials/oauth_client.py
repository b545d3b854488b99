"""``OAuthClient``: the gateway's side of OAuth 2.1 as the MCP authorization spec asks it.

Discovery (the 401's ``resource_metadata`` → RFC 9728 protected resource metadata → RFC 8414
authorization server metadata, OpenID discovery as fallback), dynamic client registration
(RFC 7591), the authorization URL with PKCE S256 and the RFC 8707 resource indicator, and the
token endpoint's grants (authorization code, refresh token, client credentials, and RFC 8693
token exchange).

The URL lists, metadata models, scope choice, resource matching and PKCE come from the
official SDK (``mcp.client.auth``, ``mcp.shared.auth``); this class strings them together
without the SDK provider's inline browser step, so a sign-in can start in one request and
finish in another (the callback), and a refresh failure is told apart from "never signed in".
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Final
from urllib.parse import quote, urlencode

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError
from mcp.client.auth.oauth2 import PKCEParameters, check_registration_usable
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_registration_response,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthClientMetadata, OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from mcp_types import LATEST_PROTOCOL_VERSION
from pydantic import AnyUrl, ValidationError

from mcp_aggregator import __version__
from mcp_aggregator.credentials.records import AuthServer, ClientInfo, TokenSet
from mcp_aggregator.errors import SignInFailedError, UpstreamConnectError

GRANTS: Final = ["authorization_code", "refresh_token"]
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
_PROBE: Final = b'{"jsonrpc":"2.0","id":"mcp-aggregator-auth-probe","method":"ping"}'


class TokenRefused(SignInFailedError):
    """The token endpoint answered with an OAuth error (``invalid_grant`` for a revoked token)."""

    def __init__(self, server: str, error: str, description: str | None) -> None:
        self.error = error
        self.description = description
        self.reason = f"{error}{' (' + description + ')' if description else ''}"
        super().__init__(server, f"token request refused: {self.reason}")


class OAuthClient:
    """Talks to one upstream's authorization server for the server named ``name``.

    Raises ``SignInFailedError`` when a server answers but refuses (or answers nonsense),
    ``UpstreamConnectError`` when it cannot be reached (worth retrying later).
    """

    def __init__(self, http: httpx2.AsyncClient, name: str, *, now: Callable[[], float] = time.time) -> None:
        self._http = http
        self.name = name
        self._now = now

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._http.send(request)
            await response.aread()
            return response
        except httpx2.HTTPError as exc:
            raise UpstreamConnectError(self.name, f"authorization request to {request.url} failed: {exc}") from exc

    async def discover(self, server_url: str, scopes: tuple[str, ...] = ()) -> AuthServer:
        """Find the authorization server of the MCP server at ``server_url``."""
        probe = httpx2.Request(
            "POST",
            server_url,
            content=_PROBE,
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": LATEST_PROTOCOL_VERSION,
            },
        )
        challenge = await self._send(probe)
        www_metadata = extract_resource_metadata_from_www_auth(challenge)
        prm = await self._protected_resource(www_metadata, server_url)
        issuer = str(prm.authorization_servers[0]) if prm is not None else None
        asm = await self._authorization_server(issuer, server_url)
        resource = resource_url_from_server_url(server_url)
        if prm is not None and prm.resource and check_resource_allowed(resource, str(prm.resource)):
            resource = str(prm.resource)
        scope = " ".join(scopes) or get_client_metadata_scopes(
            extract_scope_from_www_auth(challenge) if challenge.status_code in (401, 403) else None, prm, asm, GRANTS
        )
        return AuthServer(
            issuer=str(asm.issuer),
            token_endpoint=str(asm.token_endpoint),
            resource=resource,
            authorization_endpoint=str(asm.authorization_endpoint) if asm.authorization_endpoint else None,
            registration_endpoint=str(asm.registration_endpoint) if asm.registration_endpoint else None,
            scope=scope,
        )

    async def _protected_resource(self, www_metadata: str | None, server_url: str) -> ProtectedResourceMetadata | None:
        for url in build_protected_resource_metadata_discovery_urls(www_metadata, server_url):
            response = await self._send(create_oauth_metadata_request(url))
            prm = await handle_protected_resource_response(response)
            if prm is not None:
                resource = resource_url_from_server_url(server_url)
                if prm.resource and not check_resource_allowed(resource, str(prm.resource)):
                    raise SignInFailedError(
                        self.name, f"protected resource metadata names {prm.resource}, not this server ({resource})"
                    )
                return prm
        return None

    async def _authorization_server(self, issuer: str | None, server_url: str) -> OAuthMetadata:
        tried = build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url)
        for url in tried:
            ok, asm = await handle_auth_metadata_response(await self._send(create_oauth_metadata_request(url)))
            if not ok:
                break
            if asm is not None:
                try:
                    validate_metadata_issuer(asm, issuer or str(asm.issuer))
                except OAuthFlowError as exc:
                    raise SignInFailedError(self.name, str(exc)) from exc
                return asm
        raise SignInFailedError(self.name, f"no authorization server metadata found (tried {', '.join(tried)})")

    async def register(self, server: AuthServer, redirect_uri: str) -> ClientInfo:
        """Register the gateway as a client (RFC 7591) with ``redirect_uri``."""
        if server.registration_endpoint is None:
            raise SignInFailedError(
                self.name, "the authorization server offers no dynamic client registration; set auth.client_id"
            )
        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(redirect_uri)],
            token_endpoint_auth_method="client_secret_post",
            grant_types=list(GRANTS),
            client_name=f"mcp-aggregator {__version__}",
            scope=server.scope,
            application_type="web",
        )
        body = metadata.model_dump(by_alias=True, mode="json", exclude_none=True)
        response = await self._send(httpx2.Request("POST", server.registration_endpoint, json=body))
        try:
            info = await handle_registration_response(response)
            check_registration_usable(info)
        except OAuthRegistrationError as exc:
            raise SignInFailedError(self.name, str(exc)) from exc
        return ClientInfo(
            client_id=info.client_id,
            client_secret=info.client_secret,
            auth_method=info.token_endpoint_auth_method or "client_secret_post",
            redirect_uri=redirect_uri,
            registered=True,
        )

    def authorization_url(self, server: AuthServer, client: ClientInfo, state: str, pkce: PKCEParameters) -> str:
        if server.authorization_endpoint is None:
            raise SignInFailedError(self.name, "the authorization server has no authorization_endpoint")
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": client.redirect_uri or "",
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
            "resource": server.resource,
        }
        if server.scope:
            params["scope"] = server.scope
        return f"{server.authorization_endpoint}?{urlencode(params)}"

    async def exchange_code(self, server: AuthServer, client: ClientInfo, code: str, verifier: str) -> TokenSet:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": client.redirect_uri or "",
            "code_verifier": verifier,
        }
        return await self._token(server, client, form, previous=None)

    async def refresh(self, server: AuthServer, client: ClientInfo, tokens: TokenSet) -> TokenSet:
        if tokens.refresh_token is None:
            raise TokenRefused(self.name, "invalid_grant", "no refresh token was issued")
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        return await self._token(server, client, form, previous=tokens)

    async def client_credentials(self, server: AuthServer, client: ClientInfo) -> TokenSet:
        form = {"grant_type": "client_credentials"}
        if server.scope:
            form["scope"] = server.scope
        return await self._token(server, client, form, previous=None)

    async def exchange_token(
        self,
        server: AuthServer,
        client: ClientInfo,
        subject_token: str,
        subject_token_type: str,
        *,
        audience: str | None = None,
    ) -> TokenSet:
        """RFC 8693 §2.1: trade ``subject_token`` (a user's) for a token to ``server.resource``.

        A refusal's description is cut of ``subject_token`` should the server echo it back.
        """
        form = {"grant_type": TOKEN_EXCHANGE, "subject_token": subject_token, "subject_token_type": subject_token_type}
        if audience is not None:
            form["audience"] = audience
        if server.scope:
            form["scope"] = server.scope
        try:
            return await self._token(server, client, form, previous=None)
        except TokenRefused as exc:
            error = exc.error.replace(subject_token, "***")
            description = exc.description.replace(subject_token, "***") if exc.description else None
            raise TokenRefused(self.name, error, description) from None

    async def _token(
        self, server: AuthServer, client: ClientInfo, form: dict[str, str], *, previous: TokenSet | None
    ) -> TokenSet:
        data = {**form, "client_id": client.client_id, "resource": server.resource}
        headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
        if client.client_secret and client.auth_method == "client_secret_basic":
            # RFC 6749 §2.3.1: both parts form-encoded before they are joined.
            pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        elif client.client_secret:
            data["client_secret"] = client.client_secret
        request = httpx2.Request("POST", server.token_endpoint, data=data, headers=headers)
        response = await self._send(request)
        if response.status_code != 200:
            error, description = _oauth_error(response)
            raise TokenRefused(self.name, error, description)
        try:
            token = OAuthToken.model_validate_json(response.content)
        except ValidationError as exc:
            raise SignInFailedError(self.name, "the token endpoint answered something that is not a token") from exc
        return TokenSet(
            access_token=token.access_token,
            refresh_token=token.refresh_token or (previous.refresh_token if previous else None),
            expires_at=self._now() + token.expires_in if token.expires_in is not None else None,
            scope=token.scope or (previous.scope if previous else None),
        )


def _oauth_error(response: httpx2.Response) -> tuple[str, str | None]:
    """RFC 6749 §5.2's ``error`` and ``error_description``; the HTTP status if the body has none."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        description = body.get("error_description")
        return body["error"], description if isinstance(description, str) else None
    return f"HTTP {response.status_code}", None


def new_pkce() -> PKCEParameters:
    """A fresh S256 verifier and challenge (the SDK's generator)."""
    return PKCEParameters.generate()
