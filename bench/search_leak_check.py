"""Do the search benchmarks' queries appear in a training set? They must not.

Run: ``.venv/bin/python bench/search_leak_check.py --data PATH/TO/tooldata``. For
LiveMCPBench and the development set, counts the queries found word for word in the
training pairs (``train.jsonl``) and those sharing more than ``--share`` of their word
6-grams with all the training queries together; exits 1 when any does.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from search_eval import devset, livemcpbench

_WORD = re.compile(r"[a-z0-9]+")


def normalised(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def grams(text: str, n: int = 6) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="folder with train.jsonl")
    parser.add_argument("--share", type=float, default=0.3)
    args = parser.parse_args()
    with (args.data / "train.jsonl").open() as fh:
        train = [json.loads(line)["query"] for line in fh]
    exact = {normalised(q) for q in train}
    train_grams = set().union(*(grams(q) for q in train))
    leaks = 0
    print("| data set | queries | in the training data | sharing > share of 6-grams |")
    print("| --- | ---: | ---: | ---: |")
    for data in (livemcpbench(), devset()):
        queries = [t.query for t in data.tasks]
        found = [q for q in queries if normalised(q) in exact]
        near = [q for q in queries if (g := grams(q)) and len(g & train_grams) / len(g) > args.share]
        leaks += len(found) + len(near)
        print(f"| {data.name} | {len(queries)} | {len(found)} | {len(near)} |")
        for q in found + near:
            print(f"  {q[:100]}")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
