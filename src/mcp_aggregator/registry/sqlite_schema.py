"""The SQLite schema the migrations build, kept as the statements that build it at once.

A new SQLite file is the registry of a first start, the demo and a laptop. Running the
migrations one by one there loads Alembic and Mako, some 9 MB of RSS the gateway then keeps
for its life (``bench/startup_memory.py``), to reach a schema known in advance. So a new
file gets the statements the migrations left in ``sqlite_master`` and the heads in Alembic's
version table; a file with tables (and PostgreSQL) runs the migrations. ``tests/registry``
checks the snapshot against what the migrations build, and after a new migration
``scripts/write_sqlite_schema.py`` writes it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from sqlalchemy import Connection

SNAPSHOT = Path(__file__).parent / "migrations" / "sqlite_schema.json"

_ORDER = {"table": 0, "index": 1, "view": 2, "trigger": 3}
"""Tables before what refers to them (an index or a trigger needs its table to exist)."""


@dataclass(frozen=True)
class SqliteSchema:
    """The heads a database records and the statements that create its schema, in order."""

    heads: frozenset[str]
    statements: tuple[str, ...]

    @classmethod
    def read(cls, path: Path = SNAPSHOT) -> Self:
        stored = json.loads(path.read_text())
        return cls(frozenset(stored["heads"]), tuple(stored["statements"]))

    @classmethod
    def of(cls, connection: Connection) -> Self:
        """The schema of the SQLite database behind ``connection`` (which must be migrated).

        SQLite's own objects (``sqlite_sequence``, the indexes behind UNIQUE and PRIMARY
        KEY, which have no statement) are left out: the statements make them again."""
        rows = connection.exec_driver_sql(
            "SELECT type, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).all()
        ordered = sorted(rows, key=lambda row: _ORDER.get(str(row[0]), len(_ORDER)))
        heads = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars()
        return cls(frozenset(heads), tuple(str(row[1]) for row in ordered))

    def write(self, path: Path = SNAPSHOT) -> None:
        stored = {"heads": sorted(self.heads), "statements": list(self.statements)}
        path.write_text(json.dumps(stored, indent=1) + "\n")

    def create(self, connection: Connection) -> None:
        """Create the schema in the empty database behind ``connection`` and record its heads,
        inside the caller's transaction."""
        for statement in self.statements:
            connection.exec_driver_sql(statement)
        for head in sorted(self.heads):
            connection.exec_driver_sql("INSERT INTO alembic_version (version_num) VALUES (?)", (head,))


def is_empty(connection: Connection) -> bool:
    """Whether the SQLite database behind ``connection`` holds no table, index, view or trigger."""
    return int(connection.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar_one()) == 0
