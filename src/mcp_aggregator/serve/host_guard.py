"""``HostOriginGuard``: the DNS-rebinding and cross-site defence in front of every HTTP route.

A web page the user visits can make the browser send requests to ``127.0.0.1`` under a
name the attacker controls (DNS rebinding), or straight to it (cross-site requests). The
first shows in the ``Host`` header, the second in ``Origin``. The guard answers both before
any handler runs, on every route (``/mcp``, the REST API, the page, ``/metrics``, ...):

* ``Host`` must be the bound host, a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``)
  or an entry of ``serve.allowed_hosts``; otherwise 421. Loopback names are accepted with
  any port: the rebinding attack is in the *name*, and SSH tunnels or port forwards keep
  the name but change the port.
* ``Origin``, when a browser sends one, must be the gateway's own origin (same scheme-less
  ``host:port`` as the accepted ``Host``) or an entry of ``serve.allowed_origins``;
  otherwise 403. Non-browser clients (SDKs, curl) send no ``Origin`` and pass.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})


def split_host(value: str) -> tuple[str, str | None]:
    """``("name", "port")`` of a Host header value; IPv6 literals keep their brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        port = rest[1:] if rest.startswith(":") else None
        return f"{name}]", port or None
    name, sep, port = value.rpartition(":")
    if sep and port.isdigit():
        return name, port
    return value, None


def host_name(bound: str) -> str:
    """The bound address as it appears in a Host header (IPv6 in brackets)."""
    bound = bound.strip().lower()
    try:
        if ipaddress.ip_address(bound.strip("[]")).version == 6:
            return f"[{bound.strip('[]')}]"
    except ValueError:
        pass
    return bound


class HostPolicy:
    """Which ``Host`` and ``Origin`` values are accepted. Pure; built once per app."""

    def __init__(self, bound_host: str, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()):
        names = set(LOOPBACK_NAMES)
        if bound_host.strip().lower() not in _WILDCARD_BINDS:
            names.add(host_name(bound_host))
        self._any_port: set[str] = names
        self._exact: set[str] = set()
        for entry in allowed_hosts:
            name, port = split_host(entry)
            if port is None:
                self._any_port.add(name)
            else:
                self._exact.add(f"{name}:{port}")
        self._origins = {origin.lower().rstrip("/") for origin in allowed_origins}

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        name, port = split_host(host)
        return name in self._any_port or (port is not None and f"{name}:{port}" in self._exact)

    def origin_allowed(self, origin: str, host: str) -> bool:
        """Same origin as the (already accepted) ``host``, or listed. ``null`` never passes."""
        origin = origin.strip().lower().rstrip("/")
        if origin in self._origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or parts.path or not parts.netloc:
            return False
        if parts.netloc == host.strip().lower():
            return True
        scheme_host, _ = split_host(parts.netloc)
        return f"{parts.scheme}://{scheme_host}:*" in self._origins


class HostOriginGuard:
    """Pure ASGI middleware applying a ``HostPolicy`` to every HTTP and WebSocket request."""

    def __init__(self, app: ASGIApp, *, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.policy.host_allowed(host):
            shown = host or "(none)"
            detail = f"Host {shown!r} is not allowed; add it to serve.allowed_hosts to serve under that name"
            await _refuse(scope, send, 421, detail)
            return
        origin = headers.get(b"origin")
        if origin is not None and not self.policy.origin_allowed(origin.decode("latin-1"), host):
            detail = f"Origin {origin.decode('latin-1')!r} is not allowed; add it to serve.allowed_origins"
            await _refuse(scope, send, 403, detail)
            return
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, send: Send, status: int, detail: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
        return
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
