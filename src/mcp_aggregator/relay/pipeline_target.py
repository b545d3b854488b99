"""An exposed server seen as a target of the aggregator query, called through the pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_aggregator.relay.caller import NO_CALLER, Caller, current_caller
from mcp_aggregator.relay.pipeline import CallPipeline


@dataclass(frozen=True)
class PipelineTarget:
    """``QueryTarget`` for one server. A fan-out call cannot ask its client anything back, but
    it is made for that client: it carries the client's identity and request id (for the
    profile's policies and the audit), nothing else."""

    pipeline: CallPipeline
    name: str
    tools: Sequence[types.Tool]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await self.pipeline.call_tool_result(name, arguments, server=self.name, caller=_identity_only())


def _identity_only() -> Caller:
    current = current_caller.get()
    if current is None:
        return NO_CALLER
    return Caller(identity=current.identity, request_id=current.request_id, session_id=current.session_id)
