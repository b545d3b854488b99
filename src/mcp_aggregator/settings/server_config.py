"""One upstream server's configuration, validated as the service contract (BR-001) asks."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_aggregator.caching.config import ResultCacheConfig
from mcp_aggregator.credentials.config import UpstreamOAuth
from mcp_aggregator.sandbox.config import SandboxConfig

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]*$")
MAX_NAME_LENGTH = 255
MAX_DESCRIPTION_LENGTH = 1000
HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
"""RFC 9110 ``token``: the only characters a header name may have."""
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class Transport(StrEnum):
    STDIO = "stdio"
    SSE = "sse"
    HTTP = "http"
    OPENAPI = "openapi"
    """A REST API, from its OpenAPI document (``spec``); see ``bridges``."""
    A2A = "a2a"
    """An A2A agent, from its agent card at ``base_url``; see ``bridges``."""


BRIDGED = frozenset({Transport.OPENAPI, Transport.A2A})
"""Transports the gateway serves through an in-process MCP server of its own."""
_HTTP_METHODS = frozenset({"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"})


def check_url(value: str) -> str:
    """Accept only absolute http(s) URLs with a host; raise ValueError otherwise."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an absolute http(s) URL, got {value!r}")
    return value


class ServerOrigin(BaseModel):
    """Where an installed server came from: an MCP Registry entry at a pinned version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    registry: str = Field(min_length=1, max_length=255)
    """The ``registries:`` name, or ``file`` for a ``server.json`` installed from a file."""
    name: str = Field(min_length=1, max_length=255)
    version: str = Field(min_length=1, max_length=255)
    arguments: dict[str, str] = Field(default_factory=dict)
    """The ``--arg`` values given at install (never secret ones), for ``registry update``."""


class ServerConfig(BaseModel):
    """An upstream MCP server. ``${VAR}`` in ``env`` and ``headers`` stays unexpanded here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    transport: Transport
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_LENGTH)
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    base_url: str | None = None
    spec: str | None = None
    """openapi: the document's URL or file (JSON or YAML, OpenAPI 3.0 or 3.1)."""
    operations: tuple[str, ...] | None = None
    """openapi: the operations to offer (``operationId`` or ``"METHOD /path"``); all if unset."""
    headers: dict[str, str] = Field(default_factory=dict)
    security: dict[str, str] = Field(default_factory=dict)
    """openapi/a2a: a secret (``${VAR}`` allowed) per security scheme the document or card names."""
    health_check_url: str | None = None
    tool_timeout_secs: float = Field(default=60.0, gt=0)
    connect_timeout_secs: float = Field(default=30.0, gt=0)
    enabled: bool = True
    protocol: Literal["auto", "legacy"] = "auto"
    """``auto`` negotiates 2026-07-28 and falls back to the 2025-11-25 handshake; ``legacy``
    goes straight to the handshake, for servers that mishandle the discovery probe."""
    auth: UpstreamOAuth | None = None
    """``oauth``: the gateway signs in to this server; see ``credentials`` (an openapi/a2a
    server signs in where its document's or card's ``oauth2`` security scheme says)."""
    sandbox: SandboxConfig | None = None
    """stdio only: what the server's sandbox grants beyond ``serve.sandbox``'s defaults."""
    origin: ServerOrigin | None = None
    """Set by ``registry add``: the registry entry and version this server was installed from."""
    cache: ResultCacheConfig | None = None
    """Opt-in: successful results of the tools it covers are kept ``ttl_secs`` per client scope."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if len(value) > MAX_NAME_LENGTH:
            raise ValueError(f"must be at most {MAX_NAME_LENGTH} characters, got {len(value)}")
        if not NAME_PATTERN.fullmatch(value):
            raise ValueError(f"must match ^[a-z][a-z0-9_-]*$ (lowercase, start with a letter), got {value!r}")
        return value

    @field_validator("transport", mode="before")
    @classmethod
    def _transport(cls, value: Any) -> Any:
        if isinstance(value, str):
            lowered = value.strip().lower()
            aliases = {"streamable-http": "http", "streamable_http": "http", "streamablehttp": "http"}
            lowered = aliases.get(lowered, lowered)
            if lowered not in {t.value for t in Transport}:
                raise ValueError(f"must be one of stdio, sse, http, openapi, a2a, got {value!r}")
            return lowered
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        # CR/LF in a name or value would let one header smuggle others into upstream requests.
        for name, header in value.items():
            if not HEADER_NAME.fullmatch(name):
                raise ValueError(f"header name {name!r} is not a valid HTTP header name (no spaces, CR/LF, ':')")
            if _CONTROL.search(header):
                raise ValueError(f"header {name!r}: the value must not contain CR, LF or other control characters")
        return value

    @field_validator("security")
    @classmethod
    def _security(cls, value: dict[str, str]) -> dict[str, str]:
        for name, secret in value.items():
            if not name.strip():
                raise ValueError("a security scheme name must not be empty")
            if not secret or _CONTROL.search(secret):
                raise ValueError(f"{name}: the secret must be non-empty, without CR, LF or other control characters")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            if not name or "=" in name or "\x00" in name or "\x00" in item:
                raise ValueError(f"env {name!r}: names must be non-empty without '=' or NUL, values without NUL")
        return value

    @field_validator("url", "base_url", "health_check_url")
    @classmethod
    def _urls(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)

    @field_validator("spec")
    @classmethod
    def _spec(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("must be a URL or a file path, got an empty string")
        scheme = urlsplit(value).scheme
        return check_url(value) if scheme in ("http", "https") or "://" in value else value

    @field_validator("operations")
    @classmethod
    def _operations(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("must name at least one operation (leave it out to offer them all)")
        for index, item in enumerate(value):
            method, _, path = item.strip().partition(" ")
            if not item.strip():
                raise ValueError(f"[{index}]: an empty name")
            if path and (method.upper() not in _HTTP_METHODS or not path.strip().startswith("/")):
                raise ValueError(f"[{index}]: {item!r} is neither an operationId nor 'METHOD /path'")
        if len(set(value)) != len(value):
            raise ValueError("names an operation twice")
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> ServerConfig:
        required = {
            Transport.STDIO: "command",
            Transport.SSE: "url",
            Transport.HTTP: "base_url",
            Transport.OPENAPI: "spec",
            Transport.A2A: "base_url",
        }
        allowed = {Transport.OPENAPI: {"spec", "base_url", "operations"}}.get(
            self.transport, {required[self.transport]}
        )
        needed = required[self.transport]
        if not getattr(self, needed):
            raise ValueError(f"{needed}: required for transport {self.transport.value}")
        for field in ("command", "url", "base_url", "spec", "operations"):
            if field not in allowed and getattr(self, field):
                raise ValueError(f"{field}: not allowed for transport {self.transport.value}")
        if self.transport is not Transport.STDIO and (self.args or self.env or self.cwd):
            raise ValueError(f"args/env/cwd: only allowed for transport stdio, not {self.transport.value}")
        if self.transport is Transport.STDIO and self.headers:
            raise ValueError("headers: not allowed for transport stdio")
        if self.transport is not Transport.STDIO and self.sandbox is not None:
            raise ValueError(f"sandbox: only allowed for transport stdio, not {self.transport.value}")
        if self.transport is Transport.STDIO and self.auth is not None:
            raise ValueError(
                "auth: only allowed for transport http, sse, openapi or a2a (a stdio server gets its secrets in env)"
            )
        if self.security and self.transport not in BRIDGED:
            raise ValueError(f"security: only allowed for transport openapi or a2a, not {self.transport.value}")
        if self.transport in BRIDGED and self.auth is not None and self.auth.per_user:
            # A bridge's requests are made by its own in-process server, away from the caller.
            raise ValueError(f"auth: per_user is not available for transport {self.transport.value}")
        if self.auth is not None and any(name.lower() == "authorization" for name in self.headers):
            raise ValueError("headers: an Authorization header cannot be combined with auth: oauth")
        return self

    def connection_config(self) -> dict[str, Any]:
        """The transport-specific part, as the registry stores it (unexpanded)."""
        origin = {"origin": self.origin.model_dump()} if self.origin is not None else {}
        if self.transport is Transport.STDIO:
            out: dict[str, Any] = {"command": self.command, "args": list(self.args), "env": dict(self.env)}
            if self.cwd:
                out["cwd"] = self.cwd
            if self.sandbox is not None:
                out["sandbox"] = self.sandbox.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
            if self.cache is not None:
                out["cache"] = self.cache.stored()
            return {**out, **origin}
        keys = {Transport.SSE: ("url",), Transport.OPENAPI: ("spec", "base_url", "operations")}
        remote: dict[str, Any] = {
            key: list(value) if isinstance(value, tuple) else value
            for key in keys.get(self.transport, ("base_url",))
            if (value := getattr(self, key)) is not None
        }
        remote["headers"] = dict(self.headers)
        if self.security:
            remote["security"] = dict(self.security)
        if self.auth is not None:
            remote["auth"] = self.auth.stored()
        if self.cache is not None:
            remote["cache"] = self.cache.stored()
        return {**remote, **origin}
