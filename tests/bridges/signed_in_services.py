"""Services that want a token of the test authorization server (``tests.upstream.oauth_servers``):
a FastAPI service whose document declares an OAuth2 ``clientCredentials`` flow, and the
travel agent (``a2a_agent``) whose card declares an ``authorizationCode`` flow. Each checks
the bearer token with the authorization server's provider, and says whose it is."""

from typing import Annotated

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AuthorizationCodeOAuthFlow,
    OAuth2SecurityScheme,
    OAuthFlows,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from fastapi import Depends, FastAPI, HTTPException
from fastapi.openapi.models import OAuthFlowClientCredentials
from fastapi.openapi.models import OAuthFlows as OpenApiFlows
from fastapi.security import OAuth2, OpenIdConnect
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.bridges.a2a_agent import TravelExecutor, agent_card
from tests.upstream.oauth_servers import SCOPE, LoginProvider


def build_reports_app(provider: LoginProvider, *, oidc: bool = False) -> FastAPI:
    """``oidc``: the document declares an ``openIdConnect`` scheme (its discovery URL) instead
    of an ``oauth2`` one with a ``clientCredentials`` flow."""
    flows = OpenApiFlows(
        clientCredentials=OAuthFlowClientCredentials(tokenUrl=f"{provider.issuer}/token", scopes={SCOPE: "read"})
    )
    discovery = f"{provider.issuer}/.well-known/openid-configuration"
    oauth = (
        OpenIdConnect(openIdConnectUrl=discovery, scheme_name="people")
        if oidc
        else OAuth2(flows=flows, scheme_name="machine")
    )
    app = FastAPI(title="Reports", version="1.0.0")

    async def holder(authorization: Annotated[str, Depends(oauth)]) -> str:
        token = await provider.load_access_token(authorization.removeprefix("Bearer "))
        if token is None:
            raise HTTPException(status_code=401, detail="not a token of ours")
        return token.subject or token.client_id

    @app.get("/whoami", operation_id="whoami")
    def whoami(who: Annotated[str, Depends(holder)]) -> dict[str, str]:
        return {"who": who}

    return app


class ProviderCheck:
    """Refuses a request to the agent (not to its card) without a token the provider issued."""

    def __init__(self, app: ASGIApp, provider: LoginProvider, holders: list[str]) -> None:
        self.app = app
        self.provider = provider
        self.holders = holders

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/.well-known/"):
            header = dict(scope["headers"]).get(b"authorization", b"").decode()
            token = await self.provider.load_access_token(header.removeprefix("Bearer "))
            if token is None:
                await JSONResponse({"detail": "not a token of ours"}, status_code=401)(scope, receive, send)
                return
            self.holders.append(token.subject or token.client_id)
        await self.app(scope, receive, send)


def build_signed_in_agent(url: str, provider: LoginProvider, holders: list[str]) -> Starlette:
    """The travel agent, its card asking for an ``authorizationCode`` sign-in at ``provider``."""
    card = agent_card(url)
    flow = AuthorizationCodeOAuthFlow(
        authorization_url=f"{provider.issuer}/authorize", token_url=f"{provider.issuer}/token", scopes={SCOPE: "all"}
    )
    card.security_schemes["signIn"].CopyFrom(
        SecurityScheme(oauth2_security_scheme=OAuth2SecurityScheme(flows=OAuthFlows(authorization_code=flow)))
    )
    card.security_requirements.append(SecurityRequirement(schemes={"signIn": StringList(list=[SCOPE])}))
    handler = DefaultRequestHandler(agent_executor=TravelExecutor(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes, middleware=[Middleware(ProviderCheck, provider=provider, holders=holders)])
