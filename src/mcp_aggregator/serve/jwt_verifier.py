"""``JwtVerifier``: OAuth 2.1 access tokens (JWT) checked against the issuer's JWKS.

PyJWT does the JOSE work (signature, ``exp``/``nbf``/``iss``/``aud`` checks). It is the
JOSE library the MCP SDK itself depends on, so it adds nothing to install, and it is one of
the most used and maintained JOSE libraries in Python. Its ``PyJWKClient`` is not used for
fetching: it blocks on ``urllib`` and refetches the key set on every unknown ``kid``, which
lets anyone with made-up tokens make the gateway hammer the issuer. The key set is fetched
here with ``httpx``, cached, and refetched for an unknown ``kid`` at most once per
``refetch_interval_secs``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import jwt
from mcp.server.auth.provider import AccessToken

from mcp_aggregator.settings.serve_settings import OAuthSettings

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
_KEPT_CLAIMS = frozenset(("iss", "sub", "aud", "client_id", "azp", "groups", "roles", "email", "name"))
"""Claims kept on the access token: who the client is, for client rules and policies."""


class JwtVerifier:
    """Satisfies the SDK's ``TokenVerifier`` protocol: ``verify_token`` returns ``None`` when invalid."""

    def __init__(
        self,
        settings: OAuthSettings,
        *,
        http: httpx.AsyncClient | None = None,
        clock: Clock = anyio.current_time,
        cache_secs: float = 300.0,
        refetch_interval_secs: float = 30.0,
    ) -> None:
        self.settings = settings
        self._http = http
        self._clock = clock
        self._cache_secs = cache_secs
        self._refetch_interval = refetch_interval_secs
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            return None
        s = self.settings
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=list(s.algorithms),
                audience=s.audience,
                issuer=s.issuer,
                leeway=s.leeway_secs,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.InvalidTokenError as exc:
            logger.info("refused an access token: %s", exc)
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or claims.get("sub") or "unknown"),
            scopes=scopes_of(claims),
            expires_at=int(claims["exp"]),
            resource=s.audience,
            subject=claims.get("sub"),
            claims={k: v for k, v in claims.items() if k in _KEPT_CLAIMS},
        )

    async def _key(self, kid: object) -> jwt.PyJWK | None:
        async with self._lock:
            now = self._clock()
            stale = self._fetched_at is None or now - self._fetched_at > self._cache_secs
            unknown = not isinstance(kid, str) or kid not in self._keys
            may_refetch = self._fetched_at is None or now - self._fetched_at > self._refetch_interval
            if stale or (unknown and may_refetch):
                await self._fetch(now)
            if isinstance(kid, str):
                return self._keys.get(kid)
            # A token without ``kid`` is fine when the issuer publishes a single key.
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None

    async def _fetch(self, now: float) -> None:
        self._fetched_at = now
        try:
            if self._http is not None:
                response = await self._http.get(self.settings.jwks_url)
            else:
                async with httpx.AsyncClient(timeout=10.0) as http:
                    response = await http.get(self.settings.jwks_url)
            response.raise_for_status()
            key_set = jwt.PyJWKSet.from_dict(response.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWKSetError) as exc:
            logger.warning("cannot fetch the JWKS at %s: %s", self.settings.jwks_url, exc)
            return
        self._keys = {key.key_id: key for key in key_set.keys if key.key_id}
        if not self._keys and len(key_set.keys) == 1:
            self._keys = {"": key_set.keys[0]}


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """``scope`` (space-separated, RFC 9068) or ``scp`` (a list, some issuers)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, list):
        return [str(s) for s in scp]
    return []
