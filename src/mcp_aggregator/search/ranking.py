"""Pure ranking functions: query shaping, rank fusion and server-level scoring.

A search fuses tool rankings (BM25, dense) and server rankings (by best tool, by the
centroid of the server's tool vectors, by the server's description) with reciprocal-rank
fusion; a server's fused score is added to each of its tools, so tools that work
together (same server) rise together and the servers a task needs reach the top.

The knobs are few on purpose; each is a standard value rather than a fit to
LiveMCPBench (bench/search_bench.py):

- ``RRF_K = 60``: the constant of the reciprocal-rank-fusion paper, untuned.
- ``SUB_QUERY_WEIGHT = 0.5``: a task's dense score is the mean of the whole task's cosine
  and the best cosine of any one of its steps, so a tool serving one step of a multi-step
  task is not drowned by the task's other words.
- Server rankings weigh as much as tool rankings, and dense rankings as much as BM25's
  unless ``search.dense_weight`` says otherwise (default 1).
- Queries under twelve words are not split into steps (latency; see ``sub_queries``).

Fusion works on arrays of rows (see ``ToolTable``), not dicts of keys, so a search at
10,000 tools does no per-candidate Python work.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mcp_aggregator.search.implicit_needs import PATH_PATTERN, URL_PATTERN
from mcp_aggregator.text import split_identifier

RRF_K = 60
SUB_QUERY_WEIGHT = 0.5
_MIN_SUB_QUERY_WORDS = 3
# Below this a query is one request however it is phrased ("get X and summarise it"), and
# each step would cost another embedding: at 10,000 tools that doubled the p95 latency of
# an eight-word query.
_MIN_SPLIT_QUERY_WORDS = 12

Rows = npt.NDArray[np.intp]
Scores = npt.NDArray[np.float64]

_URL = re.compile(URL_PATTERN)
_PATH = re.compile(PATH_PATTERN)
_SPLIT = re.compile(r"(?<=[.!?;])\s+|,\s*(?:and\s+|then\s+)?|\s+(?:and then|then|and)\s+")


def normalise_query(query: str) -> str:
    """Replaces URLs and file paths by words an embedding model relates to tools.

    ``save it to /root/notes/cv.md`` becomes ``save it to file cv md``: the model knows
    what a file is but not what a path looks like. A URL keeps its host's words
    (``youtube``), which often name the service a tool is for.
    """
    text = _URL.sub(_url_words, query)
    text = _PATH.sub(lambda m: " file " + " ".join(split_identifier(m.group(0).rsplit("/", 1)[-1])) + " ", text)
    return " ".join(text.split())


_HOST_NOISE = frozenset({"www", "com", "org", "net", "io", "cn", "co", "uk", "http", "https", "m"})


def _url_words(match: re.Match[str]) -> str:
    host = re.sub(r"^(?:https?://)?", "", match.group(0)).split("/", 1)[0]
    words = [w for w in split_identifier(host.split(":", 1)[0]) if w not in _HOST_NOISE and not w.isdigit()]
    return " web page URL " + " ".join(words) + " "


def sub_queries(query: str) -> list[str]:
    """Steps of a multi-step task (sentences and clauses of three words or more).

    Returns [] when the query is a single step or shorter than twelve words.
    """
    if len(query.split()) < _MIN_SPLIT_QUERY_WORDS:
        return []
    parts = [p.strip() for p in _SPLIT.split(query) if p and p.strip()]
    steps = [p for p in parts if len(p.split()) >= _MIN_SUB_QUERY_WORDS]
    return steps if len(steps) > 1 else []


def step_scores(sims: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Scores of rows from their cosines with the whole query (column 0) and its steps.

    ``sims`` has shape (rows, 1 + steps). Without steps the score is the cosine itself.
    """
    if sims.shape[1] == 1:
        return sims[:, 0]
    out: npt.NDArray[np.float32] = (1 - SUB_QUERY_WEIGHT) * sims[:, 0] + SUB_QUERY_WEIGHT * sims[:, 1:].max(axis=1)
    return out


def reciprocal_rank_fusion(
    rankings: Sequence[Rows], size: int, k: int = RRF_K, weights: Sequence[float] | None = None
) -> Scores:
    """Per row 0..size-1, the sum over rankings of weight / (k + rank), rank counted from 1
    (``weights`` in parallel with ``rankings``; all 1 when None).

    A ranking is an array of distinct rows, best first; a row in no ranking scores 0.
    """
    fused = np.zeros(size, dtype=np.float64)
    for i, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[i]
        fused[ranking] += weight / (k + np.arange(1, len(ranking) + 1))
    return fused


def groups_by_best_row(scores: Scores, groups: Rows) -> Rows:
    """Distinct ``groups`` ordered by their best row's score, ties by the lower group.

    ``scores`` and ``groups`` run in parallel over the rows; a tool's server is its group.
    """
    order = np.lexsort((groups, -scores))
    distinct, first = np.unique(groups[order], return_index=True)
    out: Rows = distinct[np.argsort(first)]
    return out


def top_rows(scores: Scores, rows: Rows, k: int) -> Rows:
    """Positions of the ``k`` highest ``scores``, best first; ties by the lower row."""
    out: Rows = np.lexsort((rows, -scores))[:k]
    return out
