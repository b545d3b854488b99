"""The gateway's typed settings, parsed once and handed down section by section."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from mcp_aggregator.aggregate.config import AggregatorSettings
from mcp_aggregator.approvals.config import ApprovalRule, check_approval_rules
from mcp_aggregator.audit.config import AuditSettings
from mcp_aggregator.code_mode.config import CodeModeSettings
from mcp_aggregator.credentials.config import CredentialsSettings
from mcp_aggregator.facades.config import FacadeSettings, check_facade_settings
from mcp_aggregator.guardrails.config import GuardrailRule, check_profile_rules, check_rule_names
from mcp_aggregator.health.config import HealthSettings
from mcp_aggregator.identity.client_identity import DEFAULT_PROFILE
from mcp_aggregator.identity.config import (
    ClientSettings,
    PolicyRule,
    ProfileSettings,
    ToolOverride,
    check_identity_settings,
)
from mcp_aggregator.installs.config import DEFAULT_REGISTRIES, McpRegistrySource, check_unique_sources
from mcp_aggregator.registry.config import RegistrySettings
from mcp_aggregator.search.config import SearchSettings
from mcp_aggregator.settings.security_settings import SecuritySettings
from mcp_aggregator.settings.serve_settings import ServeSettings
from mcp_aggregator.settings.server_config import ServerConfig


class Settings(BaseModel):
    """Everything the gateway needs; each part receives only its own section."""

    model_config = ConfigDict(extra="forbid")

    servers: tuple[ServerConfig, ...] = ()
    serve: ServeSettings = Field(default_factory=ServeSettings)
    aggregator: AggregatorSettings = Field(default_factory=AggregatorSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    registry: RegistrySettings = Field(default_factory=RegistrySettings)
    health: HealthSettings = Field(default_factory=HealthSettings)
    security: SecuritySettings = Field(default_factory=SecuritySettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    credentials: CredentialsSettings = Field(default_factory=CredentialsSettings)
    code_mode: CodeModeSettings = Field(default_factory=CodeModeSettings)
    facades: FacadeSettings = Field(default_factory=FacadeSettings)
    profiles: tuple[ProfileSettings, ...] = ()
    clients: tuple[ClientSettings, ...] = ()
    policies: tuple[PolicyRule, ...] = ()
    tool_overrides: tuple[ToolOverride, ...] = ()
    approvals: tuple[ApprovalRule, ...] = ()
    """Calls a person must approve before they go upstream (``docs/approvals.md``)."""
    _source_path: Path | None = PrivateAttr(default=None)

    @property
    def source_path(self) -> Path | None:
        """The file these settings were read from (no sandboxed server may see it), if any."""
        return self._source_path

    @source_path.setter
    def source_path(self, path: Path | None) -> None:
        self._source_path = path

    registries: tuple[McpRegistrySource, ...] = DEFAULT_REGISTRIES
    """MCP Registries to search and install from (``registry search`` / ``registry add``)."""

    @field_validator("registries")
    @classmethod
    def _registries(cls, value: tuple[McpRegistrySource, ...]) -> tuple[McpRegistrySource, ...]:
        return check_unique_sources(value)

    guardrails: tuple[GuardrailRule, ...] | None = None
    """None (no section): ``DEFAULT_RULES``, secrets masked in results; ``[]``: no rules."""

    @model_validator(mode="after")
    def _guardrail_names(self) -> Settings:
        check_rule_names(self.guardrails or (), "guardrails")
        check_profile_rules(self.guardrails, [profile.guardrails for profile in self.profiles])
        return self

    @model_validator(mode="after")
    def _approvals(self) -> Settings:
        check_approval_rules(
            self.approvals, [(p.name, p.approvals) for p in self.profiles], default_profile=DEFAULT_PROFILE
        )
        return self

    @model_validator(mode="after")
    def _identity(self) -> Settings:
        check_identity_settings(self.profiles, self.clients, self.policies, self.tool_overrides, self.serve)
        return self

    @model_validator(mode="after")
    def _facades(self) -> Settings:
        servers = {server.name for server in self.servers}
        check_facade_settings(self.facades, servers, audit_enabled=self.audit.enabled)
        return self

    @model_validator(mode="after")
    def _embedding_cache_in_data_dir(self) -> Settings:
        """Persist embeddings next to the registry by default, so a restart re-embeds nothing."""
        if self.search.cache_path is None and self.search.embedder != "none":
            cache = self.serve.data_dir / "embeddings.db"
            self.search = self.search.model_copy(update={"cache_path": cache})
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> Settings:
        seen: dict[str, int] = {}
        for index, server in enumerate(self.servers):
            if server.name in seen:
                raise ValueError(
                    f"servers[{index}].name: duplicate server name {server.name!r} (also servers[{seen[server.name]}])"
                )
            seen[server.name] = index
        return self
