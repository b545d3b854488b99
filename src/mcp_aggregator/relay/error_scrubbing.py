"""A pipeline stage that hides the servers' secrets in upstream error texts before anyone sees them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_aggregator.errors import UpstreamCallError, UpstreamError
from mcp_aggregator.relay.pipeline import ErrorStage, Invocation, Next


class _Scrubber:
    """See ``scrub_errors``. Touches failures only, so a callback-answered raw call can
    apply it without a coroutine (``ErrorStage``)."""

    def __init__(self, scrub: Callable[[str], str]) -> None:
        self._scrub = scrub

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        try:
            return await send()
        except UpstreamError as exc:
            self.on_error(invocation, exc)
            raise

    def on_error(self, invocation: Invocation, exc: UpstreamError) -> None:
        scrub = self._scrub
        exc.args = tuple(scrub(a) if isinstance(a, str) else a for a in exc.args)
        if isinstance(exc, UpstreamCallError) and isinstance(exc.data, str):
            exc.data = scrub(exc.data)


def scrub_errors(scrub: Callable[[str], str]) -> ErrorStage:
    """A stage re-raising every ``UpstreamError`` with ``scrub`` applied to its text (and data).

    An upstream's error can quote its own credentials (a URL with a token, an expanded
    ``${VAR}``); the error then travels to MCP clients, admin answers and log lines.
    """
    return _Scrubber(scrub)
