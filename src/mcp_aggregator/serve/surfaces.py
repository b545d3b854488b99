"""Choosing what clients see, by the ``serve.exposure`` setting."""

from __future__ import annotations

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.tool_surface import CombinedSurface, PassthroughSurface, ToolSurface


def build_surface(gateway: Gateway) -> ToolSurface:
    return CombinedSurface([PassthroughSurface(gateway)])
