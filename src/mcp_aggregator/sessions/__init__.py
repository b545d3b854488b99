"""Sealed sessions: a 2025-11-25 session any replica can serve, its id sealed with a shared key ring."""

from mcp_aggregator.sessions.key_ring import KeyRing, SealingKey
from mcp_aggregator.sessions.sealed_session_manager import SealedSessionManager, SessionHost
from mcp_aggregator.sessions.session_book import ResumedSession, SessionBook
from mcp_aggregator.sessions.session_keys import SessionKeys
from mcp_aggregator.sessions.session_ledger import SessionLedger, SessionState
from mcp_aggregator.sessions.session_seal import SessionFacts, SessionSeal

__all__ = [
    "KeyRing",
    "ResumedSession",
    "SealedSessionManager",
    "SealingKey",
    "SessionBook",
    "SessionFacts",
    "SessionHost",
    "SessionKeys",
    "SessionLedger",
    "SessionSeal",
    "SessionState",
]
