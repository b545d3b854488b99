"""Applying the migrations is quiet at INFO and leaves the application's logging alone."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcp_aggregator.registry import migrate
from tests.registry.conftest import Database
from tests.registry.test_audit_migration import to_revision


async def _registry_behind_the_heads(tmp_path: Path) -> str:
    """A registry at the first migration: a new one is created without running any."""
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'registry.db'}", "mcp")
    await to_revision(database, "0001")
    return database.url


async def test_migrating_logs_nothing_from_alembic_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = await _registry_behind_the_heads(tmp_path)
    caplog.set_level(logging.INFO)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    await migrate(url)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("alembic")] == []
    # Alembic's env.py templates call fileConfig(); ours must not reset the app's logging.
    assert (root.handlers, root.level) == (handlers, level)


async def test_the_migrations_that_ran_are_logged_at_debug(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = await _registry_behind_the_heads(tmp_path)
    caplog.set_level(logging.DEBUG)
    await migrate(url)
    alembic = [r for r in caplog.records if r.name == "alembic.runtime.migration"]
    assert any(r.getMessage().startswith("Running upgrade") for r in alembic)
    assert {r.levelname for r in alembic} == {"DEBUG"}
