"""A 2025-11-25 (handshake-era only) upstream whose tools call back into the client during a call.

Its tools send ``sampling/createMessage``, ``elicitation/create`` (form and URL modes) and
``roots/list`` requests on the stream of the call that caused them, and log messages
(``notifications/message``) and progress while running: what servers of that era do, and what
a gateway must relay to the client that made the call. A failed callback (the client lacks the
capability, or answered an error) comes back as a tool error naming the JSON-RPC error.

It refuses the 2026-07-28 era, like the real servers of its time: over stdio it serves the
handshake loop only, over HTTP it answers ``server/discover`` and enveloped requests with
-32601, so an ``auto`` client falls back to ``initialize``.

    python -m tests.upstream.legacy_callbacks_server --transport stdio
    python -m tests.upstream.legacy_callbacks_server --transport http --port 0
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.upstream.serving import run

Context = ServerRequestContext[Any, Any]
ToolHandler = Callable[[Context, dict[str, Any]], Awaitable[str]]

QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}
CONFIRM_URL_ID = "legacy-confirm"


def _schema(**properties: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: {"type": kind} for name, kind in properties.items()}}


async def sample(ctx: Context, arguments: dict[str, Any]) -> str:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=str(arguments["prompt"])))
    result = await ctx.session.create_message([message], max_tokens=100, related_request_id=ctx.request_id)
    text = result.content.text if isinstance(result.content, types.TextContent) else f"({result.content.type})"
    return f"sampled: {text} (model {result.model})"


async def elicit_form(ctx: Context, arguments: dict[str, Any]) -> str:
    message = str(arguments.get("message", "What is your name?"))
    result = await ctx.session.elicit_form(message, QUESTION_SCHEMA, related_request_id=ctx.request_id)
    return f"form: action={result.action}, content={json.dumps(result.content or {}, sort_keys=True)}"


async def elicit_url(ctx: Context, arguments: dict[str, Any]) -> str:
    url = str(arguments.get("url", "https://example.com/confirm"))
    result = await ctx.session.elicit_url("Please confirm", url, CONFIRM_URL_ID, related_request_id=ctx.request_id)
    return f"url: action={result.action}"


async def roots(ctx: Context, arguments: dict[str, Any]) -> str:
    result = await ctx.session.list_roots()
    return "roots: " + ", ".join(str(root.uri) for root in result.roots)


async def log_and_progress(ctx: Context, arguments: dict[str, Any]) -> str:
    steps = int(arguments.get("steps", 3))
    for step in range(1, steps + 1):
        await ctx.session.send_log_message("info", f"step {step} of {steps}", logger="legacy-callbacks",
                                           related_request_id=ctx.request_id)  # fmt: skip
        await ctx.session.report_progress(step, steps, f"step {step}")
    return f"done after {steps} steps"


async def elicit_then_sample(ctx: Context, arguments: dict[str, Any]) -> str:
    """Two client requests in one call, the second built from the first's answer."""
    form = await ctx.session.elicit_form("What is your name?", QUESTION_SCHEMA, related_request_id=ctx.request_id)
    name = (form.content or {}).get("name", "nobody")
    greeting = await sample(ctx, {"prompt": f"Greet {name}"})
    return f"name={name}; {greeting}"


TOOLS: dict[str, tuple[types.Tool, ToolHandler]] = {
    tool.name: (tool, handler)
    for tool, handler in [
        (types.Tool(name="legacy_sample", description="Ask the client's LLM (sampling/createMessage).",
                    input_schema={**_schema(prompt="string"), "required": ["prompt"]}), sample),
        (types.Tool(name="legacy_elicit_form", description="Ask the user's name (form elicitation).",
                    input_schema=_schema(message="string")), elicit_form),
        (types.Tool(name="legacy_elicit_url", description="Send the user to a URL (URL elicitation).",
                    input_schema=_schema(url="string")), elicit_url),
        (types.Tool(name="legacy_roots", description="List the client's roots (roots/list).",
                    input_schema=_schema()), roots),
        (types.Tool(name="legacy_log_and_progress", description="Log and report progress at every step.",
                    input_schema=_schema(steps="integer")), log_and_progress),
        (types.Tool(name="legacy_elicit_then_sample", description="Elicit a name, then sample a greeting for it.",
                    input_schema=_schema()), elicit_then_sample),
    ]
}  # fmt: skip


async def list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[tool for tool, _handler in TOOLS.values()])


async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in TOOLS:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    try:
        text = await TOOLS[params.name][1](ctx, params.arguments or {})
    except MCPError as exc:
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text=f"client request failed: {exc.error.code} {exc.error.message}")
            ],
            is_error=True,
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def refuse_modern_era(ctx: Context, call_next: CallNext) -> HandlerResult:
    """A 2026-07-28 request gets -32601, so an ``auto`` client falls back to the handshake."""
    modern = ctx.method != "initialize" and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    if ctx.method == "server/discover" or modern:
        raise MCPError(code=types.METHOD_NOT_FOUND, message=f"Method not found: {ctx.method}")
    return await call_next(ctx)


def build_server() -> Server[Any]:
    server: Server[Any] = Server(
        "legacy-callbacks-fixture",
        version="1.0.0",
        instructions="Calls back into the client (sampling, elicitation, roots) during tool calls.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware.append(refuse_modern_era)
    return server


def main() -> None:
    run(build_server, "A 2025-11-25 MCP server whose tools call back into the client.", legacy_only=True)


if __name__ == "__main__":
    main()
