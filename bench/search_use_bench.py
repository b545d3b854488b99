"""Learning from use, replayed on LiveMCPBench: half the tasks as past use, half scored.

Run: ``.venv/bin/python bench/search_use_bench.py [--model base|tools]``.

The tasks are dealt into two halves by a hash of the task id (so a task is never on both
sides); for each half in turn the other half's tasks are stored as past uses, as the
gateway stores a facade ``search`` followed by an ``execute`` of a hit (one (query, tool)
pair per step of the task, the step's first gold tool), and the half is scored with the
shipped engine, with and without those uses. The two halves' figures are averaged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio

from mcp_aggregator.search import SearchSettings, ToolSearch, build_embedder
from search_eval import MEASURES, Task, evaluate, livemcpbench


def half_of(task: Task) -> int:
    return int(hashlib.sha256(task.id.encode()).hexdigest(), 16) % 2


def uses_of(tasks: list[Task]) -> list[tuple[str, str]]:
    return [(t.query, min(step)) for t in tasks for step in t.steps]


async def main(model: str, out: Path) -> None:
    data = livemcpbench()
    embedder = build_embedder(SearchSettings.model_validate({"onnx_model": model}))
    halves = [[t for t in data.tasks if half_of(t) == h] for h in (0, 1)]
    rows: dict[str, list[dict[str, float]]] = {"without uses": [], "with the other half's uses": []}
    with tempfile.TemporaryDirectory() as tmp:
        for h in (0, 1):
            search = ToolSearch(SearchSettings(cache_path=Path(tmp) / "cache.db"), embedder)
            await search.upsert(data.docs)
            scored = halves[h]
            rows["without uses"].append(evaluate(lambda q, s=search: [x.key for x in s.search(q, 50)], scored)["all"])
            await search.add_uses(uses_of(halves[1 - h]))
            rows["with the other half's uses"].append(
                evaluate(lambda q, s=search: [x.key for x in s.search(q, 50)], scored)["all"]
            )
            search.close()
    result: dict[str, Any] = {"model": embedder.model_id, "halves": [len(h) for h in halves]}
    print(f"LiveMCPBench, {embedder.model_id}, halves of {result['halves']} tasks (mean of the two halves)")
    print("| engine | " + " | ".join(MEASURES) + " |")
    print("| --- " * (len(MEASURES) + 1) + "|")
    for name, per_half in rows.items():
        means = {m: round(sum(r[m] for r in per_half) / 2, 3) for m in MEASURES}
        result[name] = means
        print(f"| {name} | " + " | ".join(str(means[m]) for m in MEASURES) + " |")
    await anyio.Path(out.parent).mkdir(parents=True, exist_ok=True)
    await anyio.Path(out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="base", choices=["base", "tools"], help="search.onnx_model")
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "search_use.json")
    args = parser.parse_args()
    anyio.run(main, args.model, args.json)
