"""The training data: tools, query -> tool pairs, the held-out split and hard negatives."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_aggregator.search.tool_doc import ToolDoc

_WORD = re.compile(r"[a-z0-9]+")
_CLAUSE = re.compile(r"(?<=[.!?;])\s+|\s+(?:and then|then|also|additionally|after that)\s+", re.I)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "for",
        "and",
        "or",
        "in",
        "on",
        "with",
        "by",
        "from",
        "is",
        "are",
        "be",
        "it",
        "me",
        "my",
        "i",
        "you",
        "your",
        "can",
        "please",
        "get",
    ]
)


@dataclass(frozen=True)
class Pair:
    query: str
    tool_id: str
    group: str
    """The request this pair came from: pairs of one request share it."""
    weight: float


@dataclass
class Data:
    docs: dict[str, ToolDoc]
    source_of: dict[str, str]
    pairs: list[Pair]

    mined: dict[str, list[str]] = field(default_factory=dict)
    """Per training query, the wrong tools the base model ranks highest (``mined_negatives``)."""
    mined_share: float = 0.0
    """The share of pairs whose hard negative is drawn from ``mined`` instead of the siblings."""

    def __post_init__(self) -> None:
        self.siblings: dict[str, list[str]] = defaultdict(list)
        self.by_source: dict[str, list[str]] = defaultdict(list)
        for tid, d in self.docs.items():
            self.siblings[d.server].append(tid)
            self.by_source[self.source_of[tid]].append(tid)

    def negative(self, tid: str, rng: random.Random) -> str:
        """Another tool of the same server, else one of the same source."""
        others = [t for t in self.siblings[self.docs[tid].server] if t != tid]
        return rng.choice(others) if others else rng.choice(self.by_source[self.source_of[tid]])

    def negative_for(self, pair: Pair, rng: random.Random) -> str:
        """A mined negative of ``pair``'s query with probability ``mined_share`` (when it has
        any), else ``negative``. Without mining it draws exactly as ``negative`` does, so a
        seed gives the runs made before mining existed their negatives back."""
        if not self.mined:
            return self.negative(pair.tool_id, rng)
        mined = self.mined.get(pair.query)
        use_mined = rng.random() < self.mined_share
        sibling = self.negative(pair.tool_id, rng)
        return rng.choice(mined) if mined and use_mined else sibling


def tool_doc(row: dict[str, Any]) -> ToolDoc:
    tool = row["tool"]
    params = tool.get("parameters") or {}
    schema = {"properties": params} if isinstance(params, dict) else {}
    server, name = str(tool.get("server") or row["source"]), str(tool.get("name") or "")
    return ToolDoc(f"{server}.{name}", server, name, str(tool.get("description") or ""), "", schema)


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def clause_for(query: str, doc: ToolDoc) -> str:
    """The clause of a multi-part request that shares most words with the tool, or the
    whole request when no clause shares any."""
    clauses = [c.strip() for c in _CLAUSE.split(query) if c and len(c.strip()) > 12]
    if len(clauses) < 2:
        return query
    tool_words = words(f"{doc.name} {doc.description} {' '.join(doc.parameters())}")
    best = max(clauses, key=lambda c: len(words(c) & tool_words))
    return best if words(best) & tool_words else query


MULTI_PART = ("clause", "whole", "both")
"""How a request needing several tools is paired with each of them: with its clause that
shares most words with the tool, with the whole request (as LiveMCPBench asks: one long
task, several tools), or both."""


def load_data(data: Path, multi_part: str = "clause") -> Data:
    """Tools by id, each tool's source, and the training pairs of the folder ``data``."""
    docs: dict[str, ToolDoc] = {}
    source_of: dict[str, str] = {}
    with (data / "tools.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            docs[row["id"]] = tool_doc(row)
            source_of[row["id"]] = row["source"]
    pairs = []
    with (data / "train.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            tid = row["tool_id"]
            if tid not in docs:
                docs[tid] = tool_doc(row)
                source_of[tid] = row["source"]
            n_gold = int(row.get("n_gold") or 1)
            group = f"{row['source']}|{row['split']}|{row.get('query_id', row['query'])}"
            if n_gold == 1:
                pairs.append(Pair(row["query"], tid, group, 1.0))
                continue
            weight = 1.0 / math.sqrt(n_gold)
            if multi_part in ("clause", "both"):
                pairs.append(Pair(clause_for(row["query"], docs[tid]), tid, group, weight))
            if multi_part in ("whole", "both"):
                pairs.append(Pair(row["query"], tid, group, weight))
    return Data(docs, source_of, pairs)


def held_out(pairs: list[Pair], share: float) -> tuple[list[Pair], list[Pair]]:
    """Train and held-out pairs, split by request (a stable hash of its group)."""
    train, dev = [], []
    for p in pairs:
        bucket = int(hashlib.sha256(p.group.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        (dev if bucket < share else train).append(p)
    return train, dev


def dev_pool(data: Data, dev: list[Pair], size: int) -> list[str]:
    """The tools the held-out requests are ranked among: theirs and their servers' others."""
    pool = sorted({t for p in dev for t in data.siblings[data.docs[p.tool_id].server]})[:size]
    return sorted(set(pool) | {p.tool_id for p in dev})
