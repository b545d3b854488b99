"""What a gateway's imports cost, by package: RSS booked to the package whose module was
being imported when it grew.

Run: ``.venv/bin/python bench/import_memory.py [--top 30] [--ours]
[--json bench/results/import_memory.json]``.

A fresh interpreter imports what ``serve`` imports (``mcp_aggregator.cli`` and
``mcp_aggregator.serve.runner``) under an audit hook that reads ``/proc/self/statm`` at
every import event and books the growth since the last event to the module imported then
(by top-level package; the gateway's own by room, ``mcp_aggregator.search``). A module's
own top-level code that runs after its last import is booked to that import's package, so
read a small package's figure as approximate; the total is exact.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import json, os, sys
page = os.sysconf("SC_PAGE_SIZE")
ours = sys.argv[1] == "1"

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * page

book = {}
state = {"current": "<interpreter>", "last": rss()}

def package(name):
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "mcp_aggregator" and ours else parts[0]

def hook(event, args):
    if event != "import":
        return
    now = rss()
    book[state["current"]] = book.get(state["current"], 0) + now - state["last"]
    state["last"] = now
    state["current"] = package(args[0])

start = rss()
sys.addaudithook(hook)
import mcp_aggregator.cli, mcp_aggregator.serve.runner
hook("import", ("<end>",))
print(json.dumps({"start": start, "end": rss(), "book": book}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--ours", action="store_true", help="the gateway's own modules by room")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "import_memory.json")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "1" if args.ours else "0"], env=env, capture_output=True, text=True, check=True
    )
    run = json.loads(done.stdout.strip().splitlines()[-1])
    book: dict[str, int] = run["book"]
    total = (run["end"] - run["start"]) / 2**20
    print(f"interpreter {run['start'] / 2**20:.1f} MB, imports +{total:.1f} MB, by package:\n")
    for name, grown in sorted(book.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{grown / 2**20:7.2f}  {name}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    mb = {name: round(grown / 2**20, 2) for name, grown in sorted(book.items(), key=lambda kv: -kv[1])}
    args.json.write_text(json.dumps({"interpreter_mb": run["start"] / 2**20, "imports_mb": total, "by_package": mb}))


if __name__ == "__main__":
    main()
