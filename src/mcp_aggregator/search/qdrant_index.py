"""A ``VectorIndex`` on Qdrant (local ``:memory:``/path mode or a server URL).

Imported only when ``search.vector_backend`` is ``qdrant``: qdrant-client is optional.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.embedder import Vectors
from mcp_aggregator.search.row_table import NO_FILTER, IndexFilter

COLLECTION = "mcp_tools"
T = TypeVar("T")
_NAMESPACE = uuid.UUID("6f1c2b8e-3d4a-5b6c-8d9e-0a1b2c3d4e5f")


def point_id(key: str) -> str:
    """Qdrant ids must be UUIDs or integers; a UUIDv5 of the key is stable across restarts."""
    return str(uuid.uuid5(_NAMESPACE, key))


class QdrantVectorIndex:
    """Vectors with payload ``{key, server, skill_ids}`` in one Qdrant collection.

    ``location`` is ``":memory:"``, a folder (local mode) or an ``http(s)://`` URL.
    Raises ``SearchError`` when Qdrant refuses an operation.
    """

    def __init__(self, dimension: int, *, location: str = ":memory:", collection: str = COLLECTION) -> None:
        self._dim = dimension
        self._collection = collection
        if location.startswith(("http://", "https://")):
            self._client = QdrantClient(url=location)
        elif location == ":memory:":
            self._client = QdrantClient(location=":memory:")
        else:
            self._client = QdrantClient(path=location)
        self._keys: set[str] = set()
        try:
            if not self._client.collection_exists(collection):
                self._client.create_collection(
                    collection,
                    vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE),
                )
            else:
                self._load_keys()
        except (ApiException, ValueError) as exc:
            raise SearchError(f"qdrant collection {collection}: {exc}") from exc

    def _load_keys(self) -> None:
        offset = None
        while True:
            points, offset = self._client.scroll(self._collection, limit=1000, offset=offset, with_payload=["key"])
            self._keys.update(str(p.payload["key"]) for p in points if p.payload)
            if offset is None:
                return

    def __len__(self) -> int:
        return len(self._keys)

    def close(self) -> None:
        self._client.close()

    def upsert(
        self,
        keys: Sequence[str],
        servers: Sequence[str],
        vectors: Vectors,
        skills: Sequence[Iterable[str]] | None = None,
    ) -> None:
        if vectors.shape != (len(keys), self._dim):
            raise SearchError(f"expected vectors of shape ({len(keys)}, {self._dim}), got {vectors.shape}")
        points = [
            models.PointStruct(
                id=point_id(key),
                vector=vectors[i].tolist(),
                payload={"key": key, "server": servers[i], "skill_ids": list(skills[i]) if skills else []},
            )
            for i, key in enumerate(keys)
        ]
        for start in range(0, len(points), 512):
            self._upsert_chunk(points[start : start + 512])
        self._keys.update(keys)

    def _upsert_chunk(self, chunk: list[models.PointStruct]) -> None:
        self._call(lambda: self._client.upsert(self._collection, chunk))

    def remove(self, keys: Iterable[str]) -> None:
        gone = [k for k in keys if k in self._keys]
        if gone:
            selector = models.PointIdsList(points=[point_id(k) for k in gone])
            self._call(lambda: self._client.delete(self._collection, points_selector=selector))
            self._keys.difference_update(gone)

    def set_skills(self, key: str, skills: Iterable[str]) -> None:
        if key in self._keys:
            payload = {"skill_ids": list(skills)}
            self._call(lambda: self._client.set_payload(self._collection, payload, points=[point_id(key)]))

    def vectors(self, keys: Sequence[str]) -> Vectors:
        present = [k for k in keys if k in self._keys]
        if not present:
            return np.zeros((0, self._dim), dtype=np.float32)
        points = self._call(
            lambda: self._client.retrieve(self._collection, [point_id(k) for k in present], with_vectors=True)
        )
        by_key = {str(p.payload["key"]): p.vector for p in points if p.payload}
        return np.array([by_key[k] for k in present if k in by_key], dtype=np.float32)

    def search(self, vector: Vectors, k: int, flt: IndexFilter = NO_FILTER) -> list[tuple[str, float]]:
        if not self._keys or k <= 0:
            return []
        conditions: list[models.Condition] = []
        if flt.servers is not None:
            conditions.append(models.FieldCondition(key="server", match=models.MatchAny(any=sorted(flt.servers))))
        if flt.skill is not None:
            conditions.append(models.FieldCondition(key="skill_ids", match=models.MatchValue(value=flt.skill)))
        result = self._call(
            lambda: self._client.query_points(
                self._collection,
                query=np.asarray(vector, dtype=np.float32).tolist(),
                limit=k,
                query_filter=models.Filter(must=conditions) if conditions else None,
                with_payload=["key"],
            )
        )
        return [(str(p.payload["key"]), float(p.score)) for p in result.points if p.payload]

    def _call(self, op: Callable[[], T]) -> T:
        try:
            return op()
        except (ApiException, ValueError) as exc:
            raise SearchError(f"qdrant {self._collection}: {exc}") from exc
