"""An upstream whose tools ask back (sampling, elicitation, roots) and log, in both eras.

Speaking 2025-11-25 it sends real server→client requests during the call; speaking
2026-07-28 it answers ``InputRequiredResult`` and finishes when the client retries with
``inputResponses`` (SEP-2322), carrying a ``requestState`` across rounds.

    python -m tests.upstream.callbacks_server stdio
    python -m tests.upstream.callbacks_server http      (prints "PORT <n>" when listening)
"""

from __future__ import annotations

import argparse
import json
import socket
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

_OBJECT = {"type": "object"}
_TOOLS = [
    types.Tool(name="ask_llm", description="Ask the client's LLM (sampling).", input_schema=_OBJECT),
    types.Tool(name="ask_user", description="Ask the user for a name (form elicitation).", input_schema=_OBJECT),
    types.Tool(name="ask_url", description="Send the user to a URL (URL elicitation).", input_schema=_OBJECT),
    types.Tool(name="my_roots", description="List the client's roots.", input_schema=_OBJECT),
    types.Tool(name="two_rounds", description="Ask the user twice, keeping state.", input_schema=_OBJECT),
    types.Tool(name="chatty", description="Log three messages, then answer.", input_schema=_OBJECT),
    types.Tool(name="plain", description="Answer without asking anything.", input_schema=_OBJECT),
    types.Tool(name="bump", description="Change cb://counter and tell its subscribers.", input_schema=_OBJECT),
]


def _sampling() -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(text="What is 2+2?"))
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=20))


def _form(message: str) -> types.ElicitRequest:
    schema: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def _url() -> types.ElicitRequest:
    params = types.ElicitRequestURLParams(message="Sign in", url="https://example.com/login", elicitation_id="login-1")
    return types.ElicitRequest(params=params)


_ASKS = {
    "ask_llm": _sampling,
    "ask_user": lambda: _form("Your name?"),
    "ask_url": _url,
    "my_roots": types.ListRootsRequest,
}


def _text(value: object) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=str(value))])


def _describe(answer: Any) -> str:
    if isinstance(answer, types.CreateMessageResult):
        return f"llm said: {answer.content.text}"  # type: ignore[union-attr]
    if isinstance(answer, types.ElicitResult):
        return f"user {answer.action}: {json.dumps(answer.content, sort_keys=True)}"
    if isinstance(answer, types.ListRootsResult):
        return "roots: " + ", ".join(str(r.uri) for r in answer.roots)
    return f"unexpected: {answer!r}"


async def _legacy(ctx: ServerRequestContext[Any], name: str) -> types.CallToolResult:
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    result_types: dict[str, type[Any]] = {
        "sampling/createMessage": types.CreateMessageResult,
        "elicitation/create": types.ElicitResult,
        "roots/list": types.ListRootsResult,
    }

    async def ask(request: Any) -> Any:
        return await ctx.session.send_request(request, result_types[request.method], metadata=related)

    if name in _ASKS:
        return _text(_describe(await ask(_ASKS[name]())))
    if name == "two_rounds":
        first = await ask(_form("First name?"))
        second = await ask(_form("Last name?"))
        return _text(f"{first.content['name']} {second.content['name']}")
    if name == "chatty":
        for i in range(3):
            params = types.LoggingMessageNotificationParams(level="info", data=f"line {i}", logger="chatty")
            await ctx.session.send_notification(
                types.LoggingMessageNotification(params=params), related_request_id=ctx.request_id
            )
        return _text("logged 3 lines")
    return _text("plain answer")


def _modern(params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
    name, answers = params.name, params.input_responses or {}
    if name in _ASKS:
        if "q" not in answers:
            return types.InputRequiredResult(input_requests={"q": _ASKS[name]()}, request_state=f"{name}:1")
        return _text(_describe(answers["q"]))
    if name == "two_rounds":
        if params.request_state is None:
            return types.InputRequiredResult(input_requests={"first": _form("First name?")}, request_state="round1")
        if params.request_state == "round1":
            first = answers["first"].content["name"]  # type: ignore[union-attr]
            return types.InputRequiredResult(
                input_requests={"last": _form("Last name?")}, request_state=f"round2:{first}"
            )
        first = params.request_state.removeprefix("round2:")
        return _text(f"{first} {answers['last'].content['name']}")  # type: ignore[union-attr]
    if name == "chatty":
        return _text("logged 3 lines")
    return _text("plain answer")


def build_server() -> Server[Any]:
    counter = [0]
    subscribed: set[str] = set()

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name == "bump":
            counter[0] += 1
            if "cb://counter" in subscribed:
                await ctx.session.send_resource_updated("cb://counter")
            return _text(f"counter {counter[0]}, subscribers: {sorted(subscribed)}")
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if params.name == "chatty":
                await _legacy(ctx, "chatty")  # request-scoped logs, delivered when the request opted in
            return _modern(params)
        return await _legacy(ctx, params.name)

    async def list_resources(ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="cb://counter", name="counter")])

    async def read_resource(ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams) -> Any:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=str(counter[0]))])

    async def subscribe(ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribed.discard(str(params.uri))
        return types.EmptyResult()

    return Server(
        "callbacks",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    args = parser.parse_args()
    server = build_server()
    if args.transport == "stdio":

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
        return
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
