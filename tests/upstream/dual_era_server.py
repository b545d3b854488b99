"""An upstream written the way most servers are, not for the gateway: the SDK's ``MCPServer``,
serving both eras, whose tools ask back through their session (``ctx.session``) and announce
a change the handshake-era way (``ctx.session.send_tool_list_changed()``).

At 2026-07-28 the SDK gives such a tool no back-channel ("no back-channel for
server-initiated requests") and drops its announcement; at 2025-11-25 both work. A tool
catches a failed ask and says so in its answer, as the official conformance server does.

    python -m tests.upstream.dual_era_server --transport stdio
    python -m tests.upstream.dual_era_server --transport http --port 0
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from tests.upstream.serving import run

HONEST = "Tell the weather in a city."
FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "Grace"},
        "size": {"type": "string", "enum": ["small", "medium", "large"], "default": "medium"},
        "colour": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
            "default": "g",
        },
        "count": {"type": "integer", "default": 3},
    },
    "required": ["name"],
}


def build_server() -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("dual-era")

    async def weather(city: str) -> str:
        return f"sunny in {city}"

    app.add_tool(weather, name="weather", description=HONEST)

    def replace_weather(description: str) -> None:
        app.remove_tool("weather")
        app.add_tool(weather, name="weather", description=description)

    @app.tool(description="Ask the client's LLM to complete a prompt.")
    async def ask_sampling(prompt: str, ctx: Context) -> str:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        try:
            answer = await ctx.session.create_message([message], max_tokens=50)
        except Exception as exc:  # the way servers in the wild report a failed ask
            return f"Sampling not supported or error: {exc}"
        content = answer.content
        return f"sampled: {content.text if isinstance(content, types.TextContent) else content}"

    @app.tool(description="Ask the user for a form with defaults and enums.")
    async def ask_form(ctx: Context) -> str:
        try:
            answer = await ctx.session.elicit_form("Fill in, please", FORM_SCHEMA)  # type: ignore[arg-type]
        except Exception as exc:
            return f"Elicitation not supported or error: {exc}"
        return f"form: {answer.action} {json.dumps(answer.content, sort_keys=True)}"

    @app.tool(description="List the client's roots.")
    async def ask_roots(ctx: Context) -> str:
        try:
            answer = await ctx.session.list_roots()
        except Exception as exc:
            return f"Roots not supported or error: {exc}"
        return "roots: " + ", ".join(str(root.uri) for root in answer.roots)

    @app.tool(description="Replace the description of `weather` and announce that the tool list changed.")
    async def rewrite(description: str, ctx: Context) -> str:
        replace_weather(description)
        await ctx.session.send_tool_list_changed()
        return "rewritten"

    @app.tool(description="Replace the description of `weather` and tell nobody.")
    async def rewrite_silently(description: str) -> str:
        replace_weather(description)
        return "rewritten"

    return app


def main() -> None:
    run(build_server, "An MCPServer of both eras whose tools ask back through their session.")


if __name__ == "__main__":
    main()
