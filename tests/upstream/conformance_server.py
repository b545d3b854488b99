"""An upstream implementing every server scenario of the official conformance suite (0.1.16).

It follows the scenario descriptions of ``@modelcontextprotocol/conformance`` to the letter
(fixture names, texts, schemas), so the suite run against it directly is the reference a
gateway in front of it is measured against. Built on the SDK's low-level ``Server`` so the
wire form (schemas, content blocks, errors) is exactly what the scenarios ask for.

Both protocol eras are served: a tool that needs the client (sampling, elicitation) sends a
``sampling/createMessage`` / ``elicitation/create`` request on a 2025-11-25 connection, and
answers ``InputRequiredResult`` on a 2026-07-28 one (SEP-2322), as a full-featured server would.

    python -m tests.upstream.conformance_server --transport stdio
    python -m tests.upstream.conformance_server --transport http --port 0
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.upstream import conformance_content as content
from tests.upstream.serving import run

# The scenarios ask for pauses between log and progress notifications ("after ~50ms"), so a
# client can be seen receiving them while the call is still running.
STEP_DELAY_SECS = 0.05
# test_reconnection keeps the call open this long after closing its stream, so the result is
# delivered on the client's reconnection (SEP-1699).
RECONNECT_GRACE_SECS = 0.2

LOG_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

Context = ServerRequestContext[Any, Any]
ToolResult = types.CallToolResult | types.InputRequiredResult
ToolHandler = Callable[[Context, types.CallToolRequestParams], Awaitable[ToolResult]]
AnswerT = TypeVar("AnswerT", types.CreateMessageResult, types.ElicitResult, types.ListRootsResult)


@dataclass(frozen=True)
class FixtureTool:
    definition: types.Tool
    handler: ToolHandler


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def _no_arguments() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _answer(params: types.CallToolRequestParams, key: str, kind: type[AnswerT]) -> AnswerT | None:
    """The client's answer to this tool's input request ``key`` on a 2026-07-28 retry, if any."""
    answer = (params.input_responses or {}).get(key)
    return None if answer is None else kind.model_validate(answer.model_dump(by_alias=True, mode="json"))


class ConformanceFixture:
    """The state behind the fixture: the log level, subscribed URIs, the watched resource's text."""

    def __init__(self) -> None:
        self.log_level: types.LoggingLevel = "debug"
        self.subscriptions: set[str] = set()
        self.watched_text = "Watched resource content"
        # 2026-07-28 clients hear of resource updates on subscriptions/listen streams instead.
        self.bus = InMemorySubscriptionBus()
        self.tools = {tool.definition.name: tool for tool in self._tools()}

    def build(self) -> Server[Any]:
        server: Server[Any] = Server(
            "conformance-fixture",
            version="1.0.0",
            instructions="Implements every server scenario of the MCP conformance suite.",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=content.list_resources,
            on_list_resource_templates=content.list_resource_templates,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_list_prompts=content.list_prompts,
            on_get_prompt=content.get_prompt,
            on_completion=content.complete,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        # Registered after construction: the constructor's on_set_logging_level warns that the
        # feature is deprecated in 2026-07-28, and the 2025-11-25 scenarios need it.
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.set_level)
        return server

    # -- requests --------------------------------------------------------------------------

    async def list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.definition for tool in self.tools.values()])

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
        tool = self.tools.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return await tool.handler(ctx, params)

    async def read_resource(self, ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if params.uri == content.WATCHED_URI:
            text = types.TextResourceContents(uri=params.uri, mime_type="text/plain", text=self.watched_text)
            return types.ReadResourceResult(contents=[text])
        return content.read_resource(params.uri)

    async def subscribe(self, ctx: Context, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.subscriptions.add(params.uri)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Context, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscriptions.discard(params.uri)
        return types.EmptyResult()

    async def set_level(self, ctx: Context, params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.log_level = params.level
        return types.EmptyResult()

    async def _log(self, ctx: Context, level: types.LoggingLevel, message: str) -> None:
        # 2025-11-25 filters by logging/setLevel; 2026-07-28 by the request's own _meta opt-in,
        # which the SDK's send_log_message applies.
        if not _modern(ctx) and LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        await ctx.session.send_log_message(
            level, message, logger="conformance-fixture", related_request_id=ctx.request_id
        )

    # -- tools -----------------------------------------------------------------------------

    def _tools(self) -> list[FixtureTool]:
        def tool(
            name: str, description: str, handler: ToolHandler, schema: dict[str, Any] | None = None
        ) -> FixtureTool:
            definition = types.Tool(name=name, description=description, input_schema=schema or _no_arguments())
            return FixtureTool(definition, handler)

        _args = content.string_args
        _schema_2020_12 = content.JSON_SCHEMA_2020_12
        return [
            tool("test_simple_text", "Returns simple text content.", self.simple_text),
            tool("test_image_content", "Returns a 1x1 PNG image.", self.image_content),
            tool("test_audio_content", "Returns a minimal WAV clip.", self.audio_content),
            tool("test_embedded_resource", "Returns an embedded text resource.", self.embedded_resource),
            tool("test_multiple_content_types", "Returns text, image and resource content.", self.mixed_content),
            tool("test_tool_with_logging", "Sends three info log messages while running.", self.with_logging),
            tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.", self.with_progress),
            tool("test_error_handling", "Always fails with a tool error.", self.error_handling),
            tool("test_sampling", "Asks the client's LLM to answer a prompt.", self.sampling, _args("prompt")),
            tool("test_elicitation", "Asks the user for a username and email.", self.elicitation, _args("message")),
            tool("test_elicitation_sep1034_defaults", "Elicits fields with defaults (SEP-1034).", self.elicit_defaults),
            tool("test_elicitation_sep1330_enums", "Elicits the five enum forms (SEP-1330).", self.elicit_enums),
            tool("test_reconnection", "Closes its SSE stream mid-call, then answers (SEP-1699).", self.reconnection),
            tool(content.JSON_SCHEMA_TOOL, "Tool with JSON Schema 2020-12 features", self.json_schema, _schema_2020_12),
            tool(
                "update_watched_resource",
                "Changes the watched resource; notifies subscribers.",
                self.update_watched,
                _args("text"),
            ),
        ]

    async def simple_text(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return _text("This is a simple text response for testing.")

    async def image_content(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[content.image()])

    async def audio_content(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        audio = types.AudioContent(type="audio", data=content.WAV_BASE64, mime_type="audio/wav")
        return types.CallToolResult(content=[audio])

    async def embedded_resource(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
        return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=resource)])

    async def mixed_content(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        resource = types.TextResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
        )
        blocks: list[types.ContentBlock] = [
            types.TextContent(type="text", text="Multiple content types test:"),
            content.image(),
            types.EmbeddedResource(type="resource", resource=resource),
        ]
        return types.CallToolResult(content=blocks)

    async def with_logging(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        await self._log(ctx, "info", "Tool execution started")
        await anyio.sleep(STEP_DELAY_SECS)
        await self._log(ctx, "info", "Tool processing data")
        await anyio.sleep(STEP_DELAY_SECS)
        await self._log(ctx, "info", "Tool execution completed")
        return _text("Tool with logging executed successfully")

    async def with_progress(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        for step in (0, 50, 100):
            if step:
                await anyio.sleep(STEP_DELAY_SECS)
            await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
        return _text("Tool with progress executed successfully")

    async def error_handling(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return _text("This tool intentionally returns an error for testing", is_error=True)

    async def sampling(self, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
        prompt = str((params.arguments or {}).get("prompt", ""))
        request = types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
            max_tokens=100,
        )
        if _modern(ctx):
            answer = _answer(params, "sampling", types.CreateMessageResult)
            if answer is None:
                sample = types.CreateMessageRequest(params=request)
                return types.InputRequiredResult(input_requests={"sampling": sample})
        else:
            if not ctx.session.check_client_capability(types.ClientCapabilities(sampling=types.SamplingCapability())):
                return _text("The client does not support sampling", is_error=True)
            answer = await ctx.session.send_request(
                types.CreateMessageRequest(params=request),
                types.CreateMessageResult,
                metadata=content.related(ctx),
            )
        reply = answer.content.text if isinstance(answer.content, types.TextContent) else "(non-text content)"
        return _text(f"LLM response: {reply}")

    async def _elicit(
        self, ctx: Context, params: types.CallToolRequestParams, message: str, schema: dict[str, Any]
    ) -> types.ElicitResult | types.InputRequiredResult | types.CallToolResult:
        request = types.ElicitRequestFormParams(message=message, requested_schema=schema)
        if _modern(ctx):
            answer = _answer(params, "elicitation", types.ElicitResult)
            if answer is None:
                return types.InputRequiredResult(input_requests={"elicitation": types.ElicitRequest(params=request)})
            return answer
        if not ctx.session.check_client_capability(types.ClientCapabilities(elicitation=types.ElicitationCapability())):
            return _text("The client does not support elicitation", is_error=True)
        return await ctx.session.send_request(
            types.ElicitRequest(params=request), types.ElicitResult, metadata=content.related(ctx)
        )

    async def elicitation(self, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
        message = str((params.arguments or {}).get("message", ""))
        result = await self._elicit(ctx, params, message, content.USER_SCHEMA)
        if not isinstance(result, types.ElicitResult):
            return result
        return _text(f"User response: action={result.action}, content={json.dumps(result.content or {})}")

    async def elicit_defaults(self, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
        result = await self._elicit(ctx, params, "Please review and update the form fields", content.DEFAULTS_SCHEMA)
        if not isinstance(result, types.ElicitResult):
            return result
        return _text(f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}")

    async def elicit_enums(self, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
        result = await self._elicit(ctx, params, "Please select options", content.ENUMS_SCHEMA)
        if not isinstance(result, types.ElicitResult):
            return result
        return _text(f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}")

    async def reconnection(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        await self._log(ctx, "info", "Before disconnect")
        # Only streamable HTTP with an event store offers this; elsewhere the call just answers.
        if ctx.close_sse_stream is not None:
            await ctx.close_sse_stream()
            await anyio.sleep(RECONNECT_GRACE_SECS)
        await self._log(ctx, "info", "After reconnect")
        return _text("Reconnection test completed")

    async def json_schema(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return _text(f"Received: {json.dumps(params.arguments or {}, sort_keys=True)}")

    async def update_watched(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        self.watched_text = str((params.arguments or {}).get("text", ""))
        await self.bus.publish(ResourceUpdated(uri=content.WATCHED_URI))
        subscribed = content.WATCHED_URI in self.subscriptions
        if subscribed and not _modern(ctx):
            await ctx.session.send_resource_updated(content.WATCHED_URI)
        return _text(f"updated; resources/subscribe subscribers notified: {subscribed}")


def build_server() -> Server[Any]:
    return ConformanceFixture().build()


def main() -> None:
    run(build_server, "An MCP server implementing every conformance-suite server scenario.")


if __name__ == "__main__":
    main()
