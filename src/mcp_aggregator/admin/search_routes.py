"""Tool search and skills: ``/api/v1/aggregator/tools/search``, ``/skills``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.schemas import SearchHitPublic, SkillPublic, ToolPublic
from mcp_aggregator.admin.server_views import tool_public

MAX_K = 100


router = APIRouter(prefix="/api/v1/aggregator", tags=["search"])


@router.get("/tools/search")
async def search_tools(
    gateway: GatewayDep,
    q: Annotated[str, Query(min_length=1, max_length=1000)],
    k: Annotated[int, Query(ge=1, le=MAX_K)] = 10,
    server: str | None = None,
    skill: str | None = None,
) -> list[SearchHitPublic]:
    """Semantic + lexical search over the tools of CONNECTED and DEGRADED servers."""
    hits = await gateway.search_tools(q, k, server=server, skill=skill)
    return [
        SearchHitPublic(
            name=hit.key,
            server=hit.server,
            original_name=hit.name,
            description=hit.description,
            score=hit.score,
            skill_ids=list(hit.skill_ids),
        )
        for hit in hits
    ]


@router.get("/skills")
async def list_skills(gateway: GatewayDep) -> list[SkillPublic]:
    return [SkillPublic(id=s.id, name=s.name, description=s.description) for s in gateway.skills()]


@router.get("/skills/{skill_id}/tools", responses={404: {"description": "Skill not found"}})
async def list_skill_tools(gateway: GatewayDep, skill_id: str) -> list[ToolPublic]:
    """The registered tools classified into the skill (BR-004), connected or not."""
    if all(s.id != skill_id for s in gateway.skills()):
        raise HTTPException(status_code=404, detail=f"Skill not found: {skill_id}")
    tools = await gateway.registry.list_tools()
    return [tool_public(tool) for tool in tools if skill_id in tool.skill_ids]
