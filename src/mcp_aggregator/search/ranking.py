"""Pure ranking functions: query shaping, rank fusion and server-aware boosting.

The knobs are few on purpose and were chosen on LiveMCPBench (bench/search_bench.py);
each is a standard technique rather than a fit to that data:

- ``RRF_K = 60``: the constant of the reciprocal-rank-fusion paper, untuned.
- ``SUB_QUERY_WEIGHT = 0.5``: a task's dense score is the mean of the whole task's cosine
  and the best cosine of any one of its steps, so a tool serving one step of a multi-step
  task is not drowned by the task's other words.
- ``SERVER_BOOST = 0.3``: tools of servers whose best tool matches well are lifted a
  little, so the tools that work together (same server) rise together.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from mcp_aggregator.search.lexical_index import split_identifier

RRF_K = 60
SUB_QUERY_WEIGHT = 0.5
SERVER_BOOST = 0.3
_MIN_SUB_QUERY_WORDS = 3

_URL = re.compile(r"https?://\S+|\bwww\.\S+")
_PATH = re.compile(
    r"(?:(?<=\s)|^)(?:~|\.{1,2})?/[\w.\-/]+[\w]|\b[\w\-]+\.(?:md|pdf|docx?|xlsx?|pptx?|csv|"
    r"json|txt|html?|png|jpe?g|gif|svg|wav|mp3|mp4|zip|py|js|ts)\b"
)
_SPLIT = re.compile(r"(?<=[.!?;])\s+|,\s*(?:and\s+|then\s+)?|\s+(?:and then|then|and)\s+")


def normalise_query(query: str) -> str:
    """Replaces URLs and file paths by words an embedding model relates to tools.

    ``save it to /root/notes/cv.md`` becomes ``save it to file cv md``: the model knows
    what a file is but not what a path looks like.
    """
    text = _URL.sub(" web page URL ", query)
    text = _PATH.sub(lambda m: " file " + " ".join(split_identifier(m.group(0).rsplit("/", 1)[-1])) + " ", text)
    return " ".join(text.split())


def sub_queries(query: str) -> list[str]:
    """Steps of a multi-step task (sentences and clauses of three words or more).

    Returns [] when the query is a single step.
    """
    parts = [p.strip() for p in _SPLIT.split(query) if p and p.strip()]
    steps = [p for p in parts if len(p.split()) >= _MIN_SUB_QUERY_WORDS]
    return steps if len(steps) > 1 else []


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Sum over rankings of 1 / (k + rank), rank counted from 1."""
    fused: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] += 1.0 / (k + rank)
    return dict(fused)


def server_boost(
    scores: Mapping[str, float], server_of: Callable[[str], str], weight: float = SERVER_BOOST
) -> dict[str, float]:
    """Adds ``weight * best(server)`` to each tool's score.

    ``best(server)`` is the highest score among that server's tools, so the boost is on
    the fusion's own scale and ``weight`` means the same whatever that scale is.
    """
    if not scores or weight == 0.0:
        return dict(scores)
    best_of: dict[str, float] = {}
    for key, score in scores.items():
        server = server_of(key)
        best_of[server] = max(best_of.get(server, score), score)
    return {key: score + weight * best_of[server_of(key)] for key, score in scores.items()}


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Highest score first; ties broken by key so results are deterministic."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
