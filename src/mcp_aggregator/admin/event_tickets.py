"""Short-lived tickets that open the event stream where no header can be sent (``EventSource``).

A ticket is ``<expiry>.<HMAC-SHA256 of the expiry under the admin token>``: stateless, so
any process holding the token can check it, and good for ``GET /events`` only. Rotating the
admin token voids every ticket.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from typing import Final

TICKET_SECS: Final = 60
_PURPOSE: Final = b"mcp-aggregator events ticket "


def _mac(token: str, expiry: int) -> str:
    return hmac.new(token.encode(), _PURPOSE + str(expiry).encode(), hashlib.sha256).hexdigest()


def issue_ticket(token: str, *, now: Callable[[], float] = time.time) -> str:
    expiry = int(now()) + TICKET_SECS
    return f"{expiry}.{_mac(token, expiry)}"


def ticket_valid(ticket: str, token: str, *, now: Callable[[], float] = time.time) -> bool:
    """Whether ``ticket`` was issued under ``token`` and has not expired (constant-time check)."""
    expiry_text, _, mac = ticket.partition(".")
    if not expiry_text.isdigit() or len(expiry_text) > 12:
        return False
    expiry = int(expiry_text)
    return expiry >= now() and hmac.compare_digest(mac.encode(), _mac(token, expiry).encode())
