"""Settings of the search part: embedder, vector backend, cache, classifier, skills."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_aggregator.search.packaged_model import PackagedModelName


class SkillSpec(BaseModel):
    """One skill a tool can be classified into."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    name: str
    description: str


class ImplicitNeed(BaseModel):
    """A need a task implies when it matches ``when`` (and ``and_when``, if given): the best
    tool for ``need`` joins the search results. Patterns are case-insensitive regexes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    need: str = Field(min_length=3)
    when: str = Field(min_length=1)
    and_when: str | None = None

    @field_validator("when", "and_when")
    @classmethod
    def _valid_regex(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression ({exc})") from None
        return pattern


class SearchSettings(BaseModel):
    """The ``search:`` section. Parsed once and passed to :func:`build_tool_search`."""

    model_config = ConfigDict(extra="forbid")

    embedder: Literal["onnx-minilm", "sentence-transformers", "openai", "none"] = "onnx-minilm"
    model_path: Path | None = None
    """ONNX file (onnx-minilm; replaces the packaged one, sha256 not pinned) or a
    sentence-transformers model folder (required for that embedder)."""
    onnx_threads: int = Field(default=2, ge=1, le=64)
    """Threads of bulk (indexing) inference."""
    onnx_query_threads: int = Field(default=1, ge=1, le=64)
    """Threads one search query's embedding is spread over (ONNX intra-op threads)."""
    onnx_model: PackagedModelName = "base"
    """Which packaged model onnx-minilm runs without ``model_path``: ``tools`` (fine-tuned
    for tool search, see ``search/model/tools-minilm/README.md``) or ``base`` (plain
    all-MiniLM-L6-v2)."""
    query_map: bool = True
    """Apply the query map the packaged model ships with, if it has one: a linear map on
    query vectors only (``search/query_map.py``). Off: queries are embedded as tools are."""
    onnx_variant: Literal["auto", "int8", "uint8", "int7", "packaged"] = "auto"
    """What runs the packaged model (onnx-minilm without ``model_path``): ``auto`` measures
    the int8-compute variants against it at the first start and remembers the choice;
    ``int8``, ``uint8``, ``int7`` (7-bit weights, never chosen by ``auto``: see
    ``onnx_quantize.AUTO_CANDIDATES``) or ``packaged`` force one."""
    learn_from_use: bool = False
    """Store (query, tool) when a facade search is followed in the same session by a call of
    one of its hits, and rank the tool by those queries too (``search/use_learner.py``).
    Off by default: it keeps query text in the registry's database."""
    learn_from_use_retention_days: int = Field(default=90, ge=1, le=36500)
    """Stored pairs older than this are purged (hourly) and no longer learnt from."""
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str | None = None
    openai_model: str = "text-embedding-3-small"
    openai_timeout_secs: float = Field(default=30.0, gt=0)
    embed_batch_size: int = Field(default=64, ge=1, le=4096)

    vector_backend: Literal["numpy", "qdrant"] = "numpy"
    qdrant_location: str = ":memory:"
    cache_path: Path | None = None
    """SQLite file of the embedding cache; None keeps it in memory."""

    classifier: Literal["embedding", "anthropic", "openai"] = "embedding"
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "claude-haiku-4-5"
    llm_timeout_secs: float = Field(default=30.0, gt=0)
    classifier_concurrency: int = Field(default=5, ge=1, le=64)
    min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    skills: list[SkillSpec] | None = None
    """Replaces the packaged default skills when given."""

    implicit_needs: list[ImplicitNeed] | None = None
    """Replaces the packaged default needs when given; ``[]`` turns them off."""
    implicit_need_min_similarity: float = Field(default=0.45, ge=-1.0, le=1.0)
    """Cosine a tool must reach with a need's phrase to join the results; below it the
    catalogue has no tool for that need."""
    dense_weight: float = Field(default=1.0, ge=0.0, le=10.0)
    """Weight of the dense rankings (tools, and servers by their vectors) in the rank fusion,
    BM25's being 1: a model tuned for tools may deserve more say than the base one."""
    named_servers: bool = True
    """A server the task names (by a word of its name no other server's tools use) has its
    best tool placed second."""
    alternatives: int = Field(default=5, ge=0, le=50)
    """At most this many copies (same tool name, other servers) of the first five hits
    follow them; 0 turns it off."""

    @field_validator("skills")
    @classmethod
    def _unique_skill_ids(cls, skills: list[SkillSpec] | None) -> list[SkillSpec] | None:
        if skills is not None:
            ids = [s.id for s in skills]
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                raise ValueError(f"duplicate skill ids: {', '.join(dupes)}")
            if not skills:
                raise ValueError("at least one skill is needed")
        return skills
