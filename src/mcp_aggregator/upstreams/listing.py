"""Listing what an upstream offers, every page of it, through the SDK's client.

Every list goes through the client's own verbs (``list_tools``, ``list_prompts``...), so the
client's response cache (SEP-2549, ``Connection`` turns it on) serves a first page the
upstream marked fresh (``ttlMs``) without asking again, and drops it at the upstream's
``list_changed``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import mcp_types as types
import orjson
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator.upstreams.wire_checks import describe_error

logger = logging.getLogger(__name__)

MAX_PAGES: Final = 1000


async def list_all_tools(client: Client) -> tuple[types.Tool, ...]:
    """Every page of ``tools/list``. Raises what the client raises."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return share_schemas(tools)


def share_schemas(tools: list[types.Tool]) -> tuple[types.Tool, ...]:
    """``tools``, with each input or output schema equal (as JSON, keys in the same order) to
    an earlier one's replaced by that one, the same dict.

    A server's tools often take the same arguments (a ``query`` and a ``limit``; or none), and
    each parsed a tree of dicts of its own: at 10,000 tools, tens of megabytes for a handful of
    distinct schemas. Schemas are never changed in place, so sharing one is safe. A schema
    that is not plain JSON is kept as it is.
    """
    seen: dict[bytes, dict[str, Any]] = {}
    for tool in tools:
        tool.input_schema = _shared(tool.input_schema, seen)
        if tool.output_schema is not None:
            tool.output_schema = _shared(tool.output_schema, seen)
    return tuple(tools)


def _shared(schema: dict[str, Any], seen: dict[bytes, dict[str, Any]]) -> dict[str, Any]:
    try:
        key = orjson.dumps(schema)
    except TypeError:  # orjson.JSONEncodeError: not plain JSON
        return schema
    return seen.setdefault(key, schema)


async def list_pages(name: str, fetch: Callable[[str | None], Awaitable[Any]], attr: str, out: list[Any]) -> None:
    """Every page of one list (prompts, resources, templates) into ``out``; ``fetch(cursor)``
    gets one page.

    A server may declare a capability and still not implement one list (templates): an
    upstream error is logged and what it did list stays usable.
    """
    cursor: str | None = None
    try:
        for _ in range(MAX_PAGES):
            page = await fetch(cursor)
            out.extend(getattr(page, attr))
            cursor = page.next_cursor
            if not cursor:
                break
    except MCPError as exc:
        logger.info("upstream %s: listing %s failed: %s", name, attr, describe_error(exc))


Features = tuple[tuple[types.Prompt, ...], tuple[types.Resource, ...], tuple[types.ResourceTemplate, ...]]


async def list_features(name: str, client: Client) -> Features:
    """Prompts, resources and templates, each paginated, concurrently (capabilities permitting)."""
    caps = client.server_capabilities
    prompts: list[types.Prompt] = []
    resources: list[types.Resource] = []
    templates: list[types.ResourceTemplate] = []
    async with anyio.create_task_group() as tg:
        if caps.prompts is not None:
            tg.start_soon(list_pages, name, lambda cursor: client.list_prompts(cursor=cursor), "prompts", prompts)
        if caps.resources is not None:
            tg.start_soon(list_pages, name, lambda cursor: client.list_resources(cursor=cursor), "resources", resources)
            tg.start_soon(
                list_pages,
                name,
                lambda cursor: client.list_resource_templates(cursor=cursor),
                "resource_templates",
                templates,
            )
    return tuple(prompts), tuple(resources), tuple(templates)
