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
import hmac
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

MCP_PATH = "/mcp"


class StaticTokens:
    """Bearer tokens from ``serve.mcp_tokens``, compared in constant time."""

    def __init__(self, tokens: Sequence[str]) -> None:
        # Comparing digests keeps the time independent of the tokens' lengths too.
        self._digests = [hashlib.sha256(t.encode()).digest() for t in tokens]

    def __bool__(self) -> bool:
        return bool(self._digests)

    def match(self, presented: str) -> int | None:
        """The index of the matching token, or ``None``; every token is compared every time."""
        digest = hashlib.sha256(presented.encode()).digest()
        found = None
        for index, known in enumerate(self._digests):
            if hmac.compare_digest(digest, known):
                found = index
        return found


def resource_url(scope: Scope) -> str:
    """The public URL of ``/mcp`` as this request reached it (its Host passed the guard)."""
    headers = dict(scope["headers"])
    host = headers.get(b"host", b"localhost").decode("latin-1")
    return f"{scope.get('scheme', 'http')}://{host}{MCP_PATH}"


def metadata_url(scope: Scope) -> str:
    return str(build_resource_metadata_url(AnyHttpUrl(resource_url(scope))))


class McpClientAuth:
    """Pure ASGI wrapper of the ``/mcp`` endpoint; open when neither method is configured."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: StaticTokens,
        verifier: TokenVerifier | None = None,
        required_scopes: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.verifier = verifier
        self.required_scopes = tuple(required_scopes)

    @property
    def enabled(self) -> bool:
        return bool(self.tokens) or self.verifier is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.enabled:
            await self.app(scope, receive, send)
            return
        raw = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, presented = raw.partition(" ")
        presented = presented.strip()
        if scheme.lower() != "bearer" or not presented:
            await self._refuse(scope, send, 401, None, "Authentication required")
            return
        token = await self._authenticate(presented)
        if token is None:
            await self._refuse(scope, send, 401, "invalid_token", "The access token is invalid or expired")
            return
        missing = [s for s in self.required_scopes if s not in token.scopes]
        if missing:
            await self._refuse(scope, send, 403, "insufficient_scope", f"Required scope: {' '.join(missing)}")
            return
        scope["user"] = AuthenticatedUser(token)
        scope["auth"] = AuthCredentials(token.scopes)
        await self.app(scope, receive, send)

    async def _authenticate(self, presented: str) -> AccessToken | None:
        index = self.tokens.match(presented) if self.tokens else None
        if index is not None:
            return AccessToken(token=presented, client_id=f"static:{index}", scopes=list(self.required_scopes))
        if self.verifier is not None:
            return await self.verifier.verify_token(presented)
        return None

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
