"""The MCP Apps extension as the gateway relays it: declared to upstreams, and to clients
while an exposed upstream declares it.

The gateway carries everything an app needs unchanged (the tool's ``_meta.ui``, the
``ui://`` resource and its ``text/html;profile=mcp-app`` body), so its sessions say to
their upstreams that they take apps. Each 2026-07-28 request then declares it only when its
client did (``upstreams.caller_capabilities``); a 2025-11-25 session is shared by every
client, so its handshake's declaration stands for all, and a UI-bound tool still answers
with text (SEP-2133 asks that of every extension), which a client without apps shows as it
is. Only this extension is relayed: another one may change what a method means, which the
gateway would have to know to carry it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import mcp_types as types
from mcp.client.extension import ClientExtension, advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

__all__ = ["EXTENSION_ID", "relayed_extensions", "upstream_extensions"]

_UPSTREAM_SETTINGS: Final = {"mimeTypes": [APP_MIME_TYPE]}


def upstream_extensions() -> list[ClientExtension]:
    """What the gateway's client declares to every upstream (a new list per session)."""
    return [advertise(EXTENSION_ID, dict(_UPSTREAM_SETTINGS))]


def relayed_extensions(capabilities: Iterable[types.ServerCapabilities | None]) -> dict[str, dict[str, Any]]:
    """The extensions the gateway declares to its clients, from its exposed upstreams'
    capabilities: MCP Apps when at least one declares it (with the first one's settings)."""
    for caps in capabilities:
        settings = (caps.extensions or {}).get(EXTENSION_ID) if caps is not None else None
        if settings is not None:
            return {EXTENSION_ID: dict(settings)}
    return {}
