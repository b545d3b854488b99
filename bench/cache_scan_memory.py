"""What a whole-catalogue read of the embedding cache costs: the peak RSS it adds and its CPU.

Run: ``.venv/bin/python bench/cache_scan_memory.py [--rows 12000] [--baseline OTHER/src]``.

A cache file of ``--rows`` 384-float vectors is written once (in a temp folder); then, each
in a fresh process, ``EmbeddingCache.get_many`` is asked for the last quarter of the rows (a
start's later round: most of the catalogue cached, a part wanted) and for all of them. Each
run prints the CPU milliseconds of the read, the RSS before and after it, and the peak
(``VmHWM``) before and after: what the read held at its highest. With ``--baseline`` the same
runs use another checkout's ``src`` first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIMENSION = 384

WRITE = """
import sys
from pathlib import Path
import numpy as np
from mcp_aggregator.search.embedding_cache import EmbeddingCache, text_digest
cache = EmbeddingCache(Path(sys.argv[1]))
rng = np.random.default_rng(0)
rows = int(sys.argv[2])
for start in range(0, rows, 1000):
    block = range(start, min(rows, start + 1000))
    items = [(text_digest(f"text {i}"), rng.standard_normal(384).astype(np.float32)) for i in block]
    cache.put_many("model", items)
cache.close()
"""

READ = """
import json, sys, time
from pathlib import Path
from mcp_aggregator.search.embedding_cache import EmbeddingCache, text_digest

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20

def peak():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

cache = EmbeddingCache(Path(sys.argv[1]))
rows, first = int(sys.argv[2]), int(sys.argv[3])
wanted = [text_digest(f"text {i}") for i in range(first, rows)]
before, peak_before = rss(), peak()
start = time.process_time()
found = cache.get_many("model", wanted, 384)
cpu = time.process_time() - start
print(json.dumps({"wanted": len(wanted), "found": len(found), "cpu_ms": round(cpu * 1000),
                  "rss": [round(before), round(rss())], "peak": [round(peak_before), round(peak())]}))
"""


def run(src: Path, code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=12_000)
    parser.add_argument("--src", type=Path, default=HERE.parent / "src")
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder, measured first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cache-scan-") as tmp:
        path = Path(tmp) / "embeddings.db"
        run(args.src, WRITE, str(path), str(args.rows))
        print(f"cache file {path.stat().st_size / 2**20:.0f} MB, {args.rows} rows\n")
        print("| checkout | rows wanted | CPU ms | RSS MB before -> after | peak MB before -> after |")
        print("| --- | --- | --- | --- | --- |")
        checkouts = [("before", args.baseline)] if args.baseline else []
        for label, src in [*checkouts, ("after" if args.baseline else "this", args.src)]:
            for first in (args.rows * 3 // 4, 0):
                got = json.loads(run(src, READ, str(path), str(args.rows), str(first)))
                rss, peak = got["rss"], got["peak"]
                print(
                    f"| {label} | {got['wanted']} | {got['cpu_ms']} | {rss[0]} -> {rss[1]} | {peak[0]} -> {peak[1]} |"
                )


if __name__ == "__main__":
    main()
