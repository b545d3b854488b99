"""Skill classifiers: an offline one by embedding similarity, and one asking an LLM."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import anyio.to_thread
import httpx
import numpy as np

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.config import SkillSpec
from mcp_aggregator.search.embedder import Embedder, Vectors
from mcp_aggregator.search.tool_doc import ToolDoc, excerpt

MAX_SKILLS = 3
# Softmax temperature over cosines. MiniLM cosines between a tool and ~15 skill texts sit
# within ~0.3 of each other; at 0.03 a lead of ~0.05 over the runner-up already gives the
# top skill more than half the mass, so clear matches pass min_confidence 0.5 and vague
# tools (no clear lead) stay below it and are left with fewer or no skills.
TEMPERATURE = 0.03


@dataclass(frozen=True)
class SkillAssignment:
    skill_id: str
    confidence: float


class Classifier(Protocol):
    """Assigns skills to a tool. Raises ``SearchError`` when classification failed."""

    async def classify(self, doc: ToolDoc) -> list[SkillAssignment]: ...


def select(assignments: Sequence[SkillAssignment], min_confidence: float) -> list[SkillAssignment]:
    """At most three assignments with confidence >= ``min_confidence``, best first
    (the first is the primary skill)."""
    best: dict[str, float] = {}
    for a in assignments:
        best[a.skill_id] = max(best.get(a.skill_id, 0.0), a.confidence)
    kept = [SkillAssignment(s, c) for s, c in best.items() if c >= min_confidence]
    return sorted(kept, key=lambda a: (-a.confidence, a.skill_id))[:MAX_SKILLS]


def softmax_confidences(sims: Vectors, temperature: float = TEMPERATURE) -> Vectors:
    z = (sims - sims.max()) / temperature
    e = np.exp(z)
    out: Vectors = (e / e.sum()).astype(np.float32)
    return out


StoredVectors = Callable[[Sequence[str]], Vectors]
"""The search index's vectors of the given tool keys (rows of those it has)."""


class EmbeddingClassifier:
    """Offline default: softmax over cosines between the tool and each skill's text.

    With ``stored`` (the search index's vectors) a tool the index has embedded is not
    embedded again: at a cold start that halves the model's work.
    """

    def __init__(
        self,
        embedder: Embedder,
        skills: Sequence[SkillSpec],
        skill_vectors: Vectors,
        *,
        stored: StoredVectors | None = None,
    ) -> None:
        if embedder.dimension == 0:
            raise SearchError("the embedding classifier needs an embedder with vectors (search.embedder)")
        self._embedder = embedder
        self._skills = list(skills)
        self._skill_vectors = skill_vectors
        self._stored = stored

    async def classify(self, doc: ToolDoc) -> list[SkillAssignment]:
        found = self._stored([doc.key]) if self._stored is not None else None
        if found is not None and len(found):
            vector = found[0]
        else:
            vector = await anyio.to_thread.run_sync(lambda: self._embedder.embed([doc.dense_text()])[0])
        probs = softmax_confidences(self._skill_vectors @ vector)
        order = np.argsort(-probs, kind="stable")[:MAX_SKILLS]
        return [SkillAssignment(self._skills[i].id, float(probs[i])) for i in order]


_PROMPT = """Classify the tool below into 1 to 3 of these skills. Answer with JSON only:
{{"skills": [{{"id": "<skill id>", "confidence": <0..1>}}]}}

Skills:
{skills}

Tool: {name} (server {server})
Description: {description}
Input schema: {schema}"""

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def build_prompt(doc: ToolDoc, skills: Sequence[SkillSpec]) -> str:
    listed = "\n".join(f"- {s.id}: {s.name}. {s.description}" for s in skills)
    schema = excerpt(json.dumps(doc.input_schema, sort_keys=True), 600)
    return _PROMPT.format(
        skills=listed,
        name=doc.name,
        server=doc.server,
        description=excerpt(doc.description, 1500),
        schema=schema,
    )


def parse_answer(text: str, skills: Sequence[SkillSpec]) -> list[SkillAssignment]:
    """Assignments from the model's JSON answer; unknown skill ids are dropped.

    Raises ``SearchError`` when the answer holds no usable JSON.
    """
    match = _JSON_OBJECT.search(text)
    try:
        data = json.loads(match.group(0) if match else text)
        items = data["skills"]
        known = {s.id for s in skills}
        return [
            SkillAssignment(str(item["id"]), min(1.0, max(0.0, float(item["confidence"]))))
            for item in items
            if str(item["id"]) in known
        ]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SearchError(f"classifier answer is not the expected JSON: {excerpt(text, 120)!r}") from exc


class LlmClassifier:
    """Asks an LLM through the Anthropic Messages API or an OpenAI-compatible chat API."""

    def __init__(
        self,
        api: Literal["anthropic", "openai"],
        base_url: str,
        model: str,
        skills: Sequence[SkillSpec],
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._api = api
        self._model = model
        self._skills = list(skills)
        headers = _headers(api, api_key)
        self._client = client or httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def classify(self, doc: ToolDoc) -> list[SkillAssignment]:
        prompt = build_prompt(doc, self._skills)
        try:
            if self._api == "anthropic":
                response = await self._client.post(
                    "v1/messages",
                    json={
                        "model": self._model,
                        "max_tokens": 300,
                        "messages": [{"role": "user", "content": prompt}],
                    },
                )
            else:
                response = await self._client.post(
                    "chat/completions",
                    json={
                        "model": self._model,
                        "temperature": 0,
                        "messages": [{"role": "user", "content": prompt}],
                    },
                )
            response.raise_for_status()
            text = _answer_text(self._api, response.json())
        except httpx.HTTPError as exc:
            raise SearchError(f"classifier LLM call failed for {doc.key}: {exc}") from exc
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise SearchError(f"classifier LLM answered malformed data for {doc.key}: {exc}") from exc
        return parse_answer(text, self._skills)


def _headers(api: str, api_key: str | None) -> dict[str, str]:
    if api == "anthropic":
        headers = {"anthropic-version": "2023-06-01"}
        if api_key:
            headers["x-api-key"] = api_key
        return headers
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def _answer_text(api: str, body: Any) -> str:
    if api == "anthropic":
        return "".join(block["text"] for block in body["content"] if block.get("type") == "text")
    return str(body["choices"][0]["message"]["content"])
