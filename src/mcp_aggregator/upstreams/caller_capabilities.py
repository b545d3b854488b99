"""A 2026-07-28 request declares its client's capabilities, so an upstream sees its caller's.

At 2026-07-28 each request carries the capabilities of the client that sends it, and a
server decides by them: it lists only the input requests a client can answer, and refuses
with -32021 a tool that needs one the client lacks. The gateway's own session declares
every capability it can relay (sampling, elicitation, roots, MCP Apps); sent as they are,
they would tell the upstream that every caller has them. So a request made for a caller
declares, of what the gateway's session declares, only what that caller declared too.

The relay puts the caller's declaration in the request's ``_meta`` under the protocol's
key; the SDK's stamp then writes the session's there, and ``narrowing_stamp`` puts the
narrowed one in its place (a raw request goes through ``RawStamps``, which does the same).
A request made for nobody in particular (an admin call) keeps the session's declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import mcp_types as types

CAPABILITIES_KEY: Final = types.CLIENT_CAPABILITIES_META_KEY

_PER_CLIENT: Final = ("sampling", "elicitation", "roots")
"""What the gateway declares only because it relays it to the caller: the caller's own
declaration of each (its sub-capabilities included) is what the upstream may count on."""

Stamp = Callable[[dict[str, Any], Any], None]


def narrowed(session: Mapping[str, Any], caller: Mapping[str, Any]) -> dict[str, Any]:
    """The capabilities to declare upstream for a caller declaring ``caller``, on a session
    declaring ``session`` (both in wire form)."""
    out = {key: value for key, value in session.items() if key not in _PER_CLIENT and key != "extensions"}
    for key in _PER_CLIENT:
        if key in session and isinstance(caller.get(key), Mapping):
            out[key] = dict(caller[key])
    extensions = session.get("extensions")
    theirs = caller.get("extensions")
    if isinstance(extensions, Mapping) and isinstance(theirs, Mapping):
        kept = {name: theirs[name] for name in extensions if isinstance(theirs.get(name), Mapping)}
        if kept:
            out["extensions"] = kept
    return out


def declared(capabilities: types.ClientCapabilities) -> dict[str, Any]:
    """A caller's capabilities in wire form, as ``narrowed`` reads them."""
    return capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)


def narrow_envelope(meta: dict[str, Any], caller: object) -> None:
    """Replace, in a stamped ``meta``, the session's capabilities by those narrowed to
    ``caller`` (the caller's declaration taken from the request before it was stamped;
    None or not a mapping: the session's stay)."""
    session = meta.get(CAPABILITIES_KEY)
    if isinstance(caller, Mapping) and isinstance(session, Mapping):
        meta[CAPABILITIES_KEY] = narrowed(session, caller)


def narrowing_stamp(stamp: Stamp) -> Stamp:
    """``stamp`` (an SDK session's) declaring, on each request, its caller's capabilities.

    A handshake-era stamp writes no envelope; the caller's declaration is then removed, as
    such an upstream refuses a request carrying the protocol's reserved keys.
    """

    def stamped(data: dict[str, Any], opts: Any) -> None:
        params = data.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        caller = meta.pop(CAPABILITIES_KEY, None) if isinstance(meta, dict) else None
        stamp(data, opts)
        meta = data.get("params", {}).get("_meta")
        if isinstance(meta, dict):
            narrow_envelope(meta, caller)

    stamped.__wrapped__ = stamp  # type: ignore[attr-defined]
    return stamped
