"""The contrastive loss and the held-out score, shared by both training paths."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import torch

from search_training.pairs import Data, Pair

Embed = Callable[[list[str]], np.ndarray]


def contrastive_loss(
    q: torch.Tensor, t: torch.Tensor, chunk: list[Pair], tools: list[str], scale: float
) -> torch.Tensor:
    """Each query against every positive and hard negative of the batch (``tools``: the
    positives in order, then the negatives), the other tools of its own request masked out."""
    logits = scale * q @ t.T
    mask = torch.zeros_like(logits, dtype=torch.bool)
    for i, p in enumerate(chunk):
        for j, x in enumerate(tools):
            if j != i and (x == p.tool_id or any(c.group == p.group and c.tool_id == x for c in chunk)):
                mask[i, j] = True
    logits = logits.masked_fill(mask, float("-inf"))
    weights = torch.tensor([p.weight for p in chunk])
    losses = torch.nn.functional.cross_entropy(logits, torch.arange(len(chunk)), reduction="none")
    return (losses * weights).sum() / weights.sum()


def dev_score(embed: Embed, dev: list[Pair], pool: list[str], data: Data, embed_query: Embed | None = None) -> float:
    """nDCG@5 of the held-out requests over ``pool``; queries go through ``embed_query``
    when given (a query-side map), else through ``embed`` as the tools do."""
    tool_vecs = embed([data.docs[t].dense_text() for t in pool])
    index = {t: i for i, t in enumerate(pool)}
    by_query: dict[str, set[int]] = defaultdict(set)
    for p in dev:
        by_query[p.group].add(index[p.tool_id])
    texts = {p.group: p.query for p in dev if p.weight == 1.0}
    for p in dev:
        texts.setdefault(p.group, p.query)
    groups = list(by_query)
    q = (embed_query or embed)([texts[g] for g in groups])
    top = np.argsort(-(q @ tool_vecs.T), axis=1)[:, :5]
    total = 0.0
    for row, g in zip(top, groups, strict=True):
        gold = by_query[g]
        dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(row) if i in gold)
        ideal = sum(1 / math.log2(r + 2) for r in range(min(len(gold), 5)))
        total += dcg / ideal
    return total / len(groups)
