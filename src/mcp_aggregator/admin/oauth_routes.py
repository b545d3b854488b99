"""Signing the gateway in to an OAuth upstream: start (admin API) and the browser's return.

``POST /api/v1/aggregator/servers/{id}/oauth/start`` → ``{"authorization_url": ...}``;
``GET /oauth/callback`` (public: vouched for by its sealed ``state``) exchanges the code,
connects the server and answers a small HTML page saying how that went.
"""

from __future__ import annotations

import html
import logging
from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from mcp_aggregator.admin.admin_gateway import AdminGateway, GatewayDep
from mcp_aggregator.admin.schemas import SignInStart
from mcp_aggregator.credentials import AuthStatus
from mcp_aggregator.credentials.credential_book import CALLBACK_PATH
from mcp_aggregator.errors import AggregatorError, StateError
from mcp_aggregator.health.server_state import ServerStatus, is_exposed

logger = logging.getLogger(__name__)

CONNECT_WAIT_SECS: Final = 15.0
_NO_STORE: Final = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}

api_router = APIRouter(prefix="/api/v1/aggregator/servers", tags=["servers"])
callback_router = APIRouter(tags=["sign-in"])


@api_router.post(
    "/{server_id}/oauth/start",
    responses={
        404: {"description": "Server not found"},
        409: {"description": "The server has no auth: oauth (or signs in by itself)"},
        503: {"description": "Discovery or registration at the authorization server failed"},
    },
)
async def start_sign_in(gateway: GatewayDep, server_id: str, request: Request) -> SignInStart:
    """Begin a browser sign-in; the URL is good for ``credentials.sign_in_ttl_secs``."""
    record = await gateway.registry.get_server(server_id)
    if await gateway.credentials.status(record.id) is AuthStatus.NOT_REQUIRED:
        raise StateError(f"Server {record.name} has no auth: oauth; there is nothing to sign in to")
    redirect = gateway.credentials.callback_url(str(request.base_url))
    return SignInStart(authorization_url=await gateway.credentials.start_sign_in(record.id, redirect))


@callback_router.get(CALLBACK_PATH, response_class=HTMLResponse, include_in_schema=False)
async def sign_in_callback(
    gateway: GatewayDep,
    state: str = "",
    code: str | None = None,
    error: str | None = None,
    error_description: str | None = None,
    iss: str | None = None,
) -> HTMLResponse:
    """Where the authorization server sends the browser back."""
    refused = f"{error}: {error_description}" if error and error_description else error
    try:
        creds = await gateway.credentials.finish_sign_in(state, code, error=refused, iss=iss)
    except AggregatorError as exc:
        logger.warning("sign-in callback refused: %s", exc)
        return _page("Sign-in failed", str(exc), status_code=400)
    if creds.subject:
        return _page(f"Signed in to {creds.name} as {creds.subject}", "Go back to your client and call again.")
    connected = await _connect(gateway, creds.server_id, creds.name)
    return _page(f"Signed in to {creds.name}", connected)


async def _connect(gateway: AdminGateway, server_id: str, name: str) -> str:
    """Connect the server now it is signed in; say where that stands after a short wait."""
    sup = gateway.supervisors.get(name)
    try:
        await gateway.connect_server(server_id)
        if sup is not None:
            await gateway.wait_until(lambda: is_exposed(sup.status), timeout_secs=CONNECT_WAIT_SECS)
    except (AggregatorError, TimeoutError):
        status = sup.status.value if sup is not None else ServerStatus.DISCONNECTED.value
        detail = f": {sup.error_message}" if sup is not None and sup.error_message else ""
        return f"The gateway holds the tokens; the server is not connected yet (status {status}{detail})."
    tools = len(sup.connection.tools) if sup is not None and sup.connection is not None else 0
    return f"The gateway connected {name} and serves its {tools} tools. You can close this tab."


def _page(title: str, message: str, *, status_code: int = 200) -> HTMLResponse:
    body = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body>"
        f"<h1>{html.escape(title)}</h1><p id='message'>{html.escape(message)}</p></body></html>"
    )
    return HTMLResponse(body, status_code=status_code, headers=_NO_STORE)
