"""The embedding cache as a PostgreSQL table, shared by every replica of one registry.

A replica that starts later finds the catalogue's vectors already there and embeds
nothing; the table lives in the registry's schema, next to the servers and tools.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from sqlalchemy import make_url

from mcp_aggregator.errors import SearchError
from mcp_aggregator.extras import POSTGRES, require_extra
from mcp_aggregator.search.embedder import Vectors

try:
    import psycopg
    from psycopg import sql
except ImportError:  # without the postgres extra: PostgresEmbeddingCache says so before it is used
    pass

_CREATE = """
CREATE TABLE IF NOT EXISTS {table} (
    model_id TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
)
"""


def libpq_url(database_url: str) -> str:
    """A plain ``postgresql://`` URL from the registry's SQLAlchemy one (``+asyncpg`` dropped)."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresEmbeddingCache:
    """``EmbeddingCache``'s interface over ``{schema}.embeddings`` in PostgreSQL.

    Thread-safe (embedding runs in worker threads): one autocommit connection behind a
    lock. Concurrent writers of the same vector (two replicas embedding the same new
    tool) are harmless: the first row wins and both are equal. Raises ``SearchError``
    when the database cannot be reached or a statement fails.
    """

    def __init__(self, database_url: str, schema: str) -> None:
        require_extra("psycopg", extra=POSTGRES, feature="the shared embedding cache of a PostgreSQL registry")
        self._table = sql.Identifier(schema, "embeddings")
        shown = make_url(database_url).render_as_string(hide_password=True)
        try:
            self._db = psycopg.connect(libpq_url(database_url), autocommit=True, connect_timeout=10)
            # The schema exists (the registry's migrations made it); replicas racing to
            # create the table are serialised by PostgreSQL's catalog locks.
            with self._db.cursor() as cur:
                cur.execute(sql.SQL(_CREATE).format(table=self._table))
        except psycopg.Error as exc:
            raise SearchError(f"cannot open the embedding cache at {shown}: {exc}") from exc
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get_many(self, model_id: str, digests: Sequence[str], dimension: int) -> dict[str, Vectors]:
        unique = list(dict.fromkeys(digests))
        if not unique:
            return {}
        query = sql.SQL("SELECT text_sha256, vector FROM {table} WHERE model_id = %s AND text_sha256 = ANY(%s)")
        with self._lock, _mapped("read"), self._db.cursor() as cur:
            cur.execute(query.format(table=self._table), (model_id, unique))
            rows = cur.fetchall()
        found: dict[str, Vectors] = {}
        for digest, blob in rows:
            vec = np.frombuffer(bytes(blob), dtype=np.float32)
            if vec.shape == (dimension,):
                found[digest] = vec
        return found

    def put_many(self, model_id: str, items: Sequence[tuple[str, Vectors]]) -> None:
        rows = [(model_id, digest, np.asarray(vec, dtype=np.float32).tobytes()) for digest, vec in items]
        if not rows:
            return
        query = sql.SQL("INSERT INTO {table} VALUES (%s, %s, %s) ON CONFLICT DO NOTHING")
        with self._lock, _mapped("write"), self._db.cursor() as cur:
            cur.executemany(query.format(table=self._table), rows)

    def count(self, model_id: str) -> int:
        query = sql.SQL("SELECT COUNT(*) FROM {table} WHERE model_id = %s")
        with self._lock, _mapped("count"), self._db.cursor() as cur:
            cur.execute(query.format(table=self._table), (model_id,))
            row = cur.fetchone()
        return int(row[0]) if row else 0


@contextmanager
def _mapped(what: str) -> Iterator[None]:
    """A driver error becomes ``SearchError`` (the search part's error) at this boundary."""
    try:
        yield
    except psycopg.Error as exc:
        raise SearchError(f"embedding cache {what} failed: {exc}") from exc
