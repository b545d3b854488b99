"""The HTTP face of the gateway: MCP at ``/mcp``, liveness at ``/healthz``, readiness at
``/readyz``, admin routes mounted.

Every request passes, in this order, before any handler runs:

1. ``HostOriginGuard`` — a foreign ``Host`` gets 421, a foreign ``Origin`` 403 (DNS rebinding,
   cross-site requests), on every route;
2. ``RateLimit`` (with ``serve.rate_limit``) — 429 past a client's budget on ``/mcp`` and ``/api/``;
3. ``BodyLimit`` — 413 past ``serve.max_body_bytes`` (``serve.mcp_max_body_bytes`` on ``/mcp``);
4. on ``/mcp`` and ``/mcp/<profile>`` only, ``McpClientAuth`` (with ``clients``,
   ``serve.mcp_tokens`` / ``serve.oauth``) — 401 for no or a bad token, 403 for a profile the
   client may not use;
   the admin routes carry their own token check (``AdminTokenMiddleware``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from mcp_aggregator.identity import DEFAULT_PROFILE
from mcp_aggregator.identity.clients import ClientBook
from mcp_aggregator.serve.body_limit import BodyLimit
from mcp_aggregator.serve.client_auth import MCP_PATH, McpClientAuth, protected_resource_endpoint
from mcp_aggregator.serve.fast_call import FastCalls
from mcp_aggregator.serve.fast_http_protocol import FastFront, fast_http_protocol
from mcp_aggregator.serve.fast_path import FastPath
from mcp_aggregator.serve.field_values import FieldValues
from mcp_aggregator.serve.handshake_http import HandshakeSessions, quiet_hangups
from mcp_aggregator.serve.host_guard import HostOriginGuard, HostPolicy
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.profile_gateway import profile_of
from mcp_aggregator.serve.request_ids import RequestIds
from mcp_aggregator.sessions import SealedSessionManager, SessionBook
from mcp_aggregator.sessions.sdk_session_manager import SdkSessionManager
from mcp_aggregator.settings.serve_settings import ServeSettings

WELL_KNOWN_RESOURCE = "/.well-known/oauth-protected-resource"

# Our HostOriginGuard covers /mcp as it covers every other route, whatever the bind
# address; the SDK's own check (loopback binds only, /mcp only) would be a second, weaker copy.
_SDK_REBINDING_CHECK_OFF = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def host_policy(serve: ServeSettings, *, host: str | None = None) -> HostPolicy:
    return HostPolicy(host if host is not None else serve.host, serve.allowed_hosts, serve.allowed_origins)


def security_middleware(serve: ServeSettings, *, host: str | None = None) -> list[Middleware]:
    """Request ids, header values without optional whitespace, the guard, rate limit and body
    limit, outermost first, as ``serve`` configures them."""
    policy = host_policy(serve, host=host)

    def limit_for(path: str) -> tuple[int, str]:
        if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            return serve.mcp_max_body_bytes, "serve.mcp_max_body_bytes"
        return serve.max_body_bytes, "serve.max_body_bytes"

    middleware = [Middleware(RequestIds), Middleware(FieldValues), Middleware(HostOriginGuard, policy=policy)]
    if serve.rate_limit is not None:
        # Imported when configured, like the JWT verifier below: `limits` (with wrapt) and
        # PyJWT cost every start ~3 MB that only these settings use.
        from mcp_aggregator.serve.rate_limit import RateLimit

        middleware.append(Middleware(RateLimit, settings=serve.rate_limit))
    middleware.append(Middleware(BodyLimit, limit_for=limit_for))
    return middleware


def build_http_app(
    gateway_server: GatewayServer,
    *,
    host: str | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    json_response: bool = False,
    stateless: bool = False,
    profiles: Mapping[str, GatewayServer] | None = None,
    clients: ClientBook | None = None,
    sessions: SessionBook | None = None,
    home: str | None = None,
) -> Starlette:
    """A Starlette app whose lifespan runs the MCP session managers: ``gateway_server`` at
    ``/mcp``, each of ``profiles`` at ``/mcp/<name>``.

    Security settings come from the gateway's ``serve`` section; ``host`` is the address
    actually bound (defaults to ``serve.host``) and is accepted as a ``Host`` name.
    ``clients``: who may use which endpoint (default: the settings' ``clients`` and
    ``serve.mcp_tokens``, ``${VAR}`` taken from this process's environment).
    ``sessions``: seal handshake-era session ids with it, so that another replica (or this
    one after a restart) resumes them (default: the SDK's random ids, held in memory).
    ``home``: the base URL other replicas reach this one at (sealed into its ``requestState``,
    so a retry balanced elsewhere is sent on here).
    """
    settings = gateway_server.gateway.settings
    serve = settings.serve
    if clients is None:
        clients = ClientBook(settings.clients, serve.mcp_tokens, env=os.environ)
    endpoints = {DEFAULT_PROFILE: gateway_server, **(profiles or {})}
    verifier = None
    if serve.oauth is not None:
        from mcp_aggregator.serve.jwt_verifier import JwtVerifier  # PyJWT: see security_middleware

        verifier = JwtVerifier(serve.oauth)
    managers = []
    routes: list[BaseRoute] = []
    fast_by_path: dict[str, FastCalls] = {}
    for name, server in endpoints.items():
        path = MCP_PATH if name == DEFAULT_PROFILE else f"{MCP_PATH}/{name}"
        options: dict[str, Any] = {
            "app": server.server,
            "json_response": json_response,
            "stateless": stateless,
            "security_settings": _SDK_REBINDING_CHECK_OFF,
            "session_idle_timeout": serve.session_idle_secs,
        }
        manager: SdkSessionManager
        if sessions is not None:
            server.parked.seal = sessions.request_states(serve.input_wait_secs, home=home)
        if sessions is not None and not stateless:
            server.sessions = sessions
            manager = SealedSessionManager(**options, book=sessions, host=server, profile=name)
        else:
            manager = SdkSessionManager(**options)
        managers.append(manager)
        view = server.gateway
        fast = FastCalls(view, server.server.server_info_stamp, profile_of(view))
        fast_by_path[path] = fast
        # The handshake-era fast path answers as an event-stream server may; a JSON-only or
        # stateless server has no sessions of that kind to serve, or answers them otherwise.
        handshakes = None if json_response or stateless else HandshakeSessions(manager, server, fast)
        # Clients authenticate (and are held to their profiles) before anything reads their
        # request, the fast path included.
        endpoint = McpClientAuth(
            FastPath(StreamableHTTPASGIApp(manager), fast, handshakes),
            book=clients,
            verifier=verifier,
            required_scopes=serve.oauth.required_scopes if serve.oauth is not None else (),
            profile=name,
        )
        routes.append(Route(path, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))

    async def healthz(_request: Request) -> JSONResponse:
        # 200 while starting too: the process is alive and answers; the body says how far it is.
        return JSONResponse(gateway_server.gateway.health())

    async def readyz(_request: Request) -> JSONResponse:
        # 503 until every server's first connection attempt resolved: a balancer that checks
        # readiness sends clients only to a gateway whose catalogue is as whole as it gets.
        health = gateway_server.gateway.health()
        return JSONResponse(health, status_code=200 if health["status"] == "ok" else 503)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        with quiet_hangups():
            async with AsyncExitStack() as stack:
                for manager in managers:
                    await stack.enter_async_context(manager.run())
                for fast in fast_by_path.values():
                    await stack.enter_async_context(fast.serving())
                yield

    routes.append(Route("/healthz", endpoint=healthz, methods=["GET"]))
    routes.append(Route("/readyz", endpoint=readyz, methods=["GET"]))
    oauth = serve.oauth
    if oauth is not None:
        metadata = protected_resource_endpoint(oauth.issuer, oauth.required_scopes)
        routes += [
            Route(WELL_KNOWN_RESOURCE, endpoint=metadata, methods=["GET"]),
            Route(WELL_KNOWN_RESOURCE + MCP_PATH, endpoint=metadata, methods=["GET"]),
        ]
    routes += extra_routes
    app = Starlette(routes=routes, lifespan=lifespan, middleware=security_middleware(serve, host=host))
    app.state.fast_front = FastFront(fast_by_path, serve, host_policy(serve, host=host), clients=clients.has_tokens)
    return app


def uvicorn_config(app: Starlette, **options: Any) -> uvicorn.Config:
    """uvicorn's settings for ``app``: with the fast HTTP protocol when the app has one."""
    front = getattr(app.state, "fast_front", None)
    return uvicorn.Config(app, http=fast_http_protocol(front), **options)
