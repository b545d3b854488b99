"""The client a call made through the admin REST API is made for, as the relay sees it.

A REST call has no MCP session behind it: it cannot be asked anything back, and it names no
client, but the audit and traces must show that it came through the admin API.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from mcp_aggregator.logs import current_request_id
from mcp_aggregator.relay import Caller, current_caller

REST_ORIGIN: Final = "admin-api"
"""What the audit and traces name as the client of calls made through the admin REST API."""


@contextmanager
def as_rest_client() -> Iterator[None]:
    """Calls made in this block come from the admin API (``REST_ORIGIN``); no client is named
    to policies (``client.name`` is null for them). They carry the HTTP request's id."""
    token = current_caller.set(Caller(origin=REST_ORIGIN, http_request_id=current_request_id.get()))
    try:
        yield
    finally:
        current_caller.reset(token)
