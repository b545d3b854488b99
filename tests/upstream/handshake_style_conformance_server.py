"""The conformance fixture with its asking tools written the way most servers in the wild are:
sampling and elicitation always go through the session (``ctx.session``), whatever era the
client speaks, and a failed ask is reported in the tool's answer, as the official Python
SDK's conformance "everything" server does.

Directly, a 2025-11-25 client passes every scenario; a 2026-07-28 client cannot be asked
("no back-channel"). Behind the gateway the asks must reach the client either way.

    python -m tests.upstream.handshake_style_conformance_server --transport stdio
    python -m tests.upstream.handshake_style_conformance_server --transport http --port 0
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server

from tests.upstream import conformance_content as content
from tests.upstream.conformance_server import ConformanceFixture, Context, ToolResult
from tests.upstream.serving import run


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


class HandshakeStyleFixture(ConformanceFixture):
    """Asks through the session in every era."""

    async def sampling(self, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
        prompt = str((params.arguments or {}).get("prompt", ""))
        request = types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))],
            max_tokens=100,
        )
        try:
            answer = await ctx.session.send_request(
                types.CreateMessageRequest(params=request), types.CreateMessageResult, metadata=content.related(ctx)
            )
        except Exception as exc:  # the way servers in the wild report a failed ask
            return _text(f"Sampling not supported or error: {exc}")
        reply = answer.content.text if isinstance(answer.content, types.TextContent) else "(non-text content)"
        return _text(f"LLM response: {reply}")

    async def _elicit(
        self, ctx: Context, params: types.CallToolRequestParams, message: str, schema: dict[str, Any]
    ) -> types.ElicitResult | types.InputRequiredResult | types.CallToolResult:
        request = types.ElicitRequestFormParams(message=message, requested_schema=schema)
        try:
            return await ctx.session.send_request(
                types.ElicitRequest(params=request), types.ElicitResult, metadata=content.related(ctx)
            )
        except Exception as exc:
            return _text(f"Elicitation not supported or error: {exc}")


def build_server() -> Server[Any]:
    return HandshakeStyleFixture().build()


def main() -> None:
    run(build_server, "The conformance fixture, asking through its session in every era.")


if __name__ == "__main__":
    main()
