"""An exposed server seen as a target of the aggregator query, called through the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_aggregator.relay.caller import NO_CALLER
from mcp_aggregator.relay.pipeline import CallPipeline


@dataclass(frozen=True)
class PipelineTarget:
    """``QueryTarget`` for one server; no client stands behind a fan-out call (``NO_CALLER``)."""

    pipeline: CallPipeline
    name: str
    tools: Sequence[types.Tool]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.pipeline.call_tool_result(name, arguments, server=self.name, caller=NO_CALLER)
