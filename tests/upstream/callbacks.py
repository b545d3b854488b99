"""A client's side of server→client requests, recorded: what a test client answers to sampling,
elicitation (form and URL) and roots, and which requests it was asked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.client.session import ClientRequestContext

ROOTS = (types.Root(uri="file:///work/project", name="project"), types.Root(uri="file:///tmp/scratch"))


@dataclass
class RecordingCallbacks:
    """Answers every request the same way and keeps the params it was asked with."""

    name: str = "Ada"
    reply: str = "Hello from the client's LLM"
    sampled: list[types.CreateMessageRequestParams] = field(default_factory=list)
    elicited: list[types.ElicitRequestParams] = field(default_factory=list)
    roots_asked: int = 0

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.reply),
            model="test-model",
            stop_reason="endTurn",
        )

    async def elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": self.name})

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=list(ROOTS))

    def client_kwargs(self) -> dict[str, Any]:
        """The callback arguments of ``mcp.Client`` that declare all three capabilities."""
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
        }


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text
