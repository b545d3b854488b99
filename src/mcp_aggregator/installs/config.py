"""The ``registries:`` section: which MCP Registries (v0.1 API) servers are found and installed from."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_aggregator.settings.server_config import check_url

OFFICIAL_URL = "https://registry.modelcontextprotocol.io"
_SOURCE_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class McpRegistrySource(BaseModel):
    """One registry: a name to refer to it by and the base URL its ``/v0.1/...`` paths hang off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    url: str
    refresh_secs: float = Field(300.0, ge=0)
    """A search refreshes the stored copy (``updated_since``) when it is older than this."""
    timeout_secs: float = Field(10.0, gt=0)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _SOURCE_NAME.fullmatch(value):
            raise ValueError(f"must match ^[a-z][a-z0-9_-]*$, got {value!r}")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_url(value).rstrip("/")


DEFAULT_REGISTRIES = (McpRegistrySource(name="official", url=OFFICIAL_URL),)


def check_unique_sources(sources: tuple[McpRegistrySource, ...]) -> tuple[McpRegistrySource, ...]:
    """Raise ValueError naming the index of a repeated registry name."""
    seen: dict[str, int] = {}
    for index, source in enumerate(sources):
        if source.name in seen:
            raise ValueError(f"[{index}].name: duplicate registry name {source.name!r} (also [{seen[source.name]}])")
        seen[source.name] = index
    return sources
