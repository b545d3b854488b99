"""Signing the gateway in to OAuth-protected upstreams, and keeping their tokens (sealed)."""

from mcp_aggregator.credentials.config import CredentialsSettings, Grant, UpstreamOAuth
from mcp_aggregator.credentials.records import AuthStatus
from mcp_aggregator.credentials.secret_box import SecretBox

__all__ = ["AuthStatus", "CredentialsSettings", "Grant", "SecretBox", "UpstreamOAuth"]
