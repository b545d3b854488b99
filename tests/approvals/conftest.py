"""The registry's databases (SQLite and PostgreSQL) for the approvals' tests."""

from tests.registry.conftest import Database, database

__all__ = ["Database", "database"]
