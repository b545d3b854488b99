"""The gateway's typed settings, parsed once and handed down section by section."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_aggregator.settings.serve_settings import ServeSettings
from mcp_aggregator.settings.server_config import ServerConfig


class Settings(BaseModel):
    """Everything the gateway needs; each part receives only its own section."""

    model_config = ConfigDict(extra="forbid")

    servers: tuple[ServerConfig, ...] = ()
    serve: ServeSettings = Field(default_factory=ServeSettings)
    aggregator: dict[str, Any] = Field(default_factory=dict)
    search: dict[str, Any] = Field(default_factory=dict)
    registry: dict[str, Any] = Field(default_factory=dict)
    health: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_names(self) -> Settings:
        seen: dict[str, int] = {}
        for index, server in enumerate(self.servers):
            if server.name in seen:
                raise ValueError(
                    f"servers[{index}].name: duplicate server name {server.name!r} "
                    f"(also servers[{seen[server.name]}])"
                )
            seen[server.name] = index
        return self
