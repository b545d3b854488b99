"""The envelope and HTTP headers a raw request gets, as the upstream session's SDK client
would give them, stamped once and copied.

The SDK client stamps every request it sends: the 2026-07-28 ``_meta`` envelope (the same for
every request of a negotiated session) and, over HTTP, the routing headers (the same for
every request to one tool, prompt or URI). Raw fast-path requests must carry exactly these,
so the SDK's own stamp runs on a probe and its output is reused until the session's stamp
changes (a reconnect). The exception is a tool that mirrors arguments into ``Mcp-Param-*``
headers: those depend on each call's arguments, so the SDK stamps every such call itself.
A request made for a caller declares that caller's capabilities (``caller_capabilities``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types

from mcp_aggregator.upstreams.caller_capabilities import CAPABILITIES_KEY, narrow_envelope

_HEADS_KEPT: Final = 1024
"""Header sets remembered; resource URIs are unbounded, so the oldest are dropped together."""


class RawStamps:
    """The stamps of one upstream session's SDK client, remembered."""

    def __init__(self) -> None:
        self._stamp: object = None
        self._envelope: dict[str, Any] = {}
        self._heads: dict[tuple[str, object], dict[str, str]] = {}

    def apply(self, session: Any, message: dict[str, Any], *, over_http: bool) -> Mapping[str, str]:
        """Stamp ``message`` in place as ``session`` would; return its HTTP headers (none
        over stdio, where only the envelope counts)."""
        stamp = session._stamp
        params = message.setdefault("params", {})
        method = message["method"]
        if over_http:
            name = params.get("name") if method == "tools/call" else None
            param_headers = getattr(session, "_x_mcp_header_maps", None)
            if param_headers is None or (name is not None and param_headers.get(name)):
                opts: dict[str, Any] = {}
                stamp(message, opts)
                return dict(opts.get("headers", {}))
        if stamp is not self._stamp:
            probe: dict[str, Any] = {"method": "tools/call", "params": {}}
            stamp(probe, {})
            self._stamp, self._envelope = stamp, dict(probe["params"].get("_meta", {}))
            self._heads.clear()
        meta = params.setdefault("_meta", {})
        caller = meta.pop(CAPABILITIES_KEY, None)
        if self._envelope:
            for key, value in self._envelope.items():
                if key == types.LOG_LEVEL_META_KEY:
                    meta.setdefault(key, value)  # as the SDK: a request's own level wins
                else:
                    meta[key] = value
            narrow_envelope(meta, caller)
        if not meta:
            del params["_meta"]
        if not over_http:
            return {}
        named = params.get("name", params.get("uri"))
        heads = self._heads.get((method, named))
        if heads is None:
            if len(self._heads) >= _HEADS_KEPT:
                self._heads.clear()
            # The SDK names the header after whichever of the two the method's schema uses.
            head_opts: dict[str, Any] = {}
            stamp({"method": method, "params": {} if named is None else {"name": named, "uri": named}}, head_opts)
            heads = self._heads[(method, named)] = dict(head_opts.get("headers", {}))
        return heads
