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
        if isinstance(value, str):
            value = value.split()
        if isinstance(value, list | tuple):
            for scope in value:
                if not isinstance(scope, str) or not scope or any(c.isspace() or c == '"' for c in scope):
                    raise ValueError(f"each scope must be a non-empty word without spaces or quotes, got {scope!r}")
        return value

    @model_validator(mode="after")
    def _grant_needs(self) -> UpstreamOAuth:
        if self.grant is Grant.CLIENT_CREDENTIALS and not (self.client_id and self.client_secret):
            raise ValueError("grant client_credentials needs client_id and client_secret")
        if self.per_user and self.grant is Grant.CLIENT_CREDENTIALS:
            raise ValueError("per_user needs grant authorization_code (each user signs in)")
        if self.client_secret and not self.client_id:
            raise ValueError("client_secret given without client_id")
        return self

    def stored(self) -> dict[str, Any]:
        """As the registry keeps it (``client_secret`` unexpanded)."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=False)


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
