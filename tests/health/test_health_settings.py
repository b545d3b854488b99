"""The ``health:`` settings section."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mcp_aggregator.health import HealthSettings


def test_defaults_are_the_contracts() -> None:
    settings = HealthSettings()

    assert (settings.interval_secs, settings.timeout_secs) == (30.0, 5.0)
    assert (settings.degraded_after, settings.error_after) == (2, 3)
    assert (settings.reconnect_max_attempts, settings.reconnect_backoff_base_secs) == (5, 1.0)


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValidationError, match="interval"):
        HealthSettings.model_validate({"interval": 10})


def test_degraded_must_come_before_error() -> None:
    with pytest.raises(ValidationError, match="must be less than error_after"):
        HealthSettings(degraded_after=3, error_after=3)
