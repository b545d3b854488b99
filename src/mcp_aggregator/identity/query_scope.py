"""``QueryScope``: what the aggregator query may reach when a profile asks it."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

import mcp_types as types

from mcp_aggregator.relay import CallPipeline


class QueryScope(Protocol):
    """A profile's slice as the aggregator fan-out sees it."""

    @property
    def pipeline(self) -> CallPipeline:
        """The profile's pipeline (its overrides applied to the fan-out's calls)."""
        ...

    def servers(self) -> Collection[str]:
        """Servers a query may name (others are unknown there)."""
        ...

    def tools_of(self, server: str, tools: Sequence[types.Tool]) -> Sequence[types.Tool]:
        """The tools of ``server`` in the slice (none: the server is not asked)."""
        ...
