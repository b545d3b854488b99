from __future__ import annotations

import numpy as np
import pytest

from mcp_aggregator.search.qdrant_index import QdrantVectorIndex
from mcp_aggregator.search.row_table import IndexFilter
from mcp_aggregator.search.vector_index import NumpyVectorIndex, VectorIndex

KEYS = ["a.x", "a.y", "b.x", "b.z"]
SERVERS = ["a", "a", "b", "b"]
VECTORS = np.eye(4, dtype=np.float32)


def _indexes() -> list[VectorIndex]:
    out: list[VectorIndex] = []
    for index in (NumpyVectorIndex(4), QdrantVectorIndex(4)):
        index.upsert(KEYS, SERVERS, VECTORS, [["s1"], [], ["s1"], ["s2"]])
        out.append(index)
    return out


@pytest.mark.parametrize("index", _indexes(), ids=["numpy", "qdrant"])
def test_vector_backends_agree_on_search_filters_and_removal(index: VectorIndex) -> None:
    query = np.array([0.9, 0.1, 0.3, 0.0], dtype=np.float32)
    assert [k for k, _ in index.search(query, 2)] == ["a.x", "b.x"]
    assert [k for k, _ in index.search(query, 4, IndexFilter.of(servers={"b"}))] == ["b.x", "b.z"]
    assert [k for k, _ in index.search(query, 4, IndexFilter(skill="s1"))] == ["a.x", "b.x"]
    index.set_skills("b.z", ["s1"])
    assert {k for k, _ in index.search(query, 4, IndexFilter(skill="s1"))} == {"a.x", "b.x", "b.z"}
    np.testing.assert_allclose(index.vectors(["b.x", "missing", "a.y"]), VECTORS[[2, 1]], atol=1e-6)
    index.remove(["a.x", "missing"])
    assert len(index) == 3
    assert "a.x" not in {k for k, _ in index.search(query, 4)}
