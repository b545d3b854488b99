"""Server→client traffic from upstreams, delivered to the client whose call caused it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import mcp_types as types

from mcp_aggregator.relay.caller import NO_CALLER, Caller, current_caller
from mcp_aggregator.upstreams.connection import UpstreamConnection

logger = logging.getLogger(__name__)

ResourceUpdated = Callable[[str, str], Awaitable[None]]
"""``(server, uri)``: an upstream says a resource changed."""


def owning_caller(connection: UpstreamConnection, request: types.InputRequest | None = None) -> Caller | None:
    """The caller a request or notification of ``connection`` belongs to.

    Code running in the caller's own task knows it (``current_caller``). A request the
    upstream sends on its own carries no correlation on stdio, so it goes to a call in
    flight on that connection: the newest whose client can answer it. With one call in
    flight (the common case) that is exact.
    """
    caller = current_caller.get()
    if caller is not None:
        return caller
    callers = [tag for tag in connection.inflight_tags() if isinstance(tag, Caller)]
    if request is not None:
        able = [c for c in callers if c.refusal(request) is None]
        callers = able or callers
    return callers[-1] if callers else None


class CallerBackchannel:
    """The ``Backchannel`` every upstream connection of the gateway reports to."""

    def __init__(
        self, on_resource_updated: ResourceUpdated | None = None, *, own_roots: Sequence[types.Root] = ()
    ) -> None:
        self._on_resource_updated = on_resource_updated
        self._own_roots = list(own_roots)

    async def server_request(
        self, connection: UpstreamConnection, request: types.InputRequest
    ) -> types.InputResponse | types.ErrorData:
        caller = owning_caller(connection, request)
        if caller is None and isinstance(request, types.ListRootsRequest):
            # Asked outside any call (many servers ask right after connecting): the gateway
            # is the client then, and its roots are its own workspace roots.
            return types.ListRootsResult(roots=self._own_roots)
        caller = caller or NO_CALLER
        answer = await caller.answer(request)
        if isinstance(answer, types.ErrorData):
            logger.info("upstream %s: %s answered with error %s", connection.name, request.method, answer.message)
        return answer

    async def notification(self, connection: UpstreamConnection, notification: types.ServerNotification) -> None:
        if isinstance(notification, types.LoggingMessageNotification):
            caller = owning_caller(connection)
            if caller is not None and caller.log is not None:
                await caller.log(notification.params)
            else:
                logger.debug("upstream %s logged with no call in flight: %s", connection.name, notification.params)
        elif isinstance(notification, types.ResourceUpdatedNotification) and self._on_resource_updated is not None:
            await self._on_resource_updated(connection.name, str(notification.params.uri))
