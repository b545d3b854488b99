"""An exposed server seen as a target of the aggregator query, called through the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_aggregator.relay.caller import NO_CALLER, Caller
from mcp_aggregator.relay.pipeline import CallPipeline


@dataclass(frozen=True)
class PipelineTarget:
    """``QueryTarget`` for one server; nobody can be asked back during a fan-out call."""

    pipeline: CallPipeline
    name: str
    tools: Sequence[types.Tool]
    caller: Caller = NO_CALLER
    """Who the query is for (its identity only: nobody can be asked back mid-fan-out)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.pipeline.call_tool_result(name, arguments, server=self.name, caller=self.caller)
