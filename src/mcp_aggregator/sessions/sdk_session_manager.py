"""``SdkSessionManager``: the one place that reaches into the SDK's private session handling.

``StreamableHTTPSessionManager`` has no public hook for choosing a session's id or for
serving a session it did not open, which sealed ids need (``SealedSessionManager``). So
this module overrides two of its private methods, ``_handle_stateful_request`` and
``_serve_opening_request``, and reads its private state (the open transports, their
owners, the creation lock, the task group, the lifespan state, ``_discard_session``),
and hands all of it on under names of its own. Nothing else in the gateway touches the
manager's privates.

``check_sdk`` compares what is used with the installed SDK (names, and each method's
parameters) and raises ``SdkChangedError`` naming what moved; it runs when a manager is
made, and a test runs it, so an SDK upgrade that changes them fails loudly instead of
serving sessions wrong.
"""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from mcp_aggregator.errors import AggregatorError

OVERRIDDEN: Final = {
    "_handle_stateful_request": ("self", "scope", "receive", "send"),
    "_serve_opening_request": ("self", "http_transport", "scope", "receive", "send"),
}
"""The private methods overridden, with the parameters this module's overrides take."""
CALLED: Final = {"_discard_session": ("self", "session_id", "transport")}
STATE: Final = (
    "_server_instances",
    "_session_owners",
    "_session_creation_lock",
    "_task_group",
    "_lifespan_state",
)
"""The private attributes read, set by the manager's ``__init__``."""


class SdkChangedError(AggregatorError):
    """The installed SDK's session manager no longer has what the gateway overrides or reads."""


@cache
def check_sdk(manager: type[StreamableHTTPSessionManager] = StreamableHTTPSessionManager) -> None:
    """Raises ``SdkChangedError`` naming each private method of ``manager`` (the SDK's) gone
    or whose parameters changed; the instance state is checked by ``SdkSessionManager``."""
    problems = []
    for name, expected in {**OVERRIDDEN, **CALLED}.items():
        method = getattr(manager, name, None)
        if method is None:
            problems.append(f"{name} is gone")
            continue
        found = tuple(inspect.signature(method).parameters)
        if found != expected:
            problems.append(f"{name} takes {found}, not {expected}")
    if problems:
        raise SdkChangedError(_changed(problems))


def _changed(problems: list[str]) -> str:
    return (
        "the mcp SDK's StreamableHTTPSessionManager changed what sealed sessions override"
        f" (mcp_aggregator/sessions/sdk_session_manager.py): {'; '.join(problems)}"
    )


class SdkSessionManager(StreamableHTTPSessionManager):
    """The SDK's manager with its private hooks and state under names of our own. Subclasses
    override ``handle_stateful`` and ``serve_opening`` (which default to the SDK's own)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        check_sdk()
        super().__init__(*args, **kwargs)
        missing = [name for name in STATE if not hasattr(self, name)]
        if missing:
            raise SdkChangedError(_changed([f"{name} is not set" for name in missing]))

    # The overrides: the SDK calls these; they call the subclass's hooks.

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handle_stateful(scope, receive, send)

    async def _serve_opening_request(
        self, http_transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send
    ) -> None:
        await self.serve_opening(http_transport, scope, receive, send)

    # The hooks, and the SDK's own behaviour behind them.

    async def handle_stateful(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sdk_handle_stateful(scope, receive, send)

    async def serve_opening(
        self, transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send
    ) -> None:
        await super()._serve_opening_request(transport, scope, receive, send)

    async def sdk_handle_stateful(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The SDK's handling of a request in stateful mode (its 404, 503, and serving a held session)."""
        await super()._handle_stateful_request(scope, receive, send)

    # The state.

    @property
    def transports(self) -> dict[str, StreamableHTTPServerTransport]:
        """The sessions this process holds, by id (the SDK's own dict: changes are its changes)."""
        transports: dict[str, StreamableHTTPServerTransport] = self._server_instances
        return transports

    @property
    def owners(self) -> dict[str, AuthorizationContext]:
        owners: dict[str, AuthorizationContext] = self._session_owners
        return owners

    @property
    def creation_lock(self) -> anyio.Lock:
        lock: anyio.Lock = self._session_creation_lock
        return lock

    @property
    def task_group(self) -> TaskGroup | None:
        group: TaskGroup | None = self._task_group
        return group

    @property
    def lifespan_state(self) -> Any:
        return self._lifespan_state

    async def discard(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        """Forget the session and terminate its transport (the SDK's ``_discard_session``)."""
        await self._discard_session(session_id, transport)
