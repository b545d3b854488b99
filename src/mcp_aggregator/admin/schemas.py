"""The admin API's request and response bodies; separate from tables and domain records."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_aggregator.credentials import AuthStatus
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.registry import TransportType
from mcp_aggregator.settings.server_config import MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH, NAME_PATTERN


class ConnectionConfig(BaseModel):
    """Transport-specific fields: STDIO ``command`` (+ ``args``, ``env``, ``cwd``), SSE ``url``,
    HTTP ``base_url``, OPENAPI ``spec`` (+ ``base_url``, ``operations``), A2A ``base_url``
    (+ ``headers`` for all but STDIO). ``${VAR}`` references stay unexpanded."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    base_url: str | None = None
    spec: str | None = Field(default=None, description="OPENAPI: the document's URL or file (JSON or YAML)")
    operations: list[str] | None = Field(
        default=None, description="OPENAPI: the operations to offer (operationId or 'METHOD /path'); all if unset"
    )
    headers: dict[str, str] | None = None
    security: dict[str, str] | None = Field(
        default=None,
        description="OPENAPI/A2A: a secret per security scheme of the document or agent card ({name: '${VAR}'})",
    )
    auth: str | dict[str, Any] | None = Field(
        default=None,
        description="HTTP/SSE only: 'oauth', or {type: oauth, client_id, client_secret, scopes, grant}",
    )
    cache: dict[str, Any] | None = Field(
        default=None, description="Opt-in tool result cache: {ttl_secs: > 0, tools: [globs]} (docs/caching.md)"
    )
    sandbox: dict[str, Any] | None = Field(
        default=None,
        description="STDIO only: {enabled, read, write, network, memory_mb, processes, cpu_secs} (docs/security.md)",
    )


