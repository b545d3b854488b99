"""An embedder that calls an OpenAI-compatible ``POST {base}/embeddings`` endpoint."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.embedder import Vectors, l2_normalise


class OpenAIEmbedder:
    """Embeds through an OpenAI-compatible HTTP API (OpenAI, vLLM, Ollama, LiteLLM, ...).

    The dimension is learnt from a probe request at construction unless given.
    Raises ``SearchError`` when the endpoint fails or answers malformed data.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        dimension: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout, transport=transport
        )
        self._model = model
        self._model_id = f"openai:{base_url.rstrip('/')}:{model}"
        self._dimension = dimension if dimension is not None else int(self.embed(["dimension probe"]).shape[1])

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        try:
            response = self._client.post("embeddings", json={"model": self._model, "input": list(texts)})
            response.raise_for_status()
            data = response.json()["data"]
            rows = sorted(data, key=lambda item: int(item["index"]))
            matrix = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except httpx.HTTPError as exc:
            raise SearchError(f"embedding endpoint {self._client.base_url} failed: {exc}") from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise SearchError(f"embedding endpoint {self._client.base_url} answered malformed data: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise SearchError(
                f"embedding endpoint {self._client.base_url} returned {matrix.shape[0]} vectors for {len(texts)} texts"
            )
        return l2_normalise(matrix)
