"""``RequestStateSeal``: the gateway's own ``requestState``, sealed like session ids.

A 2026-07-28 client whose call asked it back (sampling, elicitation, roots) retries with
the ``requestState`` it was given; the call waits, parked, in the replica that gave it.
The state is sealed (the shared key ring, its own purpose) with that replica's instance id,
the parked call's token and the time, so every replica can tell, for a retry the balancer
sent it: a state of its own; another replica's (the retry was balanced away, or that replica
is gone: the state names the address it is reached at, ``home``, so the retry can be sent
on to it); or a state nobody issued (forged, altered, or past the wait).
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
    home: str | None = None
    """The base URL the replica that sealed it is reached at (None: it named none)."""


class RequestStateSeal:
    """Seals parked-call tokens for this process (``instance``) and opens any replica's."""

    def __init__(
        self,
        ring: Callable[[], KeyRing],
        *,
        max_age_secs: float,
        clock: Callable[[], datetime],
        home: str | None = None,
    ) -> None:
        """``home``: the base URL other replicas reach this one at (sealed into each state)."""
        self._ring = ring
        self._max_age = max_age_secs
        self._clock = clock
        self.instance = secrets.token_urlsafe(9)
        self.home = home

    def seal(self, token: str) -> str:
        body = [self.instance, token, int(self._clock().timestamp()), self.home]
        return self._ring().seal(json.dumps(body, separators=(",", ":")).encode(), PURPOSE)

    def open(self, sealed: str) -> OpenedState:
        plain = self._ring().open(sealed, PURPOSE)
        if plain is None:
            return OpenedState(StateOwner.NOBODY)
        try:
            instance, token, issued, *rest = json.loads(plain)
        except (ValueError, TypeError):
            return OpenedState(StateOwner.NOBODY)
        home = rest[0] if rest else None
        valid = isinstance(instance, str) and isinstance(token, str) and isinstance(issued, int)
        if not valid or not isinstance(home, str | None):
            return OpenedState(StateOwner.NOBODY)
        age = (self._clock() - datetime.fromtimestamp(issued, UTC)).total_seconds()
        if age > self._max_age:
            return OpenedState(StateOwner.NOBODY)
        if instance == self.instance:
            return OpenedState(StateOwner.HERE, token)
        return OpenedState(StateOwner.ELSEWHERE, token, home)