class ServerCreate(BaseModel):
    """A registration (BR-001). The rules are ``ServerConfig``'s: the schema only documents them,
    so that the API and the config file refuse the same input with the same message."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "github-mcp",
                    "description": "GitHub MCP Server",
                    "transport_type": "SSE",
                    "connection_config": {
                        "url": "https://github-mcp.example.com/sse",
                        "headers": {"Authorization": "Bearer ${TOKEN}"},
                    },
                    "health_check_url": "https://github-mcp.example.com/health",
                    "auto_connect": True,
                }
            ]
        },
    )

    name: str = Field(json_schema_extra={"pattern": NAME_PATTERN.pattern, "maxLength": MAX_NAME_LENGTH})
    description: str | None = Field(default=None, json_schema_extra={"maxLength": MAX_DESCRIPTION_LENGTH})
    transport_type: str = Field(description="STDIO, SSE, HTTP, OPENAPI or A2A, in any case")
    connection_config: ConnectionConfig
    health_check_url: str | None = Field(default=None, description="An absolute http(s) URL")
    auto_connect: bool = False


class ToolPublic(BaseModel):
    """A discovered tool. ``pin_status`` is ``approved`` for a served tool; ``changed`` or ``new``
    for one held by definition pinning, ``flagged`` for an approved definition a guardrail's
    finding holds; a held one has the trusted and the pending definition to compare."""

    id: str
    name: str = Field(description="Namespaced: {server}.{original_name}")
    original_name: str
    description: str | None
    input_schema: dict[str, Any]
    server_id: str
    skill_ids: list[str]
    primary_skill_id: str | None
    is_classified: bool
    pin_status: str | None = Field(
        default=None, description="approved | changed | flagged | new; null when pinning is off"
    )
    approved_definition: dict[str, Any] | None = None
    pending_definition: dict[str, Any] | None = None
    hold_reasons: list[str] = Field(
        default_factory=list, description="Why a guardrail holds the pending definition (empty: pinning alone does)"
    )


class ToolApproval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(default_factory=list, description="Original tool names; empty approves every held tool")


class ToolApprovalResult(BaseModel):
    approved: list[str]


class ServerPublic(BaseModel):
    """A server in lists and in the registration answer; the status is the live one."""

    id: str
    name: str
    status: ServerStatus
    transport_type: TransportType
    tool_count: int
    registered_at: datetime
    last_health_check: datetime | None
    consecutive_failures: int
    response_time_ms: float | None
    error_message: str | None
    auth_status: AuthStatus = Field(
        default=AuthStatus.NOT_REQUIRED,
        description="not_required (no auth: oauth), sign_in_required, signed_in or refresh_failed",
    )
    tools: list[ToolPublic] | None = Field(default=None, description="Only with include_tools=true")
    origin: OriginPublic | None = Field(
        default=None, description="The MCP Registry entry this server was installed from (registry add)"
    )
    stderr_tail: list[str] = Field(
        default_factory=list,
        description=(
            "STDIO only: the last lines (at most 20 of 300 characters, secrets scrubbed) the server wrote to "
            "stderr when it last failed to start or ended; empty once it connects"
        ),
    )


class OriginPublic(BaseModel):
    registry: str = Field(description="The registries: name, or 'file' for a server.json file")
    name: str
    version: str


class SandboxHintPublic(BaseModel):
    path: str = Field(description="The path, absolute, as the host has it")
    access: Literal["read", "write"] = Field(description="What the grant must allow")
    given_as: str = Field(description="Where the server was given it: command, args[N], env.NAME or cwd")
    grant: str = Field(
        description="The exact YAML line to add to the server's entry, e.g. sandbox: {read: [/srv/repo]}"
    )


class ServerDetail(ServerPublic):
    """One server; secrets in ``connection_config`` and URLs are redacted."""

    description: str | None
    health_check_url: str | None
    connected_at: datetime | None
    last_error: str | None
    connection_config: dict[str, Any]
    source: str
    pending_requests: int
    era: dict[str, Any] | None = Field(
        default=None,
        description="The protocol era spoken to the upstream, why, and its 2025-11-25 side session (docs/eras.md)",
    )
    sandbox: dict[str, Any] | None = Field(
        default=None,
        description=(
            "STDIO only: the sandbox as its last start applied it (enabled, read and write resolved, cwd: "
            "the working directory it may read, network after any fallback, memory_mb, processes, cpu_secs), "
            "what it could not confine (warnings) and the limit that ended the server (limit_hit)"
        ),
    )
    sandbox_hints: list[SandboxHintPublic] = Field(
        default_factory=list,
        description=(
            "STDIO only: paths the server was given that exist on the host but its sandbox hid when it last "
            "failed to start, each with the line to add to its entry (also said in error_message)"
        ),
    )


class ConnectResult(BaseModel):
    status: ServerStatus
    message: str


class DisconnectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    force: bool = Field(default=False, description="Cancel in-flight calls instead of draining them")


class DisconnectResult(BaseModel):
    status: ServerStatus
    pending_requests: int = Field(description="In-flight calls waited for (or cancelled with force)")


class ToolCallRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallResult(BaseModel):
    """The upstream's ``CallToolResult``; a tool error is a 200 with ``isError`` (BR-005)."""

    model_config = ConfigDict(extra="allow")

    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None = Field(default=None, alias="structuredContent")
    is_error: bool = Field(default=False, alias="isError")


class IndexingPublic(BaseModel):
    """Tool texts embedded so far for the search index, of those a (cold) indexing needs."""

    embedded: int
    total: int


class StatePublic(BaseModel):
    """Server counts partition ``total_servers``; ``last_sync`` is the latest tool discovery;
    ``indexing`` is set while new tools are being embedded for search."""

    total_servers: int
    connected_servers: int
    degraded_servers: int
    connecting_servers: int
    disconnected_servers: int
    error_servers: int
    total_tools: int
    exposed_tools: int
    classified_tools: int
    unclassified_tools: int
    last_sync: datetime | None
    indexing: IndexingPublic | None = None


class SearchHitPublic(BaseModel):
    name: str = Field(description="Namespaced: {server}.{original_name}")
    server: str
    original_name: str
    description: str
    score: float
    skill_ids: list[str]


class SkillPublic(BaseModel):
    id: str
    name: str
    description: str


class SignInStart(BaseModel):
    authorization_url: str = Field(
        description="Open it in a browser; the authorization server sends it back to /oauth/callback"
    )
