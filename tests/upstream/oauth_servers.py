"""A real OAuth 2.1 authorization server and an MCP resource server that wants its tokens.

Both are built from the official SDK's auth pieces (``mcp.server.auth``): the authorization
server is ``create_auth_routes`` (metadata, dynamic registration, authorize, token,
revocation) around ``LoginProvider`` with a login form; the resource server is an
``MCPServer`` with ``AuthSettings`` and a token verifier, serving RFC 9728 metadata and
answering 401 with ``resource_metadata``. They listen on two loopback ports (two origins),
in this process, so a test can expire or revoke tokens as an operator would.

``client_credentials`` and RFC 8693 token exchange are not among the SDK handler's grants:
``/token`` is wrapped so those are answered here for the one pre-registered machine client,
the rest by the SDK. For token exchange the server also issues users their own JWT access
tokens for the gateway's ``/mcp`` (``user_token``, checked by the gateway at ``/jwks``); an
exchange takes such a token only, and issues an upstream token whose subject is its user.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any
from urllib.parse import parse_qs, urlencode

import anyio
import httpx
import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from mcp_aggregator.serve.runner import bind_socket

SCOPE = "mcp"
USERS = {"alice": "wonderland", "bob": "builder"}
MACHINE_CLIENT_ID = "machine-client"
MACHINE_CLIENT_SECRET = "machine-secret-5b7c9d1e3f"
GATEWAY_AUDIENCE = "mcp-aggregator-under-test"
"""The ``aud`` of the users' own tokens for the gateway's ``/mcp``."""
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
_KID = "as-key-1"


@cache
def _signing_key() -> RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class LoginProvider:
    """An in-memory authorization server: clients, codes and tokens, with operator knobs."""

    issuer: str
    access_ttl: int = 3600
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    tickets: dict[str, tuple[str, AuthorizationParams]] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    refreshed: int = 0
    """Refresh-token grants answered so far."""
    issued_tokens: list[str] = field(default_factory=list)
    """Every access and refresh token ever issued (for secret canaries)."""
    machine_grants: int = 0
    exchanges: list[tuple[str, str | None]] = field(default_factory=list)
    """Token exchanges answered: the user, the resource asked for."""
    exchange_forms: list[dict[str, str]] = field(default_factory=list)
    """What every token-exchange request asked for (its secrets left out)."""

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        ticket = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.tickets[ticket] = (client.client_id, params)
        return f"{self.issuer}/login?{urlencode({'ticket': ticket})}"

    def log_in(self, ticket: str, user: str) -> str:
        """The redirect back to the client after ``user`` signed in on the form."""
        client_id, params = self.tickets.pop(ticket)
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=user,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        assert client.client_id is not None
        return self._issue(
            client.client_id, authorization_code.scopes, authorization_code.resource, authorization_code.subject
        )

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated: each refresh token works once
        self.refreshed += 1
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource, refresh_token.subject
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, subject: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        self.issued_tokens += [access, refresh]
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.access_ttl,
            resource=resource,
            subject=subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(
            access_token=access, expires_in=self.access_ttl, scope=" ".join(scopes), refresh_token=refresh
        )

    def machine_token(self, resource: str | None) -> OAuthToken:
        self.machine_grants += 1
        token = self._issue(MACHINE_CLIENT_ID, [SCOPE], resource, MACHINE_CLIENT_ID)
        return token.model_copy(update={"refresh_token": None})

    def user_token(self, user: str, ttl: int = 600) -> str:
        """A JWT access token for ``user`` to the gateway's ``/mcp`` (what their client holds)."""
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": GATEWAY_AUDIENCE, "sub": user, "scope": SCOPE, "iat": now}
        token = jwt.encode({**claims, "exp": now + ttl}, _signing_key(), algorithm="RS256", headers={"kid": _KID})
        self.issued_tokens.append(token)
        return token

    def exchange(self, form: dict[str, str]) -> OAuthToken | str:
        """RFC 8693 §2.2: an upstream token for the user of ``subject_token``; else the error code."""
        self.exchange_forms.append({k: v for k, v in form.items() if k not in ("subject_token", "client_secret")})
        if form.get("subject_token_type") != ACCESS_TOKEN_TYPE:
            return "invalid_request"
        try:
            claims = jwt.decode(
                form.get("subject_token", ""),
                _signing_key().public_key(),
                algorithms=["RS256"],
                audience=GATEWAY_AUDIENCE,
                issuer=self.issuer,
            )
        except jwt.InvalidTokenError:
            return "invalid_grant"
        resource = form.get("resource")
        self.exchanges.append((claims["sub"], resource))
        token = self._issue(MACHINE_CLIENT_ID, form.get("scope", SCOPE).split(), resource, claims["sub"])
        return token.model_copy(update={"refresh_token": None})

    def jwks(self) -> dict[str, Any]:
        public = jwt.algorithms.RSAAlgorithm.to_jwk(_signing_key().public_key(), as_dict=True)
        return {"keys": [{**public, "kid": _KID, "use": "sig", "alg": "RS256"}]}

    # -- what an operator does -------------------------------------------------------------

    def expire_access_tokens(self) -> None:
        """Every access token issued so far stops working (as if its lifetime ran out)."""
        self.access.clear()

    def revoke_refresh_tokens(self) -> None:
        self.refresh.clear()


