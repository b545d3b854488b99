"""A pipeline stage that hides the servers' secrets in upstream error texts before anyone sees them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_aggregator.errors import UpstreamCallError, UpstreamError
from mcp_aggregator.relay.pipeline import Invocation, Next, Stage


def scrub_errors(scrub: Callable[[str], str]) -> Stage:
    """A stage re-raising every ``UpstreamError`` with ``scrub`` applied to its text (and data).

    An upstream's error can quote its own credentials (a URL with a token, an expanded
    ``${VAR}``); the error then travels to MCP clients, admin answers and log lines.
    """

    async def stage(invocation: Invocation, send: Next) -> Any:
        try:
            return await send()
        except UpstreamError as exc:
            exc.args = tuple(scrub(a) if isinstance(a, str) else a for a in exc.args)
            if isinstance(exc, UpstreamCallError) and isinstance(exc.data, str):
                exc.data = scrub(exc.data)
            raise

    return stage
