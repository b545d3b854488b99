"""A scripted Anthropic Messages API served over real HTTP on 127.0.0.1.

Each ``POST /v1/messages`` is recorded and answered with the next scripted reply: a
message (``tool_use`` or ``text`` blocks), an HTTP error, or ``BLOCK`` — wait until the
test ends, so the client's own timeout is what ends the request.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from uvicorn.config import Config

BLOCK = "block"


@dataclass(frozen=True)
class HttpError:
    status: int
    message: str


Reply = dict[str, Any] | HttpError | str


def tool_use(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant message calling ``(tool name, input)`` pairs, in order."""
    blocks = [
        {"type": "tool_use", "id": f"toolu_{i}_{name}", "name": name, "input": arguments}
        for i, (name, arguments) in enumerate(calls)
    ]
    return _message(blocks, "tool_use")


def text(words: str) -> dict[str, Any]:
    return _message([{"type": "text", "text": words}], "end_turn")


def _message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": "scripted",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


@dataclass
class ScriptedMessagesApi:
    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    blocked: anyio.Event = field(default_factory=anyio.Event)
    release: anyio.Event = field(default_factory=anyio.Event)

    async def messages(self, request: Request) -> JSONResponse:
        self.requests.append(await request.json())
        self.headers.append(dict(request.headers))
        reply = self.replies.pop(0) if self.replies else HttpError(500, "script exhausted")
        if reply == BLOCK:
            self.blocked.set()
            await self.release.wait()
            reply = HttpError(500, "released")
        if isinstance(reply, HttpError):
            body = {"type": "error", "error": {"type": "api_error", "message": reply.message}}
            return JSONResponse(body, status_code=reply.status)
        assert isinstance(reply, dict)
        return JSONResponse(reply)


@asynccontextmanager
async def serve_messages_api(api: ScriptedMessagesApi) -> AsyncIterator[str]:
    """Serve ``api``; yields its base URL. Ends uvicorn and releases blocked requests."""
    app = Starlette(routes=[Route("/v1/messages", api.messages, methods=["POST"])])
    server = uvicorn.Server(Config(app, log_level="warning", lifespan="off"))
    # A socket listening before uvicorn starts: clients queue on it, nothing to poll.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(server.serve, sockets=[sock]))
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            api.release.set()
            server.should_exit = True
    sock.close()
