"""What a log line is about: the HTTP request, and the server and tool of a call.

Context variables, so that every line written while serving a request or a call carries
them without being passed along: the HTTP face sets the request id, a call sets its server
and tool (``call_context``). The client comes from the relay's current caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

current_request_id: ContextVar[str | None] = ContextVar("mcp_aggregator_request_id", default=None)
current_call: ContextVar[tuple[str | None, str] | None] = ContextVar("mcp_aggregator_call", default=None)
"""``(server, tool)`` of the call being made, if any (the server once it is known)."""


@contextmanager
def call_context(server: str | None, tool: str) -> Iterator[None]:
    """Lines logged inside the block name ``tool`` (as called) and ``server`` when given."""
    token = current_call.set((server, tool))
    try:
        yield
    finally:
        current_call.reset(token)
