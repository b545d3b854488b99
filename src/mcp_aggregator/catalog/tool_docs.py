"""Catalog entries as documents for the search index."""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types

from mcp_aggregator.catalog.naming import namespace
from mcp_aggregator.search import ToolDoc


def tool_docs(server: str, server_description: str | None, tools: Sequence[types.Tool]) -> list[ToolDoc]:
    return [
        ToolDoc(
            key=namespace(server, tool.name),
            server=server,
            name=tool.name,
            description=tool.description or tool.title or "",
            server_description=server_description or "",
            input_schema=dict(tool.input_schema or {}),
        )
        for tool in tools
    ]
