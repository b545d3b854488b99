"""Settings of the registry (the ``registry:`` section)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mcp_aggregator.registry.limits import Limits


class RegistrySettings(BaseModel):
    """Where the registry lives.

    ``database_url`` is a SQLAlchemy async URL: ``sqlite+aiosqlite:///path`` (the default,
    one embedded file; its folder is created) or ``postgresql+asyncpg://user@host/db``.
    On PostgreSQL the tables live in ``pg_schema`` (created by the migrations); SQLite
    has no schemas and ignores it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    database_url: str = "sqlite+aiosqlite:///./.aggregator/registry.db"
    pg_schema: str = Field("mcp", pattern=r"^[a-z_][a-z0-9_]*$", max_length=63)
    limits: Limits = Limits()