class TokenWithMachineGrants:
    """``/token``: ``client_credentials`` and token exchange here, every other grant to the SDK's handler."""

    def __init__(self, sdk_token: Any, provider: LoginProvider) -> None:
        self.sdk_token = sdk_token
        self.provider = provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") not in ("client_credentials", TOKEN_EXCHANGE):
            sent = False

            async def replay() -> Message:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.sdk_token(scope, replay, send)
            return
        if _client_of(scope, form) != (MACHINE_CLIENT_ID, MACHINE_CLIENT_SECRET):
            response: Response = JSONResponse({"error": "invalid_client"}, status_code=401)
        elif form["grant_type"] == "client_credentials":
            token = self.provider.machine_token(form.get("resource"))
            response = JSONResponse(token.model_dump(exclude_none=True))
        else:
            exchanged = self.provider.exchange(form)
            if isinstance(exchanged, str):
                response = JSONResponse({"error": exchanged, "error_description": "not a token of ours"}, 400)
            else:
                issued = {**exchanged.model_dump(exclude_none=True), "issued_token_type": ACCESS_TOKEN_TYPE}
                response = JSONResponse(issued)
        await response(scope, receive, send)


def _client_of(scope: Scope, form: dict[str, str]) -> tuple[str | None, str | None]:
    """The client id and secret, from ``client_secret_basic`` or ``client_secret_post``."""
    header = dict(scope["headers"]).get(b"authorization", b"").decode()
    if header.lower().startswith("basic "):
        client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        return client_id, secret
    return form.get("client_id"), form.get("client_secret")


