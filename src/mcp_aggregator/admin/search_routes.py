"""Tool search and skills: ``/api/v1/aggregator/tools/search``, ``/skills``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.api_headers import INCOMPLETE_HEADER, PENDING_HEADER
from mcp_aggregator.admin.schemas import SearchHitPublic, SkillPublic, ToolPublic
from mcp_aggregator.admin.server_views import tool_public
from mcp_aggregator.search.tool_doc import incomplete_note

MAX_K = 100
_INCOMPLETE_HEADERS = {
    INCOMPLETE_HEADER: {
        "description": "Set when some tools were ranked by their words alone (the search index was still "
        "computing their vectors) or some servers were still connecting: says so and asks to search again",
        "schema": {"type": "string"},
    },
    PENDING_HEADER: {
        "description": "How many tools were not indexed yet (with the header above)",
        "schema": {"type": "integer"},
    },
}


router = APIRouter(prefix="/api/v1/aggregator", tags=["search"])


@router.get("/tools/search", responses={200: {"headers": _INCOMPLETE_HEADERS}})
async def search_tools(
    gateway: GatewayDep,
    response: Response,
    q: Annotated[str, Query(min_length=1, max_length=1000)],
    k: Annotated[int, Query(ge=1, le=MAX_K)] = 10,
    server: str | None = None,
    skill: str | None = None,
) -> list[SearchHitPublic]:
    """Semantic + lexical search over the tools of CONNECTED and DEGRADED servers.

    The body stays a list; a ranking made while the index was incomplete says so in the
    ``X-Search-Incomplete`` and ``X-Search-Pending`` headers (the MCP ``tools`` facade says
    it in its answer's ``incomplete`` field)."""
    hits = await gateway.search_tools(q, k, server=server, skill=skill)
    if not hits.complete:
        response.headers[INCOMPLETE_HEADER] = incomplete_note(hits.pending, hits.connecting)
        response.headers[PENDING_HEADER] = str(hits.pending)
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
