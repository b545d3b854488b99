"""Settings of the audit trail (the ``audit:`` section)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AuditSettings(BaseModel):
    """What the audit trail keeps, and how it writes.

    Every call through the relay's pipeline is recorded (time, client, profile, method,
    server, tool, outcome, duration, a digest of the arguments, request id) in the registry's
    database. Records are queued in memory and written in batches by a background task;
    when ``queue_size`` records wait, new ones are dropped and counted instead of slowing
    calls down. ``include_arguments`` keeps the argument values too (secrets scrubbed);
    otherwise only their SHA-256 digest is kept. Records older than ``retention_days`` are
    removed every ``purge_interval_secs``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    include_arguments: bool = False
    retention_days: int = Field(30, ge=1, le=36500)
    queue_size: int = Field(10_000, ge=1, le=1_000_000)
    batch_size: int = Field(500, ge=1, le=10_000)
    flush_interval_secs: float = Field(1.0, gt=0, le=60)
    """The longest a record waits in memory before it is written (unless a batch fills first)."""
    purge_interval_secs: float = Field(3600.0, gt=0, le=86_400)
