"""FastMCP 4.1.2 proxy in front of one upstream, for ``proxy_bench.py``.

Runs only in ``bench/.venv-fastmcp`` (FastMCP patches ``mcp_types`` on import, so it
must never share a process with the gateway or the bench client)::

    python bench/fastmcp_proxy.py --port P --url http://127.0.0.1:U/mcp
    python bench/fastmcp_proxy.py --port P --stdio -- /path/to/python bench/echo_server.py stdio
    python bench/fastmcp_proxy.py --front stdio --url http://127.0.0.1:U/mcp

With ``--front http`` (the default) it serves streamable HTTP at ``http://127.0.0.1:P/mcp``
and readiness is ``GET /healthz`` -> 200; with ``--front stdio`` it serves its stdin/stdout.
The proxy is ``create_proxy(target, mode="auto")``, FastMCP's recommended entry point,
with its defaults otherwise (a fresh backend client per request; a kept-alive
subprocess for stdio).
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
from starlette.requests import Request
from starlette.responses import PlainTextResponse


def build_target(args: argparse.Namespace) -> Any:
    if args.url:
        return args.url
    command, *rest = args.command
    return StdioTransport(command=command, args=rest, keep_alive=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--front", choices=("http", "stdio"), default="http", help="how clients connect")
    parser.add_argument("--port", type=int, help="HTTP port (front http)")
    parser.add_argument("--url", help="streamable HTTP upstream")
    parser.add_argument("--stdio", action="store_true", help="stdio upstream: command follows '--'")
    parser.add_argument("--stateful", action="store_true", help="front: keep sessions (default: stateless)")
    parser.add_argument("--sse-responses", action="store_true", help="front: SSE answers (default: JSON)")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    if bool(args.url) == bool(args.stdio) or (args.stdio and not args.command):
        parser.error("give exactly one of --url URL or --stdio -- COMMAND ...")
    if args.front == "http" and args.port is None:
        parser.error("--front http needs --port")

    proxy = create_proxy(build_target(args), mode="auto", name="fastmcp-proxy")

    @proxy.custom_route("/healthz", methods=["GET"])
    async def healthz(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    if args.front == "stdio":
        anyio.run(lambda: proxy.run_stdio_async(show_banner=False, log_level="WARNING"))
        return
    anyio.run(
        lambda: proxy.run_http_async(
            show_banner=False,
            transport="http",
            host="127.0.0.1",
            port=args.port,
            path="/mcp",
            log_level="WARNING",
            json_response=not args.sse_responses,
            stateless_http=not args.stateful,
            uvicorn_config={"access_log": False},
        )
    )


if __name__ == "__main__":
    main()
