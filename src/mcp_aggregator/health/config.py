"""Settings of the health monitor and of reconnection (the ``health:`` section)."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class HealthSettings(BaseModel):
    """How often servers are checked, when they degrade, and how reconnection backs off.

    Defaults are seed 003's: a check every 30 s with a 5 s timeout, DEGRADED after 2
    consecutive failures, ERROR after 3, then up to 5 reconnection attempts spaced
    1, 2, 4, 8 s apart (EC-001).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    interval_secs: float = Field(30.0, gt=0)
    timeout_secs: float = Field(5.0, gt=0)
    degraded_after: int = Field(2, ge=1)
    error_after: int = Field(3, ge=2)
    reconnect_max_attempts: int = Field(5, ge=1)
    reconnect_backoff_base_secs: float = Field(1.0, ge=0)

    @model_validator(mode="after")
    def _degraded_before_error(self) -> Self:
        if self.degraded_after >= self.error_after:
            raise ValueError(
                f"degraded_after ({self.degraded_after}) must be less than error_after ({self.error_after})"
            )
        return self
