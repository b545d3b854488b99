"""The registry's databases (SQLite and PostgreSQL) for the audit trail's tests."""

from tests.registry.conftest import Database, database

__all__ = ["Database", "database"]
