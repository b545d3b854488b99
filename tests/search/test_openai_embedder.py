from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search import SearchSettings, build_embedder
from mcp_aggregator.search.openai_embedder import OpenAIEmbedder

from .conftest import Handler, JsonServer


def _embeddings(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    # Answered out of order on purpose: clients must sort by "index".
    data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
    return 200, {"object": "list", "data": list(reversed(data)), "model": body["model"]}


def test_openai_compatible_endpoint_gives_normalised_vectors_in_input_order(
    json_server: Callable[[Handler], JsonServer],
) -> None:
    server = json_server(_embeddings)
    embedder = OpenAIEmbedder(server.url + "/v1", "tiny-embed", api_key="sk-test")
    vectors = embedder.embed(["ab", "abcd"])
    embedder.close()
    assert embedder.dimension == 3
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert vectors[0, 0] < vectors[1, 0]
    path, body, headers = server.requests[-1]
    assert path == "/v1/embeddings"
    assert body == {"model": "tiny-embed", "input": ["ab", "abcd"]}
    assert headers["Authorization"] == "Bearer sk-test"
    assert embedder.model_id == f"openai:{server.url}/v1:tiny-embed"


def test_build_embedder_makes_the_openai_embedder_from_settings(
    json_server: Callable[[Handler], JsonServer],
) -> None:
    server = json_server(_embeddings)
    settings = SearchSettings(embedder="openai", openai_base_url=server.url, openai_model="m")
    embedder = build_embedder(settings)
    assert embedder.embed(["x"]).shape == (1, 3)


def test_an_endpoint_error_becomes_a_search_error(json_server: Callable[[Handler], JsonServer]) -> None:
    server = json_server(lambda path, body: (500, {"error": "down"}))
    with pytest.raises(SearchError, match="failed"):
        OpenAIEmbedder(server.url, "m")


def test_a_malformed_answer_becomes_a_search_error(json_server: Callable[[Handler], JsonServer]) -> None:
    server = json_server(lambda path, body: (200, {"data": [{"no": "embedding"}]}))
    with pytest.raises(SearchError, match="malformed"):
        OpenAIEmbedder(server.url, "m")
