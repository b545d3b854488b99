"""How the gateway faces its clients: MCP transport, exposure, names, admin access."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mcp_aggregator.sandbox.config import SandboxConfig
from mcp_aggregator.settings.exposure import Exposure, FacadeGrouping, ToolNames
from mcp_aggregator.settings.server_config import check_url

__all__ = [
    "Exposure",
    "FacadeGrouping",
    "OAuthSettings",
    "RateLimitSettings",
    "ServeSettings",
    "ToolNames",
]


class OAuthSettings(BaseModel):
    """``/mcp`` as an OAuth 2.1 resource server: JWT access tokens checked against the issuer's JWKS."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    issuer: str
    """The ``iss`` every token must carry, and the authorization server named in the
    Protected Resource Metadata."""
    audience: str
    """The ``aud`` every token must carry (usually the public URL of ``/mcp``)."""
    jwks_url: str
    required_scopes: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = ("RS256", "ES256", "PS256", "EdDSA")
    leeway_secs: float = Field(default=30.0, ge=0, le=300)
    """Clock skew tolerated on ``exp`` and ``nbf``."""

    @field_validator("issuer", "jwks_url")
    @classmethod
    def _urls(cls, value: str) -> str:
        return check_url(value)

    @field_validator("audience")
    @classmethod
    def _audience(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # Symmetric and "none" algorithms make no sense against a public JWKS, and
        # accepting them is the classic JWT algorithm-confusion hole.
        allowed = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
        bad = [a for a in value if a not in allowed]
        if bad or not value:
            raise ValueError(f"must be asymmetric JWS algorithms from {sorted(allowed)}, got {list(value)}")
        return value


class RateLimitSettings(BaseModel):
    """Per client (token, else address) on ``/mcp`` and the REST API."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_minute: int = Field(ge=1, le=1_000_000)
    burst: int | None = Field(default=None, ge=1, le=1_000_000)
    """Requests allowed at once; refilled at ``requests_per_minute``. Defaults to a tenth
    of ``requests_per_minute`` (at least 1)."""

    @property
    def burst_size(self) -> int:
        return self.burst if self.burst is not None else max(1, self.requests_per_minute // 10)


class ServeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    exposure: Exposure = Exposure.FACADES
    facade_grouping: FacadeGrouping = FacadeGrouping.SERVER
    upstream_domains: bool = True
    upstream_domains_max_chars: int = Field(default=12_000, ge=0)
    """Upstream domains are listed only while their definitions fit in this many characters
    (about 3,000 tokens); past that, clients reach upstream tools through ``tools``."""
    name_separator: str = "__"
    tool_names: ToolNames = ToolNames.NAMESPACED
    """``namespaced``: passthrough lists ``server__tool``; ``original``: a tool whose name no other
    server uses (and clients accept) keeps its own name, so a single-server gateway is
    indistinguishable from its server; shared names stay namespaced."""
    max_name_length: int = Field(default=64, ge=16, le=128)
    admin_token: str | None = Field(default=None, min_length=16)
    """The REST API and web page want it as a bearer token. When unset, a random one is made at
    first start and kept in ``data_dir/admin_token`` (mode 0600)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (``name`` for any port, or ``name:port``) accepted besides the bound host and
    loopback names; every other ``Host`` header gets 421 (DNS-rebinding defence)."""
    allowed_origins: tuple[str, ...] = ()
    """Origins (``scheme://host[:port]``) accepted besides the gateway's own; others get 403."""
    mcp_tokens: tuple[str, ...] = ()
    """Static bearer tokens ``/mcp`` clients may send (compared in constant time)."""
    oauth: OAuthSettings | None = None
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    """The largest request body the REST API takes (413 beyond)."""
    mcp_max_body_bytes: int = Field(default=16_777_216, ge=1024)
    """The largest JSON-RPC message body ``/mcp`` takes (413 beyond)."""
    rate_limit: RateLimitSettings | None = None
    drain_timeout_secs: float = Field(default=30.0, ge=0)
    http_json_response: bool = False
    """Answer each HTTP request with one JSON body instead of an SSE stream: about 1.5 ms
    faster per call, but progress notifications of a running call cannot be relayed."""
    session_idle_secs: float = Field(default=300.0, gt=0, le=86_400, allow_inf_nan=False)
    """A handshake-era (2025-11-25) HTTP session with no request in flight for this long is
    closed, and its client must initialize again; an abandoned session holds about 50 KB
    until then (see docs/recovery.md)."""
    replica_url: str | None = None
    """The base URL (``http[s]://host[:port]``) other replicas reach this one at: a
    2026-07-28 retry a balancer sends elsewhere is sent on to the replica whose call it
    continues. Default: the bound address, unless it is a wildcard (``0.0.0.0``, ``::``),
    whose retries balanced away are refused (the client calls again)."""
    session_keys: tuple[str, ...] = ()
    """Keys (32 bytes, url-safe base64; ``${VAR}`` taken from the environment) sealing
    handshake-era session ids and the gateway's ``requestState``: the first seals, all open.
    Empty (default): the registry's own keys, made and rotated by the gateway and shared by
    every replica on the same registry (docs/replicas.md)."""
    session_max_age_secs: float = Field(default=86_400.0, ge=60, le=30 * 86_400, allow_inf_nan=False)
    """A sealed session id older than this no longer resumes on a replica that does not hold
    the session (it answers 404: initialize again)."""
    http_stateless: bool = False
    """Serve streamable HTTP without protocol sessions, so any replica can answer any request;
    handshake-era clients then get no list-changed notifications."""
    list_ttl_secs: float = Field(default=60.0, ge=0, le=86_400, allow_inf_nan=False)
    """How long a 2026-07-28 client may keep a list the gateway served (SEP-2549 ``ttlMs``);
    the gateway's ``list_changed`` evicts it sooner. 0: every list is stale at once."""
    connect_concurrency: int | None = Field(default=None, ge=1, le=1024)
    """How many upstreams may be making a connection (process start, handshake, first listing)
    at once; the others wait their turn, CONNECTING. ``None``: twice the CPU cores (at least
    4), so that a start with many stdio servers does not starve the gateway itself."""
    list_wait_secs: float = Field(default=10.0, ge=0)
    """How long ``tools/list`` (and a call to a tool not known yet) waits for upstreams still
    making their first connection."""
    max_result_bytes: int = Field(default=64 << 20, ge=1024)
    """The largest message an upstream may answer with (64 MiB by default); a larger result fails
    its own call with a clear error and the session stays up."""
    result_cache_bytes: int = Field(default=128 << 20, ge=1 << 20, le=1 << 40)
    """How much the tool result cache (servers' ``cache:``) holds, as the results' JSON
    (128 MiB by default, at least 1 MiB): past it the least recently used results go, and a
    result larger than all of it is not cached."""
    fast_path: bool = True
    """Passthrough ``tools/call`` from 2026-07-28 clients that need nothing but the answer are
    forwarded as raw JSON-RPC (no SDK models on the way); everything else takes the full
    pipeline. ``false`` sends every call through the full pipeline."""
    input_wait_secs: float = Field(default=300.0, gt=0)
    """How long a call that asked a 2026-07-28 client for input (sampling, elicitation, roots)
    waits for the client's retry before the upstream's question is answered with an error."""
    data_dir: Path = Path(".aggregator")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """The sandbox every stdio server gets unless its own ``sandbox:`` says otherwise."""
    workspace_roots: tuple[Path, ...] = ()

    @property
    def connect_limit(self) -> int:
        """``connect_concurrency``, or its default for this machine."""
        if self.connect_concurrency is not None:
            return self.connect_concurrency
        return max(4, 2 * (os.cpu_count() or 1))

    @field_validator("mcp_tokens")
    @classmethod
    def _mcp_tokens(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, token in enumerate(value):
            if len(token) < 16:
                raise ValueError(f"[{index}]: a token must be at least 16 characters, got {len(token)}")
            if not token.isascii() or any(c.isspace() or not c.isprintable() for c in token):
                raise ValueError(f"[{index}]: a token must be printable ASCII without spaces")
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if not entry or "/" in entry or any(c.isspace() for c in entry) or entry != entry.lower():
                raise ValueError(f"must be lowercase host names or host:port, got {entry!r}")
        return value

    @field_validator("allowed_origins")
    @classmethod
    def _allowed_origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            scheme, sep, rest = entry.partition("://")
            if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
                raise ValueError(f"must be origins like https://host[:port] (no path), got {entry!r}")
        return value

    @field_validator("replica_url")
    @classmethod
    def _replica_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        scheme, sep, rest = value.partition("://")
        if scheme not in ("http", "https") or not sep or not rest or "/" in rest or any(c.isspace() for c in rest):
            raise ValueError(f"must be a base URL like http://10.0.0.5:8765 (no path), got {value!r}")
        return value

    @model_validator(mode="after")
    def _no_token_reuse(self) -> ServeSettings:
        if self.admin_token is not None and self.admin_token in self.mcp_tokens:
            raise ValueError("mcp_tokens: must not contain the admin token")
        return self

    @field_validator("name_separator")
    @classmethod
    def _separator(cls, value: str) -> str:
        if not value or any(not (c.isalnum() or c in "_-.") for c in value) or not value.isascii():
            raise ValueError(f"must be a non-empty run of [A-Za-z0-9_.-], got {value!r}")
        return value
