"""Fixtures of the MCP Registry tests: the registry database on SQLite and PostgreSQL."""

from tests.registry.conftest import database, registry

__all__ = ["database", "registry"]
