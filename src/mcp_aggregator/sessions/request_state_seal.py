"""``RequestStateSeal``: the gateway's own ``requestState``, sealed like session ids.

A 2026-07-28 client whose call asked it back (sampling, elicitation, roots) retries with
the ``requestState`` it was given; the call waits, parked, in the replica that gave it.
The state is sealed (the shared key ring, its own purpose) with that replica's instance id,
the parked call's token and the time, so every replica can tell, for a retry the balancer
sent it: a state of its own; another replica's (gone, or the retry was balanced away: the
call cannot go on here); or a state nobody issued (forged, altered, or past the wait).
The SDK's ``RequestStateBoundary`` seals an upstream server's state the same way.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Final

from mcp_aggregator.sessions.key_ring import KeyRing

PURPOSE: Final = b"mcp-aggregator request state v1"


class StateOwner(Enum):
    HERE = "here"
    ELSEWHERE = "elsewhere"
    NOBODY = "nobody"


@dataclass(frozen=True, slots=True)
class OpenedState:
    owner: StateOwner
    token: str | None = None


class RequestStateSeal:
    """Seals parked-call tokens for this process (``instance``) and opens any replica's."""

    def __init__(self, ring: Callable[[], KeyRing], *, max_age_secs: float, clock: Callable[[], datetime]) -> None:
        self._ring = ring
        self._max_age = max_age_secs
        self._clock = clock
        self.instance = secrets.token_urlsafe(9)

    def seal(self, token: str) -> str:
        body = [self.instance, token, int(self._clock().timestamp())]
        return self._ring().seal(json.dumps(body, separators=(",", ":")).encode(), PURPOSE)

    def open(self, sealed: str) -> OpenedState:
        plain = self._ring().open(sealed, PURPOSE)
        if plain is None:
            return OpenedState(StateOwner.NOBODY)
        try:
            instance, token, issued = json.loads(plain)
        except ValueError:
            return OpenedState(StateOwner.NOBODY)
        if not (isinstance(instance, str) and isinstance(token, str) and isinstance(issued, int)):
            return OpenedState(StateOwner.NOBODY)
        age = (self._clock() - datetime.fromtimestamp(issued, UTC)).total_seconds()
        if age > self._max_age:
            return OpenedState(StateOwner.NOBODY)
        return OpenedState(StateOwner.HERE if instance == self.instance else StateOwner.ELSEWHERE, token)
