"""``SessionBook``: issuing sealed session ids and finding what a session is from its id.

The HTTP face asks it for the id of a session being opened (``issue``), for what a session
it does not hold is (``resume``: the sealed facts, the ledger's state; None means 404), and
tells it what changes (log level, subscriptions) and when a session ends. Ledger writes
that fail are logged, not raised: the session goes on here, and only a resume elsewhere
would miss the change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from sqlalchemy.exc import SQLAlchemyError

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry import Registry
from mcp_aggregator.sessions.key_ring import SealingKey
from mcp_aggregator.sessions.request_state_seal import RequestStateSeal
from mcp_aggregator.sessions.session_keys import SessionKeys
from mcp_aggregator.sessions.session_ledger import SessionLedger, SessionState, older_than
from mcp_aggregator.sessions.session_seal import SessionFacts, SessionSeal, owner_digest, sealed_part
from mcp_aggregator.settings.env_expansion import expand_setting
from mcp_aggregator.settings.serve_settings import ServeSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ResumedSession:
    facts: SessionFacts
    state: SessionState


class SessionBook:
    """Seals and opens the session ids of one gateway (every profile's endpoint)."""

    def __init__(
        self,
        keys: SessionKeys,
        ledger: SessionLedger | None,
        *,
        max_age_secs: float,
        clock: Callable[[], datetime],
    ) -> None:
        self.keys = keys
        self._ledger = ledger
        self._clock = clock
        self._max_age = max_age_secs
        self._seal = SessionSeal(keys.ring, max_age_secs=max_age_secs, clock=clock)

    def request_states(self, max_age_secs: float, *, home: str | None = None) -> RequestStateSeal:
        """A seal for one server's parked-call states (its own instance id, and ``home``: the
        base URL other replicas reach it at), on this book's keys."""
        return RequestStateSeal(self.keys.ring, max_age_secs=max_age_secs, clock=self._clock, home=home)

    @classmethod
    async def open(
        cls, serve: ServeSettings, registry: Registry, *, env: Mapping[str, str], clock: Callable[[], datetime]
    ) -> SessionBook:
        """The book for a gateway: ``serve.session_keys`` when given, else the registry's keys.

        Raises:
            ConfigError: a configured key is not 32 bytes of url-safe base64, or names an unset variable.
        """
        ledger = SessionLedger(registry, clock=clock)
        max_age = serve.session_max_age_secs
        if serve.session_keys:
            now = clock()
            keys = [
                # Listed first seals: the list's order is the ring's, newest first.
                SealingKey.from_text(
                    expand_setting(text, env, f"serve.session_keys[{index}]"),
                    now - timedelta(seconds=index),
                    field=f"serve.session_keys[{index}]",
                )
                for index, text in enumerate(serve.session_keys)
            ]
            session_keys = SessionKeys.configured(keys, max_age_secs=max_age, clock=clock)
        else:
            session_keys = SessionKeys(ledger, max_age_secs=max_age, clock=clock)
            try:
                await session_keys.open()
            except (OSError, SQLAlchemyError) as exc:
                raise RegistryError(f"cannot read or make the session sealing keys: {exc}") from exc
        book = cls(session_keys, ledger, max_age_secs=max_age, clock=clock)
        await book.forget_expired()
        return book

    def issue(self, client: Mapping[str, Any], owner: AuthorizationContext | None, profile: str) -> str:
        return self._seal.seal(SessionFacts(client, owner_digest(owner), profile, self._clock()))

    async def resume(self, session_id: str, owner: AuthorizationContext | None, profile: str) -> ResumedSession | None:
        """What the session is, when ``session_id`` is one this gateway issued, unexpired, not
        ended, asked for by the credential that opened it at the endpoint it was opened at."""
        sealed = sealed_part(session_id)
        if sealed is None:
            return None
        await self.keys.knows_key_of(sealed)
        facts = self._seal.open(session_id)
        if facts is None or facts.owner != owner_digest(owner) or facts.profile != profile:
            return None
        state = SessionState()
        if self._ledger is not None:
            try:
                state = await self._ledger.state(session_id)
            except (OSError, SQLAlchemyError) as exc:
                logger.warning("cannot read session state from the registry (%s): resuming without it", exc)
        return None if state.ended else ResumedSession(facts, state)

    async def record(self, session_id: str, **changes: Any) -> None:
        if self._ledger is None or sealed_part(session_id) is None:
            return
        try:
            await self._ledger.record(session_id, **changes)
        except (OSError, SQLAlchemyError) as exc:
            logger.warning("cannot record a session's %s in the registry: %s", ", ".join(changes), exc)

    async def forget_expired(self) -> None:
        if self._ledger is None:
            return
        try:
            await self._ledger.forget_before(older_than(self._clock, self._max_age))
        except (OSError, SQLAlchemyError) as exc:
            logger.warning("cannot drop expired sessions from the registry: %s", exc)
