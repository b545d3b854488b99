"""Echo MCP server, the upstream for ``proxy_bench.py``: tools ``echo`` and ``blob``, a prompt
``echo`` (argument ``text``) and a resource ``echo://static``.

Usage::

    python bench/echo_server.py stdio
    python bench/echo_server.py http --port 8801 [--stateful] [--sse-responses]

Over HTTP it serves streamable HTTP at ``http://127.0.0.1:PORT/mcp`` with uvicorn.
By default it runs stateless with plain JSON responses, the cheapest mode the SDK
offers, so that the measured overhead is the proxy's and not the upstream's.
"""

from __future__ import annotations

import argparse
import logging

import anyio
import uvicorn
from mcp.server import MCPServer

app: MCPServer = MCPServer("echo", log_level="WARNING")


@app.tool()
def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


@app.tool()
def blob(size: int) -> str:
    """Return ``size`` bytes of text, for timing large results through a proxy (the SDK sends
    a str result twice, as text content and as structuredContent: ~2x ``size`` on the wire)."""
    return "x" * size


@app.prompt()
def echo_prompt(text: str) -> str:
    """A user message saying ``text``."""
    return text


@app.resource("echo://static", mime_type="text/plain")
def static() -> str:
    """A short fixed text."""
    return "static echo resource"


async def serve_http(port: int, *, stateless: bool, json_response: bool) -> None:
    """Serve streamable HTTP on 127.0.0.1:``port`` until cancelled."""
    starlette_app = app.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=stateless, json_response=json_response
    )
    config = uvicorn.Config(
        starlette_app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on"
    )
    await uvicorn.Server(config).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="transport", required=True)
    sub.add_parser("stdio", help="serve on stdin/stdout")
    http = sub.add_parser("http", help="serve streamable HTTP on 127.0.0.1")
    http.add_argument("--port", type=int, required=True)
    http.add_argument("--stateful", action="store_true", help="keep protocol sessions (default: stateless)")
    http.add_argument("--sse-responses", action="store_true", help="answer with SSE (default: JSON)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.transport == "stdio":
        anyio.run(app.run_stdio_async)
    else:
        anyio.run(lambda: serve_http(args.port, stateless=not args.stateful, json_response=not args.sse_responses))


if __name__ == "__main__":
    main()
