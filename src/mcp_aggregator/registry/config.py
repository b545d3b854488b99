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

    Several replicas share one PostgreSQL registry: each follows the others' changes
    through ``LISTEN/NOTIFY`` (``change_feed``) and reconciles from the tables every
    ``reconcile_interval_secs`` in case a notification was missed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    database_url: str = "sqlite+aiosqlite:///./.aggregator/registry.db"
    pg_schema: str = Field("mcp", pattern=r"^[a-z_][a-z0-9_]*$", max_length=63)
    limits: Limits = Limits()
    change_feed: bool = True
    """On PostgreSQL, follow other replicas' registry changes (LISTEN/NOTIFY); SQLite never does."""
    reconcile_interval_secs: float = Field(30.0, gt=0, le=3600)
    """The safety net: reconcile from the tables this often even without a notification."""
