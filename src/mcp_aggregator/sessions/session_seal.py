"""``SessionSeal``: a 2025-11-25 session's identity, sealed into its ``Mcp-Session-Id``.

What the handshake fixed for the session's lifetime travels in the id: the client's
``initialize`` params (protocol version, capabilities, client info), the credential that
opened it (the SDK's ``AuthorizationContext``: client id, issuer, subject) and the
endpoint's profile, with the time it was issued. Any replica holding the key opens it and
can serve the session; nobody else can read or alter it. What changes during a session
(log level, resource subscriptions) cannot ride in the id, which the client never
updates: that is kept by ``SessionLedger``.

The id rides in a header on every request, so what it keeps of the client is bounded
(``kept_of_client``): the params whole when their JSON is at most ``MAX_CLIENT_BYTES``;
else the client info cut to its name, title and version and the capabilities' experimental
section dropped (the gateway reads neither); an ``initialize`` whose params are still too
large is refused.

An id past ``max_age_secs`` no longer opens: a replica that does not hold the session
answers 404, the spec's "initialize again"; the replica that holds it in memory serves it
until it ends.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp_types import InitializeRequestParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from mcp_aggregator.sessions.key_ring import KeyRing

PURPOSE: Final = b"mcp-aggregator session id v1"
PREFIX: Final = "s1."
"""Marks the ids this gateway seals (the SDK's own ids are 32 hex digits)."""


MAX_CLIENT_BYTES: Final = 4096
"""The most a session id keeps of the client's ``initialize`` params, as JSON: the sealed id
is a third larger, and proxies commonly refuse a header of 8 KiB or more."""
_CLIENT_INFO_KEPT: Final = ("name", "title", "version")


def kept_of_client(client: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a session id keeps of ``client`` (``initialize`` params, wire names), or None
    when even what the gateway needs of them is over ``MAX_CLIENT_BYTES`` (see the module
    docstring)."""
    kept = dict(client)
    if _json_size(kept) <= MAX_CLIENT_BYTES:
        return kept
    info = kept.get("clientInfo")
    if isinstance(info, dict):
        kept["clientInfo"] = {key: info[key] for key in _CLIENT_INFO_KEPT if key in info}
    capabilities = kept.get("capabilities")
    if isinstance(capabilities, dict):
        kept["capabilities"] = {key: value for key, value in capabilities.items() if key != "experimental"}
    return kept if _json_size(kept) <= MAX_CLIENT_BYTES else None


def _json_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What a session's id holds."""

    client: Mapping[str, Any]
    """The ``initialize`` params as the client sent them (wire names)."""
    owner: str | None
    """``owner_digest`` of the credential that opened the session (None: an open endpoint)."""
    profile: str
    issued: datetime

    def initialize_params(self) -> InitializeRequestParams | None:
        try:
            return InitializeRequestParams.model_validate(self.client, by_name=False)
        except ValidationError:
            return None

    @property
    def protocol_version(self) -> str:
        """The version the SDK's handshake agreed to for these params."""
        requested = self.client.get("protocolVersion")
        if isinstance(requested, str) and requested in HANDSHAKE_PROTOCOL_VERSIONS:
            return requested
        return LATEST_HANDSHAKE_VERSION


class SessionSeal:
    """Seals ``SessionFacts`` into session ids and opens them (``None``: 404)."""

    def __init__(self, ring: Callable[[], KeyRing], *, max_age_secs: float, clock: Callable[[], datetime]) -> None:
        """``ring`` is read at each use, so a rotation or a reload takes effect at once."""
        self._ring = ring
        self._max_age = max_age_secs
        self._clock = clock

    def seal(self, facts: SessionFacts) -> str:
        body = {
            "c": dict(facts.client),
            "o": facts.owner,
            "p": facts.profile,
            "t": int(facts.issued.timestamp()),
        }
        plain = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return PREFIX + self._ring().seal(plain, PURPOSE)

    def open(self, session_id: str) -> SessionFacts | None:
        if not session_id.startswith(PREFIX):
            return None
        plain = self._ring().open(session_id.removeprefix(PREFIX), PURPOSE)
        if plain is None:
            return None
        facts = _facts(plain)
        if facts is None:
            return None
        age = (self._clock() - facts.issued).total_seconds()
        return facts if age + 60 >= 0 and age <= self._max_age else None


def sealed_part(session_id: str) -> str | None:
    """The sealed text of an id this gateway issued (for its key id); None for any other."""
    return session_id.removeprefix(PREFIX) if session_id.startswith(PREFIX) else None


def owner_digest(owner: AuthorizationContext | None) -> str | None:
    """What an id keeps of its owner: enough to compare, nothing to read (and 22 bytes)."""
    if owner is None:
        return None
    text = json.dumps([owner["client_id"], owner["issuer"], owner["subject"]])
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()[:16]).rstrip(b"=").decode("ascii")


def session_digest(session_id: str) -> str:
    """What the ledger keys a session by: the id itself never reaches the database."""
    return hashlib.sha256(session_id.encode("ascii", errors="replace")).hexdigest()


def _facts(plain: bytes) -> SessionFacts | None:
    try:
        body = json.loads(plain)
        client, owner, profile, issued = body["c"], body["o"], body["p"], body["t"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(client, dict) or not isinstance(profile, str) or not isinstance(issued, int):
        return None
    if owner is not None and not isinstance(owner, str):
        return None
    return SessionFacts(client, owner, profile, datetime.fromtimestamp(issued, UTC))
