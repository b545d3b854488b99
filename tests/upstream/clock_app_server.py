"""An MCP Apps server written the SDK's simplest way: one tool bound to ``ui://clock/app.html``.

Two of them behind one gateway share that UI address, as any two servers built from the
same example would. ``--name`` goes into the page and the tool's answer, so a test can tell
whose app it read; its answer links the app, as a result may.

    python -m tests.upstream.clock_app_server --name east
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.apps import APP_MIME_TYPE, Apps, client_supports_apps
from mcp.server.mcpserver import Context

APP_URI = "ui://clock/app.html"


def build_server(name: str) -> MCPServer[Any]:
    apps = Apps()

    @apps.tool(resource_uri=APP_URI, description="The time in this clock's city")
    def get_time(ctx: Context) -> types.CallToolResult:
        seen = "with its app" if client_supports_apps(ctx) else "as text"
        link = types.ResourceLink(name="clock", uri=APP_URI, mime_type=APP_MIME_TYPE)
        return types.CallToolResult(content=[types.TextContent(text=f"{name}: 12:00 ({seen})"), link])

    apps.add_html_resource(APP_URI, f"<html><body>{name} clock</body></html>")
    return MCPServer(f"clock-{name}", extensions=[apps])


def main() -> None:
    parser = argparse.ArgumentParser(description="An MCP Apps clock server over stdio")
    parser.add_argument("--name", required=True)
    server = build_server(parser.parse_args().name)
    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
