"""``build_admin_app``: the admin REST API, the web page and the metrics, as one ASGI app."""

from __future__ import annotations

from fastapi import FastAPI

from mcp_aggregator.admin import (
    approval_routes,
    audit_routes,
    identity_routes,
    live_routes,
    metrics,
    oauth_routes,
    query_routes,
    registry_routes,
    search_routes,
    servers_routes,
    settings_routes,
    state_routes,
    tool_call_routes,
)
from mcp_aggregator.admin.admin_gateway import AdminGateway
from mcp_aggregator.admin.auth import AdminTokenMiddleware
from mcp_aggregator.admin.error_mapping import install_error_handlers
from mcp_aggregator.admin.page_routes import build_page_router

API_VERSION = "1.0.0"


def build_admin_app(gateway: AdminGateway, *, token: str) -> FastAPI:
    """The admin app for ``gateway``; mount it next to ``/mcp``.

    Every request but the page itself needs ``Authorization: Bearer <token>`` (401
    otherwise): there is no open admin API. The caller picks the token (``serve.admin_token``
    or the one kept in the data dir, see ``admin_token``) and decides whether binding is
    allowed at all (``check_bind_allowed``) before serving.
    """
    if len(token) < 16:
        raise ValueError("the admin token must be at least 16 characters")
    app = FastAPI(
        title="mcp-aggregator admin API",
        version=API_VERSION,
        description="Register and supervise upstream MCP servers, search their tools, run queries.",
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.gateway = gateway
    app.state.admin_token = token
    install_error_handlers(app)
    app.include_router(servers_routes.router)
    app.include_router(oauth_routes.api_router)
    app.include_router(oauth_routes.callback_router)
    app.include_router(state_routes.router)
    app.include_router(query_routes.router)
    app.include_router(search_routes.router)
    app.include_router(registry_routes.router)
    app.include_router(tool_call_routes.router)
    app.include_router(audit_routes.router)
    app.include_router(approval_routes.router)
    app.include_router(identity_routes.router)
    app.include_router(live_routes.router)
    app.include_router(settings_routes.router)
    app.include_router(metrics.router)
    app.include_router(build_page_router())
    app.add_middleware(AdminTokenMiddleware, token=token)
    return app
