"""A real MCP server used as an upstream in the tests; runs in-process or as a subprocess.

python -m tests.upstream.fixture_server stdio
python -m tests.upstream.fixture_server http --port 0   (prints "PORT <n>" when listening)
python -m tests.upstream.fixture_server sse --port 0
"""

from __future__ import annotations

import argparse
import os
import socket
import uuid
from typing import Annotated, Any

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import Completion, CompletionArgument, PromptReference, ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field


class Sum(BaseModel):
    total: int


def build_server(name: str = "fixture") -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer(name, instructions="fixture upstream for tests")
    release = anyio.Event()

    @app.tool(description="Echo the text back.", annotations=ToolAnnotations(read_only_hint=True))
    async def echo(text: str) -> str:
        return text

    @app.tool(description="Add two integers.")
    async def add(a: int, b: int) -> Sum:
        return Sum(total=a + b)

    @app.tool(description="Answer `size` bytes of text (large results).")
    async def blob(size: int) -> str:
        return "x" * size

    @app.tool(description="The process id of this server.")
    async def pid() -> str:
        return str(os.getpid())

    # A sandboxed server lives in its own PID namespace, so two of them can share a pid;
    # this tells processes apart wherever they run.
    instance_id = uuid.uuid4().hex

    @app.tool(description="An id unique to this server process, even across PID namespaces.")
    async def instance() -> str:
        return instance_id

    @app.tool(description="A search tool; its name collides across servers on purpose.")
    async def search(query: str) -> str:
        return f"{name} results for {query}"

    @app.tool(description="Fail with a tool error (isError result).")
    async def fail(message: str = "boom") -> str:
        raise ValueError(message)

    @app.tool(description="Block until released or cancelled.")
    async def hang(ctx: Context) -> str:
        await release.wait()
        return "released"

    @app.tool(description="Report progress `steps` times, then answer.")
    async def progress(ctx: Context, steps: Annotated[int, Field(ge=1, le=100)] = 3) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"done after {steps} steps"

    @app.tool(name="api.v2.create", description="A tool whose name contains dots.")
    async def api_v2_create(title: str) -> str:
        return f"created {title}"

    @app.tool(description="Add a tool named `name` and announce that the tool list changed.")
    async def grow(name: str, ctx: Context) -> str:
        async def grown(text: str = "") -> str:
            return f"{name}: {text}"

        app.add_tool(grown, name=name, description=f"A tool added at run time: {name}")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @app.tool(description="Exit the process at once (simulates a crash).")
    async def crash() -> str:
        os._exit(3)

    @app.resource("fixture://greeting", description="A static greeting.")
    def greeting() -> str:
        return f"hello from {name}"

    @app.resource("fixture://items/{item}", description="One item, by name.")
    def item(item: str) -> str:
        return f"{name} item {item}"

    @app.prompt(description="Ask about a topic.")
    def ask(topic: str) -> str:
        return f"Tell me about {topic}"

    @app.completion()
    async def complete(ref: Any, argument: CompletionArgument, context: Any) -> Completion:
        # Prompt "ask" completes topics, the items template completes item names.
        pool = ["mcp", "music", "maths"] if isinstance(ref, PromptReference) else ["apple", "apricot", "banana"]
        return Completion(values=[v for v in pool if v.startswith(argument.value)])

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--name", default="fixture")
    args = parser.parse_args()
    app = build_server(args.name)
    if args.transport == "stdio":
        app.run("stdio")
        return
    # Listen before announcing the port, so a client that reads it can connect at once.
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only when the socket says TCP.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    asgi = app.streamable_http_app() if args.transport == "http" else app.sse_app()
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
