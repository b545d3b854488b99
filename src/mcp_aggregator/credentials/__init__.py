"""Signing the gateway in to OAuth-protected upstreams, and keeping their tokens (sealed)."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["AuthStatus", "CredentialsSettings", "Grant", "SecretBox", "UpstreamOAuth"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "CredentialsSettings": ".config",
        "Grant": ".config",
        "UpstreamOAuth": ".config",
        "AuthStatus": ".records",
        "SecretBox": ".secret_box",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.credentials.config import CredentialsSettings, Grant, UpstreamOAuth
    from mcp_aggregator.credentials.records import AuthStatus
    from mcp_aggregator.credentials.secret_box import SecretBox
