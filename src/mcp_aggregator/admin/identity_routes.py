"""``GET /api/v1/aggregator/profiles`` and ``/clients``: what each profile selects, and which
profiles each named client may use (never a token or its digest)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.identity import DEFAULT_PROFILE
from mcp_aggregator.settings import Settings

MCP_ENDPOINT = "/mcp"


class ProfilePublic(BaseModel):
    name: str
    servers: list[str]
    tools: list[str]
    prompts: list[str]
    resources: list[str]
    exposure: str
    endpoint: str


class ClientPublic(BaseModel):
    name: str
    profiles: list[str]


def profiles_of(settings: Settings) -> list[ProfilePublic]:
    """Pure: ``default`` (every server: ``["*"]``) first, then the configured profiles."""
    serve = settings.serve
    out = [
        ProfilePublic(
            name=DEFAULT_PROFILE,
            servers=["*"],
            tools=[],
            prompts=[],
            resources=[],
            exposure=serve.exposure.value,
            endpoint=MCP_ENDPOINT,
        )
    ]
    for profile in settings.profiles:
        out.append(
            ProfilePublic(
                name=profile.name,
                servers=list(profile.servers),
                tools=list(profile.tools),
                prompts=list(profile.prompts),
                resources=list(profile.resources),
                exposure=(profile.exposure or serve.exposure).value,
                endpoint=f"{MCP_ENDPOINT}/{profile.name}",
            )
        )
    return out


router = APIRouter(prefix="/api/v1/aggregator", tags=["identity"])


@router.get("/profiles")
async def get_profiles(gateway: GatewayDep) -> list[ProfilePublic]:
    return profiles_of(gateway.settings)


@router.get("/clients")
async def get_clients(gateway: GatewayDep) -> list[ClientPublic]:
    """Named clients only; ``serve.mcp_tokens`` holders are unnamed clients of ``default``."""
    return [ClientPublic(name=client.name, profiles=list(client.profiles)) for client in gateway.settings.clients]
