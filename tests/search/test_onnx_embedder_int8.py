"""The int8-compute variant derived from the packaged model and its on-disk cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mcp_aggregator.search import onnx_quantize
from mcp_aggregator.search.onnx_embedder import (
    DERIVED_MODEL_ID,
    PACKAGED_MODEL_ID,
    OnnxMiniLmEmbedder,
    file_sha256,
)

TEXTS = [
    "read a file from disk",
    "git log of a repository",
    "Create a new issue in a GitHub repository with a title, body, labels and assignees.",
    "search the web for recent news about renewable energy",
    "time",
    "查询天气",
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("derived-models")


@pytest.fixture(scope="module")
def derived(cache_dir: Path) -> OnnxMiniLmEmbedder:
    return OnnxMiniLmEmbedder(threads=2, derived_cache_dirs=[cache_dir])


@pytest.fixture(scope="module")
def packaged() -> OnnxMiniLmEmbedder:
    return OnnxMiniLmEmbedder(threads=1, int8_compute=False)


def test_the_derived_model_stays_within_cosine_099_of_the_packaged_one(
    derived: OnnxMiniLmEmbedder, packaged: OnnxMiniLmEmbedder
) -> None:
    cosines = (derived.embed(TEXTS) * packaged.embed(TEXTS)).sum(axis=1)
    assert cosines.min() >= 0.99, cosines


def test_the_derived_model_has_its_own_id_and_file(derived: OnnxMiniLmEmbedder, cache_dir: Path) -> None:
    assert derived.model_id == DERIVED_MODEL_ID != PACKAGED_MODEL_ID
    assert derived.model_path.parent == cache_dir
    meta = json.loads(derived.model_path.with_suffix(".json").read_text())
    assert meta["sha256"] == file_sha256(derived.model_path)
    assert meta["variant"] == onnx_quantize.VARIANT


def test_a_second_start_reuses_the_cached_file(derived: OnnxMiniLmEmbedder, cache_dir: Path) -> None:
    before = derived.model_path.stat().st_mtime_ns
    again = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[cache_dir])
    assert again.model_path == derived.model_path
    assert again.model_path.stat().st_mtime_ns == before
    np.testing.assert_array_equal(again.embed(TEXTS), derived.embed(TEXTS))


def test_a_corrupt_cached_file_is_derived_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    first = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path])
    expected = first.embed(TEXTS)
    with first.model_path.open("r+b") as fh:
        fh.truncate(1000)
    second = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path])
    assert second.model_id == DERIVED_MODEL_ID
    assert second.model_path.stat().st_size > 1_000_000
    np.testing.assert_array_equal(second.embed(TEXTS), expected)


def test_a_rejected_variant_falls_back_to_the_packaged_model_and_is_remembered(tmp_path: Path) -> None:
    embedder = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path], min_variant_cosine=1.01)
    assert embedder.model_id == PACKAGED_MODEL_ID
    assert not list(tmp_path.glob("*.onnx"))
    remembered = sorted(p.name for p in tmp_path.iterdir())
    # A default start honours the remembered rejection: it neither derives nor checks again.
    assert OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path]).model_id == PACKAGED_MODEL_ID
    assert not list(tmp_path.glob("*.onnx"))
    assert sorted(p.name for p in tmp_path.iterdir()) == remembered


def test_an_unwritable_cache_falls_back_to_the_next_directory(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    embedder = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[blocked / "models", tmp_path / "ok"])
    assert embedder.model_id == DERIVED_MODEL_ID
    assert embedder.model_path.parent == tmp_path / "ok"


def test_no_usable_cache_directory_means_the_packaged_model(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    assert OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[blocked / "models"]).model_id == PACKAGED_MODEL_ID


def test_int8_compute_off_keeps_the_packaged_model() -> None:
    assert OnnxMiniLmEmbedder(threads=1, int8_compute=False).model_id == PACKAGED_MODEL_ID


def test_a_bulk_call_gives_exactly_the_vectors_of_one_text_at_a_time(derived: OnnxMiniLmEmbedder) -> None:
    texts = TEXTS * 4  # above the bulk threshold: spread over the worker threads
    bulk = derived.embed(texts)
    single = np.stack([derived.embed([t])[0] for t in texts])
    np.testing.assert_array_equal(bulk, single)
