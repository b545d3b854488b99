"""The ``auth`` field of an upstream server, and the gateway-wide ``credentials`` section."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Grant(StrEnum):
    AUTHORIZATION_CODE = "authorization_code"
    """A person signs in once in a browser (the admin, through the gateway's callback)."""
    CLIENT_CREDENTIALS = "client_credentials"
    """Machine to machine: the gateway signs in with its own client id and secret."""


ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


class TokenExchange(BaseModel):
    """``auth.token_exchange``: each user's own ``/mcp`` bearer token is traded for their upstream
    token at the authorization server (RFC 8693) instead of a sign-in.

    ``true`` stands for every default. The gateway authenticates with ``auth.client_id`` and
    ``auth.client_secret`` and asks for ``resource``, else the server's (discovered) resource.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    audience: str | None = Field(default=None, min_length=1)
    """RFC 8693 ``audience``, sent when set (some authorization servers name targets this way)."""
    resource: str | None = None
    """RFC 8707 ``resource``; default: the one discovery found (the server's URL)."""
    scopes: tuple[str, ...] = ()
    """Scopes asked for; default: the server's (``auth.scopes``, else what it advertises)."""
    subject_token_type: str = ACCESS_TOKEN_TYPE
    """What the user's ``/mcp`` token is, as RFC 8693 §3 names token types."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if value is True:
            return {}
        return value

    @field_validator("resource")
    @classmethod
    def _resource(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
                raise ValueError(f"must be an absolute http(s) URL without a fragment, got {value!r}")
        return value

    @field_validator("scopes", mode="before")
    @classmethod
    def _scopes(cls, value: Any) -> Any:
        return _checked_scopes(value)

    @field_validator("subject_token_type")
    @classmethod
    def _token_type(cls, value: str) -> str:
        if not value.startswith("urn:") or any(c.isspace() for c in value):
            raise ValueError(f"must be a token type URN (RFC 8693 §3), e.g. {ACCESS_TOKEN_TYPE}, got {value!r}")
        return value


class UpstreamOAuth(BaseModel):
    """``auth: oauth`` (or ``auth: {type: oauth, ...}``) on an ``http`` or ``sse`` server.

    ``client_secret`` may hold ``${VAR}``; it stays unexpanded here and is expanded only
    when a token is requested. Without ``client_id`` the gateway registers itself with the
    authorization server (RFC 7591).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["oauth"] = "oauth"
    client_id: str | None = Field(default=None, min_length=1)
    client_secret: str | None = Field(default=None, min_length=1)
    scopes: tuple[str, ...] = ()
    grant: Grant = Grant.AUTHORIZATION_CODE
    per_user: bool = False
    """Each identified client's calls carry that user's own token (each user signs in once);
    the server's own sign-in serves only the gateway's connection and tool listing."""
    token_exchange: TokenExchange | None = None
    """With ``per_user``: users' tokens come from RFC 8693 token exchange, not a sign-in."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.strip().lower() != "oauth":
                raise ValueError(f"must be 'oauth' or a mapping with type: oauth, got {value!r}")
            return {"type": "oauth"}
        return value

    @field_validator("scopes", mode="before")
    @classmethod
    def _scopes(cls, value: Any) -> Any:
        return _checked_scopes(value)

    @field_validator("token_exchange", mode="before")
    @classmethod
    def _no_exchange(cls, value: Any) -> Any:
        return None if value is False else value

    @model_validator(mode="after")
    def _grant_needs(self) -> UpstreamOAuth:
        if self.grant is Grant.CLIENT_CREDENTIALS and not (self.client_id and self.client_secret):
            raise ValueError("grant client_credentials needs client_id and client_secret")
        if self.token_exchange is not None:
            if not self.per_user:
                raise ValueError("token_exchange needs per_user: true (it trades each user's own token)")
            if not (self.client_id and self.client_secret):
                raise ValueError("token_exchange needs client_id and client_secret (to authenticate the exchange)")
        elif self.per_user and self.grant is Grant.CLIENT_CREDENTIALS:
            raise ValueError("per_user needs grant authorization_code (each user signs in) or token_exchange")
        if self.client_secret and not self.client_id:
            raise ValueError("client_secret given without client_id")
        return self

    def stored(self) -> dict[str, Any]:
        """As the registry keeps it (``client_secret`` unexpanded)."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=False)


def _checked_scopes(value: Any) -> Any:
    if isinstance(value, str):
        value = value.split()
    if isinstance(value, list | tuple):
        for scope in value:
            if not isinstance(scope, str) or not scope or any(c.isspace() or c == '"' for c in scope):
                raise ValueError(f"each scope must be a non-empty word without spaces or quotes, got {scope!r}")
    return value


class CredentialsSettings(BaseModel):
    """``credentials:``, how the gateway signs in to OAuth-protected upstreams."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    callback_url: str | None = None
    """Where authorization servers send the admin's browser back (``.../oauth/callback``).
    Unset: the address the admin API was reached at, plus ``/oauth/callback``."""
    refresh_ahead_secs: float = Field(default=60.0, ge=0)
    """An access token this close to its expiry is refreshed before it is used."""
    sign_in_ttl_secs: float = Field(default=600.0, gt=0)
    """How long a started sign-in may take before its callback is refused."""
    http_timeout_secs: float = Field(default=30.0, gt=0)
    """Discovery, registration and token requests to authorization servers."""

    @field_validator("callback_url")
    @classmethod
    def _callback(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"must be an absolute http(s) URL, got {value!r}")
        return value
