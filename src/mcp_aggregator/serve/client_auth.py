"""``McpClientAuth``: who may use ``/mcp`` — static bearer tokens and/or OAuth 2.1 access tokens.

Follows the MCP authorization spec for a resource server: a request without a valid token
gets 401 with ``WWW-Authenticate: Bearer resource_metadata="..."`` pointing at the
Protected Resource Metadata (RFC 9728), which names the authorization server; a valid
token lacking a required scope gets 403 ``insufficient_scope``. The authenticated
principal is put in ``scope["user"]`` as the SDK's ``AuthenticatedUser``, so the SDK binds
each MCP session to the principal that opened it.

The client's ``Authorization`` header stops here: nothing in the gateway copies request
headers to upstream sessions, whose credentials come from their own configuration only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_aggregator.identity import DEFAULT_PROFILE, ClientIdentity
from mcp_aggregator.identity.clients import Client, ClientBook

MCP_PATH = "/mcp"


def resource_url(scope: Scope) -> str:
    """The public URL of ``/mcp`` as this request reached it (its Host passed the guard)."""
    headers = dict(scope["headers"])
    host = headers.get(b"host", b"localhost").decode("latin-1")
    return f"{scope.get('scheme', 'http')}://{host}{MCP_PATH}"


def metadata_url(scope: Scope) -> str:
    return str(build_resource_metadata_url(AnyHttpUrl(resource_url(scope))))


IDENTITY_KEY = "mcp_aggregator.identity"
"""Where the client's ``ClientIdentity`` is kept in the ASGI scope (the MCP handlers read it)."""


def identity_of(scope: Scope) -> ClientIdentity | None:
    found = scope.get(IDENTITY_KEY)
    return found if isinstance(found, ClientIdentity) else None


class McpClientAuth:
    """Pure ASGI wrapper of one MCP endpoint (``/mcp`` or ``/mcp/<profile>``): who the client
    is, and whether it may use ``profile``. Open (every client anonymous) when neither
    tokens nor OAuth are configured."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        book: ClientBook,
        verifier: TokenVerifier | None = None,
        required_scopes: Sequence[str] = (),
        profile: str = DEFAULT_PROFILE,
    ) -> None:
        self.app = app
        self.book = book
        self.verifier = verifier
        self.required_scopes = tuple(required_scopes)
        self.profile = profile

    @property
    def enabled(self) -> bool:
        return self.book.has_tokens or self.verifier is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.enabled:
            # Nobody is named: the endpoint's own server and fast path stand for its profile.
            await self.app(scope, receive, send)
            return
        raw = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, presented = raw.partition(" ")
        presented = presented.strip()
        if scheme.lower() != "bearer" or not presented:
            await self._refuse(scope, send, 401, None, "Authentication required")
            return
        found = await self._authenticate(presented)
        if found is None:
            await self._refuse(scope, send, 401, "invalid_token", "The access token is invalid or expired")
            return
        token, identity, client = found
        missing = [s for s in self.required_scopes if s not in token.scopes]
        if missing:
            await self._refuse(scope, send, 403, "insufficient_scope", f"Required scope: {' '.join(missing)}")
            return
        if not client.may_use(self.profile):
            await self._forbid(send, f"this client may not use the profile {self.profile!r}")
            return
        scope["user"] = AuthenticatedUser(token)
        scope["auth"] = AuthCredentials(token.scopes)
        scope[IDENTITY_KEY] = identity
        await self.app(scope, receive, send)

    async def _authenticate(self, presented: str) -> tuple[AccessToken, ClientIdentity, Client] | None:
        client = self.book.by_token(presented)
        if client is not None:
            # The SDK binds a session to its opener's client_id: a name, or one per token.
            digest = hashlib.sha256(presented.encode()).hexdigest()[:16]
            owner = f"client:{client.name}" if client.name else f"static:{digest}"
            token = AccessToken(token=presented, client_id=owner, scopes=list(self.required_scopes))
            return token, self.book.identity(client, self.profile, token=presented), client
        if self.verifier is None:
            return None
        verified = await self.verifier.verify_token(presented)
        if verified is None:
            return None
        claims = dict(getattr(verified, "claims", None) or {})
        subject = getattr(verified, "subject", None) or claims.get("sub")
        client = self.book.by_claims(subject, verified.scopes, claims)
        identity = self.book.identity(client, self.profile, subject=subject, claims=claims, token=presented)
        return verified, identity, client

    async def _forbid(self, send: Send, description: str) -> None:
        body = json.dumps({"error": "forbidden", "error_description": description}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _refuse(self, scope: Scope, send: Send, status: int, error: str | None, description: str) -> None:
        parts = []
        if error is not None:
            parts += [f'error="{error}"', f'error_description="{description}"']
        if self.verifier is not None:
            parts.append(f'resource_metadata="{metadata_url(scope)}"')
        challenge = "Bearer " + ", ".join(parts) if parts else "Bearer"
        body = json.dumps({"error": error or "invalid_request", "error_description": description}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def protected_resource_endpoint(issuer: str, scopes: Sequence[str]) -> Callable[[Request], Awaitable[Response]]:
    """RFC 9728 metadata for ``/mcp``, served at the plain and the path-suffixed well-known URL."""
    supported = list(scopes) or None

    async def metadata(request: Request) -> Response:
        body = ProtectedResourceMetadata(
            resource=AnyHttpUrl(resource_url(request.scope)),
            authorization_servers=[AnyHttpUrl(issuer)],
            scopes_supported=supported,
            resource_name="mcp-aggregator",
        )
        return JSONResponse(body.model_dump(mode="json", exclude_none=True))

    return metadata
