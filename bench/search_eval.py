"""Tool-search quality: the two data sets, the measures, and cross-validation grouped by server.

Data sets (both in ``bench/data/``):
- ``livemcpbench``: 527 real tools of 70 servers, 94 tasks (17 need one tool, 77 several).
- ``mcp_devset``: 63 tools of the servers this repository installs, 60 requests written
  before any ranking was seen (46 single-step, 14 multi-step).

A task is a list of steps; a step is the set of tool keys that do it (LiveMCPBench: every
tool bearing the gold name, as 13 names occur on several servers). Recall@k is the share
of steps with a tool among the first k keys; nDCG@10 credits each step once, at its first
hit; server Recall@5 is the share of the task's servers among the first five distinct
servers of the ranking.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_aggregator.search import ToolDoc

DATA = Path(__file__).parent / "data"
Ranker = Callable[[str], list[str]]
MEASURES = ("recall@5", "recall@10", "ndcg@10", "server_recall@5")


@dataclass(frozen=True)
class Task:
    id: str
    query: str
    steps: tuple[frozenset[str], ...]
    servers: frozenset[str]

    @property
    def kind(self) -> str:
        return "single" if len(self.steps) == 1 else "multi"


@dataclass(frozen=True)
class DataSet:
    name: str
    docs: list[ToolDoc]
    tasks: list[Task]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "server"


def _doc(server: str, t: Mapping[str, Any]) -> ToolDoc:
    return ToolDoc(
        f"{server}.{t['name']}",
        server,
        t["name"],
        t["description"] or "",
        t["server_description"] or "",
        t["input_schema"] or {},
    )


def livemcpbench() -> DataSet:
    rows = [json.loads(line) for line in (DATA / "livemcpbench" / "tools_flat.jsonl").read_text().splitlines()]
    docs = [_doc(slug(t["server"]), t) for t in rows]
    by_name: dict[str, set[str]] = {}
    for d in docs:
        by_name.setdefault(d.name, set()).add(d.key)
    tasks = []
    for line in (DATA / "livemcpbench" / "queries_flat.jsonl").read_text().splitlines():
        t = json.loads(line)
        names = [n for n in dict.fromkeys(t["gold_tool_names"]) if n not in set(t["unresolved_names"])]
        if names:
            steps = tuple(frozenset(by_name[n]) for n in names)
            tasks.append(Task(t["id"], t["query"], steps, frozenset(slug(s) for s in t["gold_servers"])))
    return DataSet("livemcpbench", docs, tasks)


def devset() -> DataSet:
    rows = [json.loads(line) for line in (DATA / "mcp_devset" / "tools.jsonl").read_text().splitlines()]
    docs = [_doc(t["server"], t) for t in rows]
    tasks = []
    for line in (DATA / "mcp_devset" / "queries.jsonl").read_text().splitlines():
        t = json.loads(line)
        steps = tuple(frozenset(step) for step in t["steps"])
        servers = frozenset(key.split(".", 1)[0] for step in steps for key in step)
        tasks.append(Task(t["id"], t["query"], steps, servers))
    return DataSet("mcp_devset", docs, tasks)


def task_scores(keys: Sequence[str], task: Task) -> dict[str, float]:
    """The measures of one ranking (tool keys, best first) for one task."""
    out = {}
    for k in (5, 10):
        top = set(keys[:k])
        out[f"recall@{k}"] = sum(bool(step & top) for step in task.steps) / len(task.steps)
    done: set[int] = set()
    dcg = 0.0
    for rank, key in enumerate(keys[:10]):
        for i, step in enumerate(task.steps):
            if i not in done and key in step:
                done.add(i)
                dcg += 1 / math.log2(rank + 2)
                break
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(task.steps))))
    out["ndcg@10"] = dcg / ideal
    servers = list(dict.fromkeys(key.split(".", 1)[0] for key in keys))[:5]
    out["server_recall@5"] = len(set(servers) & task.servers) / len(task.servers) if task.servers else 0.0
    return out


def mean(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    rows = list(rows)
    if not rows:
        return {}
    return {m: round(sum(r[m] for r in rows) / len(rows), 3) for m in MEASURES} | {"n": len(rows)}


def evaluate(ranker: Ranker, tasks: Sequence[Task]) -> dict[str, dict[str, float]]:
    """Measures over all tasks, over single-step and over multi-step tasks."""
    scored = [(task, task_scores(ranker(task.query), task)) for task in tasks]
    return {
        "all": mean(s for _, s in scored),
        "single": mean(s for t, s in scored if t.kind == "single"),
        "multi": mean(s for t, s in scored if t.kind == "multi"),
    }


def server_folds(tasks: Sequence[Task], k: int = 5, seed: int = 0) -> list[list[int]]:
    """``k`` folds of task positions, grouped by server: the servers are dealt into folds
    and a task goes with the fold of its first server (by name), so the tasks of a server
    are never split between tuning and testing."""
    servers = sorted({min(t.servers) for t in tasks if t.servers})
    random.Random(seed).shuffle(servers)
    fold_of = {server: i % k for i, server in enumerate(servers)}
    folds: list[list[int]] = [[] for _ in range(k)]
    for i, task in enumerate(tasks):
        folds[fold_of[min(task.servers)] if task.servers else i % k].append(i)
    return folds


Params = Mapping[str, Any]
Objective = Callable[[Params, Sequence[Task]], float]


def cross_validate(
    grid: Sequence[Params],
    score: Objective,
    tasks: Sequence[Task],
    folds: Sequence[Sequence[int]],
) -> tuple[list[Params], list[Task]]:
    """For each fold, the grid point that ``score``s best on the other folds' tasks.

    Returns the chosen points (one per fold) and the tasks in fold order, so that the
    caller measures each fold's tasks with its own point: figures on tasks never tuned on.
    """
    chosen = []
    ordered = []
    for held in folds:
        held_set = set(held)
        train = [t for i, t in enumerate(tasks) if i not in held_set]
        best = max(grid, key=lambda p: score(p, train))
        chosen.append(best)
        ordered.extend(tasks[i] for i in held)
    return chosen, ordered


def held_out(
    chosen: Sequence[Params],
    folds: Sequence[Sequence[int]],
    tasks: Sequence[Task],
    ranker_of: Callable[[Params], Ranker],
) -> dict[str, dict[str, float]]:
    """Measures of each fold's tasks ranked with the point chosen without them."""
    scored = []
    for params, held in zip(chosen, folds, strict=True):
        ranker = ranker_of(params)
        scored.extend((tasks[i], task_scores(ranker(tasks[i].query), tasks[i])) for i in held)
    return {
        "all": mean(s for _, s in scored),
        "single": mean(s for t, s in scored if t.kind == "single"),
        "multi": mean(s for t, s in scored if t.kind == "multi"),
    }
