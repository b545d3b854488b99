"""The client a call made through the admin REST API is made for, as the relay sees it.

A REST call has no MCP session behind it: it cannot be asked anything back, but the audit
(and policies) must see that it came through the admin API, holding the admin token.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller, current_caller

REST_CLIENT: Final = ClientIdentity(name="admin-api")
"""The identity of calls made through the admin REST API."""


@contextmanager
def as_rest_client() -> Iterator[None]:
    """Calls made in this block are the admin API's (``REST_CLIENT``)."""
    token = current_caller.set(Caller(identity=REST_CLIENT))
    try:
        yield
    finally:
        current_caller.reset(token)
