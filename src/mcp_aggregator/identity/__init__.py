"""Who a client is and what it may see: identities, profiles and policies."""

from mcp_aggregator.identity.client_identity import ANONYMOUS, DEFAULT_PROFILE, ClientIdentity

__all__ = ["ANONYMOUS", "DEFAULT_PROFILE", "ClientIdentity"]