def authorization_server_app(
    provider: LoginProvider, *, registration: bool = True, oidc_only: bool = False
) -> Starlette:
    """``registration``: offer dynamic client registration; ``oidc_only``: publish the metadata
    only at OpenID discovery's address, not RFC 8414's."""
    routes = create_auth_routes(
        provider,
        AnyHttpUrl(provider.issuer),
        client_registration_options=ClientRegistrationOptions(
            enabled=registration, valid_scopes=[SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    wrapped = []
    for route in routes:
        if isinstance(route, Route) and route.path == "/token":
            route = Route("/token", TokenWithMachineGrants(route.app, provider), methods=["POST"])
        if isinstance(route, Route) and route.path == "/.well-known/oauth-authorization-server" and oidc_only:
            route = Route("/.well-known/openid-configuration", route.app, methods=["GET", "OPTIONS"])
        wrapped.append(route)

    async def login_form(request: Request) -> Response:
        ticket = request.query_params.get("ticket", "")
        return HTMLResponse(
            "<form method='post' action='/login'>"
            f"<input type='hidden' name='ticket' value='{ticket}'>"
            "<input name='username'><input name='password' type='password'><button>Sign in</button></form>"
        )

    async def log_in(request: Request) -> Response:
        form = await request.form()
        user, password, ticket = (str(form.get(k, "")) for k in ("username", "password", "ticket"))
        if USERS.get(user) != password or ticket not in provider.tickets:
            return HTMLResponse("wrong user name or password", status_code=401)
        return RedirectResponse(provider.log_in(ticket, user), status_code=302)

    async def jwks(_request: Request) -> Response:
        return JSONResponse(provider.jwks())

    wrapped += [
        Route("/login", login_form, methods=["GET"]),
        Route("/login", log_in, methods=["POST"]),
        Route("/jwks", jwks, methods=["GET"]),
    ]
    return Starlette(routes=wrapped)


class ProviderVerifier:
    """The resource server checks tokens against the authorization server's own records."""

    def __init__(self, provider: LoginProvider) -> None:
        self.provider = provider

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self.provider.load_access_token(token)


def resource_server(provider: LoginProvider, mcp_url: str) -> MCPServer:
    server = MCPServer(
        "protected",
        token_verifier=ProviderVerifier(provider),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(provider.issuer),
            resource_server_url=AnyHttpUrl(mcp_url),
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The user the calling token was issued to."""
        token = get_access_token()
        return token.subject or "" if token is not None else ""

    @server.tool()
    def echo(text: str) -> str:
        """Says the text back."""
        return text

    return server


@dataclass
class OAuthWorld:
    provider: LoginProvider
    issuer: str
    mcp_url: str


@asynccontextmanager
async def oauth_world(
    *, access_ttl: int = 3600, registration: bool = True, oidc_only: bool = False
) -> AsyncIterator[OAuthWorld]:
    """The authorization server and the resource server, each on its own loopback port."""
    with bind_socket("127.0.0.1", 0) as as_sock, bind_socket("127.0.0.1", 0) as rs_sock:
        issuer = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
        rs_base = f"http://127.0.0.1:{rs_sock.getsockname()[1]}"
        provider = LoginProvider(issuer, access_ttl=access_ttl)
        provider.clients[MACHINE_CLIENT_ID] = OAuthClientInformationFull(
            client_id=MACHINE_CLIENT_ID,
            client_secret=MACHINE_CLIENT_SECRET,
            redirect_uris=None,
            grant_types=["client_credentials"],
        )
        mcp = resource_server(provider, f"{rs_base}/mcp")
        rs_app = mcp.streamable_http_app(
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
        )
        servers = [
            uvicorn.Server(
                uvicorn.Config(
                    authorization_server_app(provider, registration=registration, oidc_only=oidc_only),
                    log_level="warning",
                    lifespan="off",
                )
            ),
            uvicorn.Server(uvicorn.Config(rs_app, log_level="warning", lifespan="on")),
        ]
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(servers[0].serve, sockets=[as_sock]))
            tg.start_soon(partial(servers[1].serve, sockets=[rs_sock]))
            try:
                yield OAuthWorld(provider, issuer, f"{rs_base}/mcp")
            finally:
                for server in servers:
                    server.should_exit = True


async def browser_sign_in(authorization_url: str, user: str = "alice", password: str | None = None) -> httpx.Response:
    """Do what a person's browser does: open the URL, fill in the login form, follow the
    redirects to the gateway's callback; the callback's answer (the page)."""
    async with httpx.AsyncClient(timeout=30, follow_redirects=False) as browser:
        response = await browser.get(authorization_url)
        for _ in range(10):
            if response.status_code not in (302, 303, 307):
                break
            response = await browser.get(response.headers["location"])
        assert response.status_code == 200 and "<form" in response.text, response.text
        ticket = response.url.params["ticket"]
        login = await browser.post(
            response.url.copy_with(query=None),
            data={"username": user, "password": password or USERS[user], "ticket": ticket},
        )
        assert login.status_code == 302, login.text
        return await browser.get(login.headers["location"])
