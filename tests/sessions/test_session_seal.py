from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext

from mcp_aggregator.sessions import KeyRing, SealingKey, SessionFacts, SessionSeal
from mcp_aggregator.sessions.session_seal import owner_digest

T0 = datetime(2026, 11, 27, tzinfo=UTC)
DAY = 86_400.0
# What the official SDK's Client sends (mode="legacy"), as a sealed id keeps it.
SDK_CLIENT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}},
    "clientInfo": {"name": "mcp", "version": "0.1.0"},
}
OWNER = owner_digest(AuthorizationContext(client_id="ci-robot", issuer="https://issuer.example.com", subject="user-42"))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _seal(clock: Clock, ring: KeyRing | None = None) -> SessionSeal:
    ring = ring or KeyRing([SealingKey.generate(T0)])
    return SessionSeal(lambda: ring, max_age_secs=DAY, clock=clock)


def test_an_id_gives_back_the_client_its_owner_and_profile() -> None:
    clock = Clock()
    seal = _seal(clock)
    session_id = seal.seal(SessionFacts(SDK_CLIENT, OWNER, "research", T0))
    facts = seal.open(session_id)
    assert facts is not None
    assert (facts.client, facts.owner, facts.profile, facts.issued) == (SDK_CLIENT, OWNER, "research", T0)
    params = facts.initialize_params()
    assert params is not None and params.client_info.name == "mcp" and params.capabilities.sampling is not None
    assert facts.protocol_version == "2025-11-25"


def test_an_sdk_clients_id_stays_under_400_bytes() -> None:
    """HAProxy, nginx and most proxies take 8 KB of headers or more; ids are about 360 bytes."""
    session_id = _seal(Clock()).seal(SessionFacts(SDK_CLIENT, OWNER, "default", T0))
    assert session_id.startswith("s1.") and session_id.isascii()
    assert len(session_id) < 400, len(session_id)


def test_an_id_past_its_max_age_no_longer_opens() -> None:
    clock = Clock()
    seal = _seal(clock)
    session_id = seal.seal(SessionFacts(SDK_CLIENT, None, "default", T0))
    clock.now = T0 + timedelta(seconds=DAY)
    assert seal.open(session_id) is not None
    clock.now = T0 + timedelta(seconds=DAY + 1)
    assert seal.open(session_id) is None


def test_an_id_from_the_future_opens_only_within_a_minute_of_clock_skew() -> None:
    clock = Clock()
    seal = _seal(clock)
    assert seal.open(seal.seal(SessionFacts(SDK_CLIENT, None, "default", T0 + timedelta(seconds=30)))) is not None
    assert seal.open(seal.seal(SessionFacts(SDK_CLIENT, None, "default", T0 + timedelta(seconds=90)))) is None


def test_ids_the_gateway_did_not_seal_do_not_open() -> None:
    seal = _seal(Clock())
    for other in ("0123456789abcdef0123456789abcdef", "s1.", "s1." + "A" * 200, ""):
        assert seal.open(other) is None
    other_gateway = _seal(Clock()).seal(SessionFacts(SDK_CLIENT, None, "default", T0))
    assert seal.open(other_gateway) is None


def test_an_unknown_protocol_version_is_served_as_the_sdks_handshake_would() -> None:
    facts = SessionFacts({**SDK_CLIENT, "protocolVersion": "1999-01-01"}, None, "default", T0)
    assert facts.protocol_version == "2025-11-25"
