"""Settings of the registry (the ``registry:`` section)."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_aggregator.registry.limits import Limits

LOST_AFTER_BEATS: Final = 3


class RegistrySettings(BaseModel):
    """Where the registry lives.

    ``database_url`` is a SQLAlchemy async URL: ``sqlite+aiosqlite:///path`` (the default,
    one embedded file; its folder is created) or ``postgresql+asyncpg://user@host/db``.
    On PostgreSQL the tables live in ``pg_schema`` (created by the migrations); SQLite
    has no schemas and ignores it.

    Several replicas share one PostgreSQL registry: each follows the others' changes
    through ``LISTEN/NOTIFY`` (``change_feed``) and reconciles from the tables every
    ``reconcile_interval_secs`` in case a notification was missed. Each writes a heartbeat
    (the ``replicas`` table) every ``heartbeat_secs``; one not seen for ``replica_lost_secs``
    is taken for lost, and a live one settles the calls it held for approval.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    database_url: str = "sqlite+aiosqlite:///./.aggregator/registry.db"
    pg_schema: str = Field("mcp", pattern=r"^[a-z_][a-z0-9_]*$", max_length=63)
    limits: Limits = Limits()
    change_feed: bool = True
    """On PostgreSQL, follow other replicas' registry changes (LISTEN/NOTIFY); SQLite never does."""
    reconcile_interval_secs: float = Field(30.0, gt=0, le=3600)
    """The safety net: reconcile from the tables this often even without a notification."""
    heartbeat_secs: float = Field(5.0, gt=0, le=300)
    """On PostgreSQL, how often this replica writes that it lives (its row of ``replicas``)."""
    replica_lost_secs: float | None = Field(None, gt=0, le=3600)
    """A replica not seen for this long is lost: its held calls are cancelled. None: three
    heartbeats (``LOST_AFTER_BEATS``); at least two, so one late beat loses no one."""

    @model_validator(mode="after")
    def _lost_after_two_beats(self) -> RegistrySettings:
        if self.replica_lost_secs is not None and self.replica_lost_secs < 2 * self.heartbeat_secs:
            raise ValueError(
                f"replica_lost_secs: must be at least twice heartbeat_secs ({2 * self.heartbeat_secs:g} s), "
                f"or a live replica whose beat is a little late is taken for lost; got {self.replica_lost_secs:g}"
            )
        return self

    @property
    def lost_after_secs(self) -> float:
        """How long a replica goes unseen before it is taken for lost."""
        if self.replica_lost_secs is not None:
            return self.replica_lost_secs
        return LOST_AFTER_BEATS * self.heartbeat_secs
