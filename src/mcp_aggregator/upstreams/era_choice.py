"""Which protocol era the gateway speaks to an upstream, and what it keeps from the other one.

An upstream that speaks both eras gives different things in each. At 2026-07-28 calls are
stateless (the raw fast path posts them), tools may ask back the multi-round-trip way
(``InputRequiredResult``) and changes come through ``subscriptions/listen``; but the SDK's
server there has no back-channel for a tool that asks through its session (sampling,
elicitation, roots through ``ctx.session``) and drops the change notifications such a tool
sends. At 2025-11-25 those asks and notifications work, and an ``InputRequiredResult`` is
refused ("Handler returned an invalid result").

So the main session speaks 2026-07-28 when the upstream offers it, and a 2025-11-25 side
session is opened beside it on the first call from a client that can be asked back; such
calls go there, and a tool that turns out to answer the multi-round-trip way is called on
the main session instead. These are pure functions over what was negotiated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import mcp_types as types
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

INVALID_RESULT: Final = "Handler returned an invalid result"
"""How the SDK's server refuses, at 2025-11-25, a handler that answered ``InputRequiredResult``."""


_BY_CHECK: Final = "each health check lists tools, prompts and resources"
_BESIDE_URL: Final = "once per health interval, beside the health_check_url check"


class SideState(StrEnum):
    """Where a connection's 2025-11-25 side session stands."""

    NONE = "none"
    """No side session: the main session already speaks the handshake era (or SSE)."""
    IDLE = "not opened yet"
    OPENING = "opening"
    OPEN = "open"
    UNAVAILABLE = "unavailable"
    CLOSED = "closed"


@dataclass(frozen=True)
class Era:
    """The era spoken to one upstream and why, as ``GET /servers/{id}`` shows it."""

    protocol_version: str | None
    reason: str
    side_session: SideState
    side_protocol_version: str | None = None
    side_error: str | None = None
    announces_changes: bool = False
    """Whether the upstream says it announces tool list changes in the era spoken."""
    relisting: str = _BY_CHECK

    def to_json(self) -> dict[str, Any]:
        side: dict[str, Any] = {"state": self.side_session.value}
        if self.side_protocol_version is not None:
            side["protocol_version"] = self.side_protocol_version
        if self.side_error is not None:
            side["error"] = self.side_error
        return {
            "protocol_version": self.protocol_version,
            "reason": self.reason,
            "side_session": side,
            "announces_changes": self.announces_changes,
            "relisting": self.relisting,
        }


def is_modern(version: str | None) -> bool:
    return version in MODERN_PROTOCOL_VERSIONS


def wants_side_session(version: str | None, *, transport: str, mode: str) -> bool:
    """Whether a connection whose main session negotiated ``version`` keeps a side session.

    Only a 2026-07-28 main session lacks the back-channel; SSE speaks the handshake era only,
    and ``protocol: legacy`` already chose it.
    """
    return is_modern(version) and mode == "auto" and transport in ("stdio", "http")


def era_of(
    version: str | None,
    *,
    mode: str,
    side: SideState,
    side_error: str | None,
    capabilities: types.ServerCapabilities | None,
    url_checked: bool = False,
) -> Era:
    """The era record of one connection (see ``Era``); ``url_checked``: its health check is a
    ``health_check_url``, which lists nothing, so the gateway re-lists beside it."""
    announces = bool(capabilities and capabilities.tools and capabilities.tools.list_changed)
    relisting = _BESIDE_URL if url_checked else _BY_CHECK
    if version is None:
        return Era(None, "not connected", SideState.NONE, relisting=relisting)
    if not is_modern(version):
        reason = (
            "configured protocol: legacy"
            if mode == "legacy"
            else "the upstream offers only the handshake era (it does not answer server/discover)"
        )
        return Era(version, reason, SideState.NONE, announces_changes=announces, relisting=relisting)
    if side is SideState.NONE:
        reason = "2026-07-28 (no side session for this transport)"
        return Era(version, reason, side, announces_changes=announces, relisting=relisting)
    reason = (
        "2026-07-28 for plain calls (stateless, the raw fast path, multi-round-trip input); "
        "calls from clients that can be asked back go to a 2025-11-25 side session, where the "
        "upstream's tools can ask through their session and announce changes"
    )
    if side is SideState.UNAVAILABLE:
        reason = "2026-07-28 only: the upstream refused a 2025-11-25 side session"
    side_version = LATEST_HANDSHAKE_VERSION if side is SideState.OPEN else None
    return Era(
        version,
        reason,
        side,
        side_version,
        side_error,
        announces_changes=announces,
        relisting=relisting,
    )


def merge_listings(main: Sequence[types.Tool], side: Sequence[types.Tool]) -> tuple[types.Tool, ...]:
    """The tools to hold against the pins when a side session lists them too.

    Over HTTP both sessions reach one server and agree. Over stdio the side session is a
    process of its own, where the calls of clients that can be asked back run: a definition
    that differs there is the one those calls meet, so it is the one reviewed (and held),
    and a tool only the side lists is new.
    """
    by_name = {tool.name: tool for tool in side}
    merged = [by_name.pop(tool.name, tool) for tool in main]
    merged.extend(tool for tool in side if tool.name in by_name)
    return tuple(merged)
