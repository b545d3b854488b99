"""What the gateway knows about one upstream's sign-in, as plain frozen values (pure)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any


class AuthStatus(StrEnum):
    """Where a server's sign-in stands, as the admin API shows it."""

    NOT_REQUIRED = "not_required"
    SIGN_IN_REQUIRED = "sign_in_required"
    SIGNED_IN = "signed_in"
    REFRESH_FAILED = "refresh_failed"


@dataclass(frozen=True, slots=True)
class AuthServer:
    """What discovery found: the authorization server's endpoints and the resource to name."""

    issuer: str
    token_endpoint: str
    resource: str
    """RFC 8707 resource indicator sent with every authorization and token request."""
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scope: str | None = None
    """The scopes asked for (configured, else what the resource or its server advertises)."""


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """The gateway's client at that authorization server (configured or registered)."""

    client_id: str
    client_secret: str | None = None
    auth_method: str = "client_secret_post"
    """``client_secret_post``, ``client_secret_basic`` or ``none``."""
    redirect_uri: str | None = None
    registered: bool = False
    """Made by dynamic registration (RFC 7591), so it may be made again for another redirect."""


@dataclass(frozen=True, slots=True)
class TokenSet:
    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None
    """Seconds since the epoch; None: the server did not say."""
    scope: str | None = None

    def expires_within(self, secs: float, now: float) -> bool:
        return self.expires_at is not None and self.expires_at - secs <= now


@dataclass(frozen=True, slots=True)
class Credential:
    """One server's (or, per user, one subject's) sign-in state; secrets included."""

    status: AuthStatus = AuthStatus.SIGN_IN_REQUIRED
    server: AuthServer | None = None
    client: ClientInfo | None = None
    tokens: TokenSet | None = None

    def with_tokens(self, tokens: TokenSet) -> Credential:
        return replace(self, status=AuthStatus.SIGNED_IN, tokens=tokens)

    def to_json(self) -> str:
        return json.dumps({"server": _opt(self.server), "client": _opt(self.client), "tokens": _opt(self.tokens)})

    @classmethod
    def from_json(cls, status: AuthStatus, text: str) -> Credential:
        data: dict[str, Any] = json.loads(text)
        return cls(
            status=status,
            server=AuthServer(**data["server"]) if data.get("server") else None,
            client=ClientInfo(**data["client"]) if data.get("client") else None,
            tokens=TokenSet(**data["tokens"]) if data.get("tokens") else None,
        )


def _opt(value: Any) -> dict[str, Any] | None:
    return None if value is None else asdict(value)
