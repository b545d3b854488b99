"""``GET /``: the one-file admin web page (no build step, no external assets)."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import HTMLResponse


def build_page_router() -> APIRouter:
    page = files("mcp_aggregator.admin").joinpath("static/index.html").read_text(encoding="utf-8")
    router = APIRouter(include_in_schema=False)

    @router.get("/", response_class=HTMLResponse)
    async def index() -> HTMLResponse:
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    return router
