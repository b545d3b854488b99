"""The server lifecycle state machine of seed 003, as pure functions.

Legal transitions (and nothing else)::

    (new)        --REGISTER-------> DISCONNECTED
    DISCONNECTED --CONNECT--------> CONNECTING
    CONNECTING   --CONNECT_OK-----> CONNECTED
    CONNECTING   --CONNECT_FAILED-> ERROR
    CONNECTED    --DISCONNECT-----> DISCONNECTED
    CONNECTED    --HEALTH_DEGRADED> DEGRADED        (2 consecutive health failures)
    CONNECTED    --HEALTH_ERROR---> ERROR           (3+)
    DEGRADED     --HEALTH_OK------> CONNECTED
    DEGRADED     --HEALTH_ERROR---> ERROR           (3+ in total)
    ERROR        --RECONNECT------> CONNECTING

The seed's diagram also draws a ``DISCONNECTED --error--> ERROR`` arrow that its table
of valid transitions lacks; the table (and the issue) win, so that pair is illegal.

Disconnecting a DEGRADED or ERROR server is a documented refusal, not a hidden edge:

* ERROR has no live session (the connection failed or health checks gave up), so there is
  nothing to disconnect; the supervisor's reconnection gives up after its backoff
  attempts and the server stays in ERROR until an admin reconnects or deletes it.
* DEGRADED still has a live session, but the only legal way to DISCONNECTED runs through
  CONNECTED on a *health success*; faking that event would lie in the history. The admin
  waits for the next health result (which moves the server to CONNECTED or ERROR) or
  deletes the server, which is allowed in every state (BR-008) and is not a transition.

``transition`` therefore raises ``IllegalTransitionError`` for DISCONNECT in those
states; ``can_disconnect`` lets callers ask first. Idempotence of BR-002 ("already
connected -> success") is the caller's business: CONNECT in CONNECTED is illegal here.
"""

from __future__ import annotations

from enum import StrEnum

from mcp_aggregator.errors import IllegalTransitionError


class ServerStatus(StrEnum):
    DISCONNECTED = "DISCONNECTED"
    CONNECTING = "CONNECTING"
    CONNECTED = "CONNECTED"
    DEGRADED = "DEGRADED"
    ERROR = "ERROR"


class ServerEvent(StrEnum):
    REGISTER = "register"
    CONNECT = "connect"
    CONNECT_OK = "connect_ok"
    CONNECT_FAILED = "connect_failed"
    DISCONNECT = "disconnect"
    HEALTH_DEGRADED = "health_degraded"
    HEALTH_ERROR = "health_error"
    HEALTH_OK = "health_ok"
    RECONNECT = "reconnect"


TRANSITIONS: dict[tuple[ServerStatus | None, ServerEvent], ServerStatus] = {
    (None, ServerEvent.REGISTER): ServerStatus.DISCONNECTED,
    (ServerStatus.DISCONNECTED, ServerEvent.CONNECT): ServerStatus.CONNECTING,
    (ServerStatus.CONNECTING, ServerEvent.CONNECT_OK): ServerStatus.CONNECTED,
    (ServerStatus.CONNECTING, ServerEvent.CONNECT_FAILED): ServerStatus.ERROR,
    (ServerStatus.CONNECTED, ServerEvent.DISCONNECT): ServerStatus.DISCONNECTED,
    (ServerStatus.CONNECTED, ServerEvent.HEALTH_DEGRADED): ServerStatus.DEGRADED,
    (ServerStatus.CONNECTED, ServerEvent.HEALTH_ERROR): ServerStatus.ERROR,
    (ServerStatus.DEGRADED, ServerEvent.HEALTH_OK): ServerStatus.CONNECTED,
    (ServerStatus.DEGRADED, ServerEvent.HEALTH_ERROR): ServerStatus.ERROR,
    (ServerStatus.ERROR, ServerEvent.RECONNECT): ServerStatus.CONNECTING,
}
"""Every legal ``(state, event) -> new state``; ``None`` is the state before registration."""


def transition(state: ServerStatus | None, event: ServerEvent) -> ServerStatus:
    """Return the state that ``event`` leads to from ``state``.

    Raises:
        IllegalTransitionError: the pair is not in ``TRANSITIONS``; this is a bug in the
            caller (or a refused admin request, see the module docstring).
    """
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransitionError(state.value if state else "(unregistered)", event.value) from None


def can_discover(state: ServerStatus) -> bool:
    """Tool discovery runs only on CONNECTED servers."""
    return state is ServerStatus.CONNECTED


def can_execute(state: ServerStatus) -> bool:
    """Tool calls go to CONNECTED and DEGRADED servers (DEGRADED with a warning)."""
    return state in (ServerStatus.CONNECTED, ServerStatus.DEGRADED)


def is_exposed(state: ServerStatus) -> bool:
    """Search and tool exposure include CONNECTED and DEGRADED servers only."""
    return state in (ServerStatus.CONNECTED, ServerStatus.DEGRADED)


def can_disconnect(state: ServerStatus) -> bool:
    """Only CONNECTED servers can be disconnected (see the module docstring)."""
    return (state, ServerEvent.DISCONNECT) in TRANSITIONS
