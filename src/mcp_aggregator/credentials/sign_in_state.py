"""The ``state`` of a sign-in: sealed, so any replica holding the key can finish it.

It carries what the callback needs (which server, the PKCE verifier, the redirect used)
encrypted and authenticated with the gateway's key, stamped with its time (Fernet), so a
forged, altered or stale state is refused without a table of pending sign-ins. Each state
is taken once per process; the authorization code it comes with is single-use at the
authorization server anyway.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict, dataclass

from mcp_aggregator.credentials.secret_box import SecretBox
from mcp_aggregator.errors import SignInStateError


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    server_id: str
    verifier: str
    redirect_uri: str
    subject: str = ""
    nonce: str = ""


class SignInStates:
    """Issues and takes sign-in states."""

    def __init__(self, box: SecretBox, ttl_secs: float) -> None:
        self._box = box
        self._ttl = ttl_secs
        self._taken: dict[str, float] = {}
        """Nonces taken, with when; forgotten once their state has expired anyway."""

    def issue(self, pending: PendingSignIn) -> str:
        stamped = PendingSignIn(**{**asdict(pending), "nonce": secrets.token_urlsafe(16)})
        return self._box.seal(json.dumps(asdict(stamped)))

    def take(self, state: str) -> PendingSignIn:
        """The sign-in ``state`` stands for; raises ``SignInStateError`` if it is not one we
        issued, was altered, is older than the TTL or was already taken here."""
        text = self._box.open_sealed(state, ttl_secs=self._ttl)
        if text is None:
            raise SignInStateError("unknown, altered or expired state; start the sign-in again")
        pending = PendingSignIn(**json.loads(text))
        now = time.monotonic()
        self._taken = {nonce: at for nonce, at in self._taken.items() if now - at <= self._ttl}
        if pending.nonce in self._taken:
            raise SignInStateError("this sign-in was already completed; start a new one")
        self._taken[pending.nonce] = now
        return pending
