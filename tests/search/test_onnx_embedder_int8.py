"""The int8-compute variants derived from the packaged model, their on-disk cache and the
automatic choice between them. Every path is forced through parameters (the variant, the
acceptance threshold), so these hold whether or not this machine's CPU would accept a variant."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from mcp_aggregator.search import onnx_quantize
from mcp_aggregator.search.onnx_embedder import (
    DERIVED_MODEL_IDS,
    PACKAGED_MODEL_ID,
    PACKAGED_MODEL_SHA256,
    OnnxMiniLmEmbedder,
    file_sha256,
    packaged_model_path,
)
from mcp_aggregator.search.onnx_variant import machine_key

TEXTS = [
    "read a file from disk",
    "git log of a repository",
    "Create a new issue in a GitHub repository with a title, body, labels and assignees.",
    "search the web for recent news about renewable energy",
    "time",
    "查询天气",
]
REJECT_ALL = 1.01
"""A worst cosine no variant can reach: forces the path of a CPU that rejects them."""


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("derived-models")


@pytest.fixture(scope="module")
def int8(cache_dir: Path) -> OnnxMiniLmEmbedder:
    return OnnxMiniLmEmbedder(threads=2, variant="int8", derived_cache_dirs=[cache_dir])


@pytest.fixture(scope="module")
def uint8(cache_dir: Path) -> OnnxMiniLmEmbedder:
    return OnnxMiniLmEmbedder(threads=2, variant="uint8", derived_cache_dirs=[cache_dir])


@pytest.fixture(scope="module")
def packaged() -> OnnxMiniLmEmbedder:
    return OnnxMiniLmEmbedder(threads=1, variant="packaged")


def test_the_uint8_variant_stays_within_cosine_099_of_the_packaged_one(
    uint8: OnnxMiniLmEmbedder, packaged: OnnxMiniLmEmbedder
) -> None:
    # u8u8 kernels never saturate, so this holds with and without VNNI.
    cosines = (uint8.embed(TEXTS) * packaged.embed(TEXTS)).sum(axis=1)
    assert cosines.min() >= 0.99, cosines


def test_the_int8_variant_stays_close_to_the_packaged_one_even_where_its_kernels_saturate(
    int8: OnnxMiniLmEmbedder, packaged: OnnxMiniLmEmbedder
) -> None:
    # >= 0.99 with VNNI; ~0.986 on AVX2 without it, where u8s8 pair sums saturate.
    cosines = (int8.embed(TEXTS) * packaged.embed(TEXTS)).sum(axis=1)
    assert cosines.min() >= 0.97, cosines


@pytest.mark.parametrize("variant", ["int8", "uint8"])
def test_each_derived_variant_has_its_own_id_and_file(
    variant: str, int8: OnnxMiniLmEmbedder, uint8: OnnxMiniLmEmbedder, cache_dir: Path
) -> None:
    embedder = int8 if variant == "int8" else uint8
    assert embedder.variant == variant
    assert embedder.model_id == DERIVED_MODEL_IDS[variant] != PACKAGED_MODEL_ID  # type: ignore[index]
    assert embedder.model_path.parent == cache_dir
    meta = json.loads(embedder.model_path.with_suffix(".json").read_text())
    assert meta["sha256"] == file_sha256(embedder.model_path)
    assert meta["variant"] == onnx_quantize.WEIGHT_ENCODINGS[variant]  # type: ignore[index]
    assert embedder.choice is None  # forced, not chosen


def test_a_second_start_reuses_the_cached_file(int8: OnnxMiniLmEmbedder, cache_dir: Path) -> None:
    before = int8.model_path.stat().st_mtime_ns
    again = OnnxMiniLmEmbedder(threads=1, variant="int8", derived_cache_dirs=[cache_dir])
    assert again.model_path == int8.model_path
    assert again.model_path.stat().st_mtime_ns == before
    np.testing.assert_array_equal(again.embed(TEXTS), int8.embed(TEXTS))


@pytest.mark.parametrize("damaged", ["graph", "weights"])
def test_a_corrupt_cached_file_is_derived_again(damaged: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    first = OnnxMiniLmEmbedder(threads=1, variant="int8", derived_cache_dirs=[tmp_path])
    expected = first.embed(TEXTS)
    # Only ever damage a file of this test's own directory.
    assert first.model_path.parent == tmp_path
    weights = onnx_quantize.weights_file(first.model_path)
    sizes = first.model_path.stat().st_size, weights.stat().st_size
    with (first.model_path if damaged == "graph" else weights).open("r+b") as fh:
        fh.truncate(1000)
    second = OnnxMiniLmEmbedder(threads=1, variant="int8", derived_cache_dirs=[tmp_path])
    assert second.model_id == DERIVED_MODEL_IDS["int8"]
    assert (second.model_path.stat().st_size, weights.stat().st_size) == sizes
    assert weights.stat().st_size > 20_000_000
    np.testing.assert_array_equal(second.embed(TEXTS), expected)


def test_a_derived_variant_keeps_its_weights_in_a_file_of_their_own_beside_the_graph(
    int8: OnnxMiniLmEmbedder, cache_dir: Path
) -> None:
    # onnxruntime maps such a file rather than copying it: pages no text touches stay unread.
    weights = onnx_quantize.weights_file(int8.model_path)
    assert weights.parent == cache_dir
    assert weights.stat().st_size > 20_000_000 > 1_000_000 > int8.model_path.stat().st_size
    meta = json.loads(int8.model_path.with_suffix(".json").read_text())
    assert meta["weights_sha256"] == file_sha256(weights)
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")]  # no work folder left


def test_auto_where_every_variant_is_rejected_runs_the_packaged_model_and_remembers(tmp_path: Path) -> None:
    embedder = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path], min_variant_cosine=REJECT_ALL)
    assert (embedder.variant, embedder.model_id) == ("packaged", PACKAGED_MODEL_ID)
    assert embedder.model_path == packaged_model_path()
    assert embedder.choice is not None
    assert "int8: cosine" in embedder.choice.reason
    assert "uint8: cosine" in embedder.choice.reason
    assert {t.variant for t in embedder.choice.trials} == {"packaged", "int8", "uint8"}
    (remembered,) = tmp_path.glob("*-choice-*.json")
    assert json.loads(remembered.read_text())["variant"] == "packaged"
    # A default start honours the remembered choice: it measures nothing again.
    again = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path])
    assert again.model_id == PACKAGED_MODEL_ID
    assert again.choice is not None
    assert again.choice.reason.startswith("remembered")


def test_auto_where_the_variants_are_accepted_runs_one_of_them_and_remembers(tmp_path: Path) -> None:
    embedder = OnnxMiniLmEmbedder(
        threads=1, derived_cache_dirs=[tmp_path], min_variant_cosine=-1.0, min_variant_speedup=0.0
    )
    assert embedder.variant in ("int8", "uint8")
    assert embedder.model_id == DERIVED_MODEL_IDS[embedder.variant]
    assert embedder.model_path.parent == tmp_path
    again = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path], min_variant_cosine=REJECT_ALL)
    assert again.variant == embedder.variant
    assert again.choice is not None
    assert again.choice.reason.startswith("remembered")


def test_a_remembered_choice_counts_only_for_the_same_cpu_and_onnxruntime(tmp_path: Path) -> None:
    without_vnni = machine_key(PACKAGED_MODEL_SHA256, "avx avx2 fma sse4_2")
    with_vnni = machine_key(PACKAGED_MODEL_SHA256, "avx avx2 avx512_vnni avx_vnni fma sse4_2")
    assert without_vnni != with_vnni
    OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path], min_variant_cosine=REJECT_ALL)
    (remembered,) = tmp_path.glob("*-choice-*.json")
    assert remembered.name.endswith(f"-choice-{machine_key(PACKAGED_MODEL_SHA256)}.json")


def test_an_unwritable_cache_falls_back_to_the_next_directory(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    embedder = OnnxMiniLmEmbedder(threads=1, variant="uint8", derived_cache_dirs=[blocked / "models", tmp_path / "ok"])
    assert embedder.model_id == DERIVED_MODEL_IDS["uint8"]
    assert embedder.model_path.parent == tmp_path / "ok"


@pytest.mark.parametrize("variant", ["auto", "int8", "uint8"])
def test_no_usable_cache_directory_means_the_packaged_model(tmp_path: Path, variant: str) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    embedder = OnnxMiniLmEmbedder(threads=1, variant=variant, derived_cache_dirs=[blocked / "models"])  # type: ignore[arg-type]
    assert embedder.model_id == PACKAGED_MODEL_ID
    assert list(tmp_path.iterdir()) == [blocked]


def test_a_cache_directory_inside_the_models_package_is_never_written() -> None:
    inside = packaged_model_path().parent / "derived"
    embedder = OnnxMiniLmEmbedder(threads=1, variant="int8", derived_cache_dirs=[inside])
    assert embedder.model_id == PACKAGED_MODEL_ID
    assert not inside.exists()


def test_forcing_packaged_keeps_the_packaged_model(tmp_path: Path) -> None:
    embedder = OnnxMiniLmEmbedder(threads=1, variant="packaged", derived_cache_dirs=[tmp_path])
    assert (embedder.variant, embedder.model_id) == ("packaged", PACKAGED_MODEL_ID)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("variant", ["int8", "uint8"])
def test_a_bulk_call_gives_exactly_the_vectors_of_one_text_at_a_time(
    variant: str, int8: OnnxMiniLmEmbedder, uint8: OnnxMiniLmEmbedder
) -> None:
    embedder = int8 if variant == "int8" else uint8
    texts = TEXTS * 4  # above the bulk threshold: spread over the worker threads
    bulk = embedder.embed(texts)
    single = np.stack([embedder.embed([t])[0] for t in texts])
    np.testing.assert_array_equal(bulk, single)


def test_xdg_cache_home_replaces_the_home_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    dirs = onnx_quantize.default_cache_dirs()
    assert dirs[0] == tmp_path / "mcp-aggregator" / "models"
    assert not any(d.is_relative_to(tmp_path / "home") for d in dirs)
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert onnx_quantize.default_cache_dirs()[0] == tmp_path / "home" / ".cache" / "mcp-aggregator" / "models"


def test_the_int7_variant_runs_seven_bit_weights_with_doubled_scales(tmp_path: Path) -> None:
    source = packaged_model_path()
    dest = tmp_path / "int7.onnx"
    rewritten = onnx_quantize.quantize_matmuls(source, dest, weights="int7")
    model = onnx.load(str(dest))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    nodes = [n for n in model.graph.node if n.op_type == "DynamicQuantizeMatMul"]
    assert len(nodes) == rewritten > 0
    original = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(source)).graph.initializer}
    for node in nodes:
        weight, scale = inits[node.input[1]], inits[node.input[2]]
        assert weight.dtype == np.int8 and weight.min() >= -64 and weight.max() <= 63
        source_weight = original[node.input[1].removesuffix("__r7")].astype(np.float32)
        # Each 7-bit weight times its doubled scale is within half a new step of the original.
        error = np.abs(weight * scale - source_weight * (scale / 2))
        assert (error <= scale / 2 * (1 + 1e-3)).all()


def test_the_self_check_never_measures_the_int7_variant(tmp_path: Path) -> None:
    embedder = OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=[tmp_path], min_variant_cosine=REJECT_ALL)
    assert embedder.choice is not None
    assert "int7" not in {t.variant for t in embedder.choice.trials}


def test_a_derived_variant_keeps_its_embedding_tables_int8_and_dequantises_only_the_gathered_rows(
    tmp_path: Path,
) -> None:
    # onnxruntime folds an int8 table's Cast and Mul into a float32 copy (47 MB for the
    # word embeddings); gathered first, the table stays int8 and only its rows are scaled.
    dest = tmp_path / "int8.onnx"
    onnx_quantize.quantize_matmuls(packaged_model_path(), dest, weights="int8")
    graph = onnx.load(str(dest)).graph
    inits = {i.name: i for i in graph.initializer}
    tables = [n.input[0] for n in graph.node if n.op_type == "Gather" and n.input[0] in inits]
    word = "inner.embeddings.word_embeddings.weight_q"
    assert word in tables
    assert inits[word].data_type == onnx.TensorProto.INT8
    produced = {o for n in graph.node for o in n.output}
    assert "inner.embeddings.word_embeddings.weight" not in produced  # no float table left to fold


def test_dequantising_after_the_gather_changes_no_vector_bit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = packaged_model_path()
    late_path, early_path = tmp_path / "late.onnx", tmp_path / "early.onnx"
    onnx_quantize.quantize_matmuls(source, late_path, weights="int8")
    monkeypatch.setattr(onnx_quantize, "dequantize_after_gather", lambda graph: 0)  # the derivation before it
    onnx_quantize.quantize_matmuls(source, early_path, weights="int8")
    late = OnnxMiniLmEmbedder(late_path, expected_sha256=None, threads=1, variant="packaged")
    early = OnnxMiniLmEmbedder(early_path, expected_sha256=None, threads=1, variant="packaged")
    assert np.array_equal(late.embed(TEXTS), early.embed(TEXTS))
