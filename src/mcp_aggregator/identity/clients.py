"""``ClientBook``: who a bearer token belongs to, and which profiles that client may use.

Three kinds of client:

* named clients with a static token (``clients[].token`` / ``token_sha256``);
* named clients standing for OAuth access tokens whose claims match (``clients[].match``);
* unnamed clients: a token of ``serve.mcp_tokens`` (profile ``default`` only), and an OAuth
  token that matches no client entry when no entry has a ``match`` (``default`` only, named
  by its subject). When some entry has a ``match``, an OAuth token matching none has no
  profile at all (403 everywhere).

Static tokens are compared as SHA-256 digests in constant time, every one every time.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import SecretStr

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.identity.client_identity import DEFAULT_PROFILE, ClientIdentity
from mcp_aggregator.identity.config import ClaimMatch, ClientSettings
from mcp_aggregator.settings.env_expansion import expand_setting

MIN_TOKEN: Final = 16


@dataclass(frozen=True)
class Client:
    """A client as the serve face admits it: its name (None: unnamed) and profiles."""

    name: str | None
    profiles: frozenset[str]

    def may_use(self, profile: str) -> bool:
        return profile in self.profiles


def _expanded(token: str, env: Mapping[str, str], where: str) -> str:
    out = expand_setting(token, env, where)
    if len(out) < MIN_TOKEN or not out.isascii() or any(c.isspace() or not c.isprintable() for c in out):
        rule = f"a token must be printable ASCII without spaces, at least {MIN_TOKEN} characters"
        raise ConfigError(rule, path=where)
    return out


def _claim_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return []


def claims_match(match: ClaimMatch, subject: str | None, scopes: Sequence[str], claims: Mapping[str, Any]) -> bool:
    """Whether a verified token satisfies every condition of ``match``. Pure."""
    if match.sub and subject not in match.sub:
        return False
    if match.groups and not set(match.groups) & set(_claim_list(claims.get("groups"))):
        return False
    return not match.scopes or set(match.scopes) <= set(scopes)


class ClientBook:
    """The configured clients (``clients`` and ``serve.mcp_tokens``), ready to admit requests."""

    def __init__(
        self,
        clients: Sequence[ClientSettings],
        mcp_tokens: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
    ) -> None:
        env = env or {}
        self._digests: list[tuple[bytes, Client]] = []
        self._matches: list[tuple[ClaimMatch, Client]] = []
        self.clients = tuple(clients)
        for index, spec in enumerate(clients):
            client = Client(spec.name, frozenset(spec.profiles))
            if spec.token is not None:
                token = _expanded(spec.token, env, f"clients[{index}].token")
                self._digests.append((hashlib.sha256(token.encode()).digest(), client))
            elif spec.token_sha256 is not None:
                self._digests.append((bytes.fromhex(spec.token_sha256), client))
            elif spec.match is not None:
                self._matches.append((spec.match, client))
        unnamed = Client(None, frozenset({DEFAULT_PROFILE}))
        for token in mcp_tokens:
            self._digests.append((hashlib.sha256(token.encode()).digest(), unnamed))

    @property
    def has_tokens(self) -> bool:
        return bool(self._digests)

    @property
    def has_claim_rules(self) -> bool:
        return bool(self._matches)

    def by_token(self, presented: str) -> Client | None:
        """The client whose static token this is; every token is compared every time."""
        digest = hashlib.sha256(presented.encode()).digest()
        found = None
        for known, client in self._digests:
            if hmac.compare_digest(digest, known):
                found = client
        return found

    def by_claims(self, subject: str | None, scopes: Sequence[str], claims: Mapping[str, Any]) -> Client:
        """The client an OAuth token stands for: the first matching entry (its profiles joined
        with every other match's), else an unnamed client (see the module docstring)."""
        matched = [client for match, client in self._matches if claims_match(match, subject, scopes, claims)]
        if matched:
            profiles = frozenset().union(*(client.profiles for client in matched))
            return Client(matched[0].name, profiles)
        if self._matches:
            return Client(subject, frozenset())
        return Client(subject, frozenset({DEFAULT_PROFILE}))

    def identity(
        self,
        client: Client,
        profile: str,
        *,
        subject: str | None = None,
        claims: Mapping[str, Any] | None = None,
        token: str | None = None,
    ) -> ClientIdentity:
        return ClientIdentity(
            name=client.name,
            profile=profile,
            subject=subject,
            claims=dict(claims or {}),
            token=SecretStr(token) if token else None,
        )
