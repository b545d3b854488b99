"""The tuned model shipped inside the package: it loads offline, pinned by its digest, on
every path the self-check knows, and answers as the training run's exported model did."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search import SearchSettings, build_embedder
from mcp_aggregator.search.build import build_query_map
from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder, file_sha256
from mcp_aggregator.search.onnx_variant import VARIANTS
from mcp_aggregator.search.packaged_model import TUNED_DIR, TUNED_MODEL_SHA256, TUNED_QUERY_MAP_SHA256, packaged_model
from mcp_aggregator.search.query_map import QueryMap

PROVENANCE = json.loads((TUNED_DIR / "provenance.json").read_text())
QUERIES = PROVENANCE["fixed_queries"]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("derived-tuned")


def test_the_shipped_tuned_model_is_the_file_its_provenance_describes() -> None:
    model = packaged_model("tools")
    assert file_sha256(model.path) == model.sha256 == TUNED_MODEL_SHA256 == PROVENANCE["onnx_sha256"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_path_of_the_tuned_model_answers_as_the_training_run_exported_it(variant: str, cache_dir: Path) -> None:
    model = packaged_model("tools")
    embedder = OnnxMiniLmEmbedder(
        model.path, expected_sha256=model.sha256, threads=1, variant=variant, derived_cache_dirs=[cache_dir]
    )
    assert embedder.variant == variant
    got = embedder.embed(QUERIES)
    reference = np.array(PROVENANCE["reference_vectors"]["packaged"], dtype=np.float32)
    cosines = (got * reference).sum(axis=1)
    if variant == "packaged":
        np.testing.assert_allclose(got, reference, atol=1e-4)
    else:
        # int8 kernels differ between CPUs (with or without VNNI); the self-check's own bar.
        assert cosines.min() >= 0.97, cosines


def test_the_tuned_model_is_told_apart_from_the_base_one_in_the_embedding_cache(cache_dir: Path) -> None:
    tuned = build_embedder(SearchSettings.model_validate({"onnx_model": "tools", "onnx_variant": "packaged"}))
    base = build_embedder(SearchSettings.model_validate({"onnx_model": "base", "onnx_variant": "packaged"}))
    assert tuned.model_id != base.model_id
    assert (tuned.embed(QUERIES[:2]) * base.embed(QUERIES[:2])).sum(axis=1).max() < 0.9999


def test_a_tuned_model_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "model.onnx"
    other.write_bytes(packaged_model("tools").path.read_bytes()[:-16] + b"\0" * 16)
    with pytest.raises(SearchError, match="not the one this version of mcp-aggregator ships"):
        OnnxMiniLmEmbedder(other, expected_sha256=TUNED_MODEL_SHA256)


def test_an_unknown_packaged_model_name_is_a_settings_error() -> None:
    with pytest.raises(ValueError, match="onnx_model"):
        SearchSettings.model_validate({"onnx_model": "large"})


def test_the_tuned_model_ships_its_pinned_query_map_and_the_search_applies_it() -> None:
    model = packaged_model("tools")
    assert model.query_map is not None
    assert file_sha256(model.query_map) == model.query_map_sha256 == TUNED_QUERY_MAP_SHA256
    query_map = build_query_map(SearchSettings.model_validate({"onnx_model": "tools"}), 384)
    assert query_map is not None
    # Fitted from the identity and held near it: it corrects the model, never replaces it.
    assert 0.0 < float(np.linalg.norm(query_map.matrix - np.eye(384))) < 10.0


@pytest.mark.parametrize(
    "settings",
    [
        {"onnx_model": "tools", "query_map": False},
        {"onnx_model": "base"},
        {"onnx_model": "tools", "model_path": "/elsewhere/model.onnx"},
        {"embedder": "none"},
    ],
)
def test_no_query_map_applies_where_none_was_fitted_or_it_is_turned_off(settings: dict[str, object]) -> None:
    assert build_query_map(SearchSettings.model_validate(settings), 384) is None


def test_a_damaged_packaged_query_map_is_refused_by_its_digest(tmp_path: Path) -> None:
    shipped = packaged_model("tools").query_map
    assert shipped is not None
    damaged = tmp_path / "query_map.npy"
    damaged.write_bytes(shipped.read_bytes()[:-2] + b"\0\0")
    with pytest.raises(SearchError, match="not the one this version of mcp-aggregator ships"):
        QueryMap.load(damaged, expected_sha256=TUNED_QUERY_MAP_SHA256, dimension=384)
