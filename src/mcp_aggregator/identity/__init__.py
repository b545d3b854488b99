"""Who a client is and what it may see: identities, profiles and policies."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["ANONYMOUS", "DEFAULT_PROFILE", "ClientIdentity"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "ANONYMOUS": ".client_identity",
        "DEFAULT_PROFILE": ".client_identity",
        "ClientIdentity": ".client_identity",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.identity.client_identity import ANONYMOUS, DEFAULT_PROFILE, ClientIdentity
