"""``BodyLimit``: no request body past a configured size reaches a handler (413 instead)."""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DRAIN_BYTES = 8 * 1024 * 1024
"""Past the limit, up to this much more is read and thrown away before answering: a client
still sending would otherwise see a reset connection instead of the 413 (nginx's
"lingering close"). Nothing read past the limit is kept."""


class BodyLimit:
    """Pure ASGI middleware: refuse bodies larger than ``limit_for(path)`` bytes with 413.

    A declared ``Content-Length`` past the limit is refused before anything is read; a
    chunked (or lying) body is read up to the limit and refused at the first byte past it
    (the rest, up to ``DRAIN_BYTES``, is discarded so the client can read the answer).
    Bodies within the limit are read here and replayed, so the handler never sees a
    truncated body. REST and JSON-RPC bodies are read whole by their handlers anyway, so
    buffering them costs no extra memory beyond the limit.
    """

    def __init__(self, app: ASGIApp, *, limit_for: Callable[[str], tuple[int, str]]) -> None:
        self.app = app
        self.limit_for = limit_for
        """``path -> (max bytes, setting name)``, the name shown in the refusal."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        limit, setting = self.limit_for(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _too_large(send, limit, setting)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                chunks = []
                replay: list[Message] = [message]
                break
            size += len(message.get("body", b""))
            if size > limit:
                await _drain(receive, message, DRAIN_BYTES)
                await _too_large(send, limit, setting)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
                break

        async def replaying() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replaying, send)


async def _drain(receive: Receive, message: Message, budget: int) -> None:
    while message.get("more_body", False) and budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))


async def _too_large(send: Send, limit: int, setting: str) -> None:
    body = json.dumps({"detail": f"request body larger than {limit} bytes ({setting})"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
