"""``GET /``: the one-file admin web page (no build step, no external assets)."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

PAGE_HEADERS = {
    "Cache-Control": "no-store",
    # No framing (the approve button must not be clickjacked), no referrer, no outside content.
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def build_page_router() -> APIRouter:
    page = files("mcp_aggregator.admin").joinpath("static/index.html").read_text(encoding="utf-8")
    router = APIRouter(include_in_schema=False)

    @router.get("/", response_class=HTMLResponse)
    async def index() -> HTMLResponse:
        return HTMLResponse(page, headers=PAGE_HEADERS)

    return router
