"""A 2026-07-28 upstream whose tools decide by the capabilities each request declares, as
the SDK's conformance everything-server does: ``needs_sampling`` refuses with -32021 a
client that did not declare sampling; ``ask_what_you_can`` asks only what the client can answer.

    python -m tests.upstream.capability_gated_server --transport stdio
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY

from tests.upstream.serving import run


def build_server() -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("capability-gated")

    @app.tool()
    async def needs_sampling(ctx: Context) -> str:
        """Runs only for a client that declared sampling."""
        caps = ctx.session.client_capabilities
        if caps is None or caps.sampling is None:
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="This tool requires the client 'sampling' capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "sampling declared"

    @app.tool()
    async def ask_what_you_can(ctx: Context) -> str | types.InputRequiredResult:
        """Asks the client for its name, by elicitation only where it declared it."""
        if ctx.input_responses:
            return f"answered: {sorted(ctx.input_responses)}"
        caps = ctx.client_capabilities
        requests: dict[str, types.InputRequest] = {}
        if caps is not None and caps.elicitation is not None:
            schema = {"type": "object", "properties": {"name": {"type": "string"}}}
            requests["ask"] = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message="Your name?", requested_schema=schema)
            )
        if not requests:
            return "nothing to ask"
        return types.InputRequiredResult(input_requests=requests, request_state="asked")

    return app


if __name__ == "__main__":
    run(build_server, __doc__ or "")
