"""``ListingFilter``: ``tools/list`` without the tools a client could never call.

A policy rule that does not read ``arguments`` decides per client and tool alone; the
tools it denies a client are left out of that client's list (they would only fail), and of
what the ``tools`` facade lists and finds for it. Rules that read arguments may let some
calls through, so they hide nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types

from mcp_aggregator.catalog import CatalogEntry
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.identity.policy_stage import PolicyStage
from mcp_aggregator.serve.serve_gateway import ServeGateway


class ListingFilter:
    """Filters a surface's tools for one client by the gateway's policy stage (if any)."""

    def __init__(self, gateway: ServeGateway) -> None:
        self.gateway = gateway
        self.stage = next((s for s in gateway.pipeline.stages if isinstance(s, PolicyStage)), None)

    def hides(self, entry: CatalogEntry, identity: ClientIdentity) -> bool:
        """Whether ``identity`` could never call the catalogue's ``entry``."""
        return self.stage is not None and self.stage.never_allowed(identity, entry.server, entry.original_name)

    def visible(self, tools: Sequence[types.Tool], identity: ClientIdentity) -> list[types.Tool]:
        stage = self.stage
        if stage is None:
            return list(tools)
        catalog = self.gateway.catalog
        out = []
        for tool in tools:
            entry = catalog.get(tool.name)
            if entry is None or not stage.never_allowed(identity, entry.server, entry.original_name):
                out.append(tool)
        return out
