"""Skills: the configured set, and their embeddings (centroid of their tools' vectors)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from pydantic import TypeAdapter, ValidationError

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.search.config import SearchSettings, SkillSpec
from mcp_aggregator.search.embedder import Embedder, Vectors, l2_normalise
from mcp_aggregator.search.tool_search import ToolSearch

DEFAULT_SKILLS_PATH = Path(__file__).parent / "default_skills.yaml"


def load_skills(path: Path = DEFAULT_SKILLS_PATH) -> list[SkillSpec]:
    """Skills from a YAML list of ``{id, name, description}``. Raises ``ConfigError``."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return TypeAdapter(list[SkillSpec]).validate_python(raw)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"cannot load skills from {path}: {exc}", path="search.skills") from exc


def skills_of(settings: SearchSettings) -> list[SkillSpec]:
    """The configured skills, or the packaged defaults."""
    return list(settings.skills) if settings.skills is not None else load_skills()


def skill_text(skill: SkillSpec) -> str:
    return f"{skill.name}: {skill.description}"


@dataclass(frozen=True)
class SkillMatch:
    skill_id: str
    score: float


class SkillIndex:
    """One vector per skill: the centroid of its tools' vectors, or, for a skill with no
    tools, the embedding of its description (BR-004, BR-008).

    Vectors are recomputed lazily when the tool search changed since the last computation
    (tools added, reclassified or a server removed). Blocking: call ``refresh`` from a
    worker thread when the catalogue is large.
    """

    def __init__(self, skills: Sequence[SkillSpec], search: ToolSearch) -> None:
        self._skills = list(skills)
        self._search = search
        self._described: Vectors | None = None
        self._vectors: Vectors | None = None
        self._version = -1
        self.tool_counts: dict[str, int] = {}

    @property
    def skills(self) -> list[SkillSpec]:
        return list(self._skills)

    @property
    def embedder(self) -> Embedder:
        return self._search.embedder

    def tool_vectors(self, keys: Sequence[str]) -> Vectors:
        """The search index's vectors of ``keys`` (rows of those it has embedded)."""
        return self._search.tool_vectors(keys)

    def description_vectors(self) -> Vectors:
        if self._described is None:
            self._described, _ = self._search.embed_texts([skill_text(s) for s in self._skills])
        return self._described

    def refresh(self) -> Vectors:
        """Skill vectors (row i for skill i), recomputed only if the catalogue changed."""
        if self._vectors is not None and self._version == self._search.version:
            return self._vectors
        described = self.description_vectors()
        members: dict[str, list[str]] = {s.id: [] for s in self._skills}
        for doc in self._search.docs():
            for skill_id in doc.skill_ids:
                if skill_id in members:
                    members[skill_id].append(doc.key)
        rows = []
        for i, skill in enumerate(self._skills):
            tool_vectors = self._search.tool_vectors(members[skill.id])
            if len(tool_vectors):
                rows.append(tool_vectors.mean(axis=0))
            else:
                rows.append(described[i])
        self._vectors = l2_normalise(np.stack(rows)) if rows else described
        self.tool_counts = {skill_id: len(keys) for skill_id, keys in members.items()}
        self._version = self._search.version
        return self._vectors

    def match(self, query: str, k: int = 3) -> list[SkillMatch]:
        """Skills closest to ``query`` by cosine, best first (empty for a lexical-only embedder)."""
        if self._search.embedder.dimension == 0 or not self._skills:
            return []
        vectors = self.refresh()
        query_vec = self._search.embedder.embed([query])[0]
        sims = vectors @ query_vec
        order = np.argsort(-sims, kind="stable")[:k]
        return [SkillMatch(self._skills[i].id, float(sims[i])) for i in order]
