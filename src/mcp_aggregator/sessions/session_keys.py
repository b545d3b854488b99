"""``SessionKeys``: the key ring that seals session ids and request states, kept current.

Configured keys (``serve.session_keys``) are the ring as given: the first seals, all open,
and rotating is the operator's (add a new key first, drop the old one after
``serve.session_max_age_secs``). Otherwise the ring is the registry's ``session_keys``
table: the first replica makes a key, every replica on the same registry reads it, a new
key is added once the newest is ``rotate_after_secs`` old, and a key is dropped once no id
it sealed can still be valid. A value sealed by a key this replica has not read yet (another
replica just rotated) makes it read the table again, at most ten times a second.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

import anyio
from anyio.abc import TaskStatus
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.sessions.key_ring import KeyRing, SealingKey, sealed_key_id
from mcp_aggregator.sessions.session_ledger import SessionLedger, older_than

logger = logging.getLogger(__name__)

ROTATE_AFTER_SECS: Final = 7 * 86_400
_RELOAD_EVERY_SECS: Final = 0.1
"""At most this often an id naming an unknown key reads the table (forged ids must not load it)."""


class SessionKeys:
    """The current ``KeyRing``; ``open`` (or ``configured``) before use."""

    def __init__(
        self,
        ledger: SessionLedger | None,
        *,
        max_age_secs: float,
        clock: Callable[[], datetime],
        rotate_after_secs: float = ROTATE_AFTER_SECS,
    ) -> None:
        self._ledger = ledger
        self._max_age = max_age_secs
        self._rotate_after = rotate_after_secs
        self._clock = clock
        self._ring: KeyRing | None = None
        self._last_reload = -math.inf

    @classmethod
    def configured(
        cls, keys: Sequence[SealingKey], *, max_age_secs: float, clock: Callable[[], datetime]
    ) -> SessionKeys:
        made = cls(None, max_age_secs=max_age_secs, clock=clock)
        made._ring = KeyRing(keys)
        return made

    def ring(self) -> KeyRing:
        if self._ring is None:
            raise RuntimeError("SessionKeys is not open")
        return self._ring

    async def open(self) -> None:
        """Read the shared keys, making (or rotating in) one when due."""
        await self.rotate_if_due()

    async def rotate_if_due(self) -> None:
        if self._ledger is None:
            return
        keys = await self._ledger.keys()
        newest = max(keys, key=lambda key: key.created, default=None)
        if newest is None or newest.created <= older_than(self._clock, self._rotate_after):
            made = SealingKey.generate(self._clock())
            await self._ledger.add_key(made)
            logger.info("session sealing key %08x made (%s)", made.key_id, "first" if newest is None else "rotation")
            keys.append(made)
        # A key is kept while an id it sealed may still be valid: it stopped sealing at most
        # rotate_after later than it was made, and such an id lives max_age.
        await self._ledger.retire_keys(older_than(self._clock, self._max_age + self._rotate_after), keep=[])
        self._ring = KeyRing(keys)

    async def knows_key_of(self, sealed: str) -> None:
        """Read the shared keys again when ``sealed`` names a key not in the ring (rate-limited)."""
        key_id = sealed_key_id(sealed)
        if key_id is None or self._ledger is None or self.ring().knows(key_id):
            return
        now = anyio.current_time()
        if now - self._last_reload < _RELOAD_EVERY_SECS:
            return
        self._last_reload = now
        try:
            keys = await self._ledger.keys()
        except (OSError, SQLAlchemyError) as exc:
            logger.warning("session keys: cannot read the shared keys (%s)", exc)
            return
        if keys:
            self._ring = KeyRing(keys)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Rotate when due, checking hourly (shared keys only)."""
        task_status.started()
        if self._ledger is None:
            return
        while True:
            await anyio.sleep(min(3600.0, self._rotate_after))
            try:
                await self.rotate_if_due()
            except (OSError, SQLAlchemyError) as exc:
                logger.warning("session keys: cannot read or rotate the shared keys (%s); trying again in an hour", exc)
