"""Composition of the search part from its settings."""

from __future__ import annotations

import importlib

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.search.classifier import Classifier, EmbeddingClassifier, LlmClassifier
from mcp_aggregator.search.config import SearchSettings
from mcp_aggregator.search.embedder import Embedder, NoneEmbedder
from mcp_aggregator.search.embedding_cache import EmbeddingStore
from mcp_aggregator.search.openai_embedder import OpenAIEmbedder
from mcp_aggregator.search.packaged_model import packaged_model
from mcp_aggregator.search.query_map import QueryMap
from mcp_aggregator.search.skills import SkillIndex, skills_of
from mcp_aggregator.search.tool_search import ToolSearch
from mcp_aggregator.search.vector_index import NumpyVectorIndex, VectorIndex


def _optional_module(name: str, extra: str) -> object:
    # Optional backends (torch, qdrant-client) are imported only when configured, so a
    # default install never needs them; their modules import their library at the top.
    try:
        return importlib.import_module(f"mcp_aggregator.search.{name}")
    except ImportError as exc:
        raise ConfigError(f"needs the optional dependency {extra!r}: {exc}", path="search") from exc


def build_embedder(settings: SearchSettings) -> Embedder:
    """The embedder ``settings.embedder`` names. Raises ``ConfigError`` / ``SearchError``."""
    match settings.embedder:
        case "onnx-minilm":
            # Imported when chosen: onnxruntime and the tokenizer cost ~50 MB at start, which
            # a gateway without semantic search (``embedder: none``) should not carry.
            from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder

            if settings.model_path is not None:
                return OnnxMiniLmEmbedder(
                    settings.model_path,
                    expected_sha256=None,
                    threads=settings.onnx_threads,
                    query_threads=settings.onnx_query_threads,
                )
            model = packaged_model(settings.onnx_model)
            return OnnxMiniLmEmbedder(
                model.path,
                expected_sha256=model.sha256,
                threads=settings.onnx_threads,
                query_threads=settings.onnx_query_threads,
                variant=settings.onnx_variant,
            )
        case "openai":
            return OpenAIEmbedder(
                settings.openai_base_url,
                settings.openai_model,
                api_key=settings.openai_api_key,
                timeout=settings.openai_timeout_secs,
            )
        case "sentence-transformers":
            if settings.model_path is None:
                raise ConfigError("sentence-transformers needs a local model folder", path="search.model_path")
            module = _optional_module("sentence_transformer_embedder", "sentence-transformers")
            embedder: Embedder = module.SentenceTransformerEmbedder(settings.model_path)  # type: ignore[attr-defined]
            return embedder
        case "none":
            return NoneEmbedder()


def build_vector_index(settings: SearchSettings, dimension: int) -> VectorIndex:
    if settings.vector_backend == "qdrant":
        module = _optional_module("qdrant_index", "qdrant-client")
        index: VectorIndex = module.QdrantVectorIndex(dimension, location=settings.qdrant_location)  # type: ignore[attr-defined]
        return index
    return NumpyVectorIndex(dimension)


def build_query_map(settings: SearchSettings, dimension: int) -> QueryMap | None:
    """The query map of the packaged model ``settings`` run, when it ships one and
    ``settings.query_map`` is on. Raises ``SearchError`` for a damaged map file."""
    if not settings.query_map or settings.embedder != "onnx-minilm" or settings.model_path is not None:
        return None
    model = packaged_model(settings.onnx_model)
    if model.query_map is None:
        return None
    return QueryMap.load(model.query_map, expected_sha256=model.query_map_sha256, dimension=dimension)


def build_tool_search(
    settings: SearchSettings, embedder: Embedder | None = None, *, cache: EmbeddingStore | None = None
) -> ToolSearch:
    """A ``ToolSearch`` wired as ``settings`` say; ``embedder`` overrides the configured one
    (and then no packaged query map applies: it was fitted for the packaged model's
    vectors), ``cache`` the SQLite embedding cache at ``settings.cache_path``."""
    emb = embedder if embedder is not None else build_embedder(settings)
    query_map = build_query_map(settings, emb.dimension) if embedder is None else None
    return ToolSearch(
        settings,
        emb,
        vector_index=build_vector_index(settings, emb.dimension),
        cache=cache,
        query_map=query_map,
    )


def build_skill_index(settings: SearchSettings, search: ToolSearch) -> SkillIndex:
    return SkillIndex(skills_of(settings), search)


def build_classifier(settings: SearchSettings, skills: SkillIndex) -> Classifier:
    """The classifier ``settings.classifier`` names. Blocking for the embedding one (it
    embeds the skill descriptions once): call it from a worker thread or at start-up."""
    if settings.classifier == "embedding":
        search_embedder = skills.embedder
        return EmbeddingClassifier(
            search_embedder, skills.skills, skills.description_vectors(), stored=skills.tool_vectors
        )
    if not settings.llm_base_url:
        raise ConfigError(f"classifier {settings.classifier!r} needs a base URL", path="search.llm_base_url")
    return LlmClassifier(
        settings.classifier,
        settings.llm_base_url,
        settings.llm_model,
        skills.skills,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout_secs,
    )
