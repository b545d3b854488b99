"""Admin access: a bearer token on every request, and no open binding without client auth."""

from __future__ import annotations

import hmac
import ipaddress
import json
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_aggregator.admin.event_tickets import ticket_valid
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings.serve_settings import ServeSettings

PUBLIC_PATHS = frozenset({"/", "/oauth/callback"})
"""The web page itself carries no data, and a browser cannot attach a bearer header when it
navigates to it; the page then sends the token (from its sign-in link) on every API call.
An upstream's authorization server redirects the browser to ``/oauth/callback``: that
request is vouched for by its sealed ``state``, not by the admin token."""

EVENTS_PATH = "/api/v1/aggregator/events"
"""The event stream also opens with a short-lived ``?ticket=`` (see ``event_tickets``)."""

_UNAUTHORIZED = json.dumps({"detail": "Missing or invalid admin token"}).encode()


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP (127.0.0.0/8, ::1); an empty host means every interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind_allowed(serve: ServeSettings, *, named_clients: bool = False) -> None:
    """Refuse to serve ``/mcp`` beyond this machine to anyone who asks.

    The admin API always wants its token (made at first start when unset); ``/mcp`` is
    open only when none of ``serve.mcp_tokens``, ``serve.oauth`` and named ``clients`` with
    tokens (``named_clients``) is configured, which is
    allowed on a loopback address only.

    Raises:
        ConfigError: ``serve.host`` is not loopback and ``/mcp`` has no client authentication.
    """
    if is_loopback(serve.host) or serve.mcp_tokens or named_clients or serve.oauth is not None:
        return
    raise ConfigError(
        f"refusing to bind to {serve.host or '0.0.0.0'}: clients of /mcp must authenticate beyond "
        "loopback; set serve.mcp_tokens or serve.oauth"
    )


def token_matches(authorization: str | None, token: str) -> bool:
    """``Authorization: Bearer <token>``, compared in constant time."""
    if authorization is None:
        return False
    scheme, _, presented = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(presented.strip().encode(), token.encode())


def _route_path(scope: Scope) -> str:
    """The path inside this app: Starlette keeps the mount prefix in ``path`` and ``root_path``."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] or "/" if root and path.startswith(root) else path


class AdminTokenMiddleware:
    """Answers 401 to any HTTP request without the admin token (except ``PUBLIC_PATHS``).

    A middleware rather than a route dependency, so the OpenAPI document, unknown paths
    and ``/metrics`` are covered as well as the API routes.
    """

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = _route_path(scope)
        if path in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        raw = headers.get(b"authorization")
        if token_matches(raw.decode("latin-1") if raw is not None else None, self.token):
            await self.app(scope, receive, send)
            return
        if path == EVENTS_PATH and scope["method"] == "GET" and self._ticketed(scope):
            await self.app(scope, receive, send)
            return
        await _refuse(send)

    def _ticketed(self, scope: Scope) -> bool:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        tickets = query.get("ticket", [])
        return len(tickets) == 1 and ticket_valid(tickets[0], self.token)


async def _refuse(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(_UNAUTHORIZED)).encode()),
                (b"www-authenticate", b"Bearer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _UNAUTHORIZED})
