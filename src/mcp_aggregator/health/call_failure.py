"""What a failed call says about its upstream's transport (pure; the supervisor acts on it).

A call that came back, even as a JSON-RPC error or an ``isError`` result, shows the
transport works and counts like a passing health check. A call the transport failed (the
session closed, the connection reset, the call timed out) counts like a failed one. A
refused connection means nothing listens any more, and a handshake-era HTTP upstream that
answers "Session not found" (HTTP 404 for our session id: it restarted) no longer knows
the session: either way the session is lost at once.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from mcp_types import INVALID_REQUEST

from mcp_aggregator.errors import (
    UpstreamCallError,
    UpstreamClosedError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
)

_REFUSED_TEXTS: Final = ("connection refused", "connect call failed", "all connection attempts failed")
_SESSION_GONE: Final = ("Session terminated", "Session not found")
"""HTTP 404 to a request that carried a session id, in the SDK client's words, or in the
SDK server's (whose JSON-RPC error body the client passes on)."""


class CallFailure(Enum):
    NONE = "none"
    """The upstream answered: the transport works."""
    TRANSPORT = "transport"
    """Closed, reset or timed out: counts like a failed health check."""
    LOST = "lost"
    """Refused, or the session is unknown upstream: the session is lost now."""


def classify_call_failure(exc: UpstreamError) -> CallFailure:
    """How ``exc``, the error a call ended with, bears on its upstream's health."""
    if isinstance(exc, UpstreamCallError):
        terminated = exc.code == INVALID_REQUEST and str(exc).endswith(_SESSION_GONE)
        return CallFailure.LOST if terminated else CallFailure.NONE
    if not isinstance(exc, UpstreamClosedError | UpstreamTimeoutError | UpstreamConnectError):
        return CallFailure.NONE
    return CallFailure.LOST if refused(exc) else CallFailure.TRANSPORT


def refused(exc: BaseException) -> bool:
    """Whether ``exc``, an error it was raised from, or one it groups is a refused connection."""
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        if any(marker in str(current).lower() for marker in _REFUSED_TEXTS):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False
