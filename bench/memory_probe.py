"""Runs ``mcp-aggregator`` (its CLI arguments follow) under a memory probe, for
``startup_memory.py``: RSS before and after the imports, and on demand a ``tracemalloc``
snapshot of the Python heap grouped by source file.

A snapshot is asked for by creating ``$MEMORY_PROBE_DIR/<label>.want``; the probe answers
with ``<label>.json`` (RSS, the traced total and the largest files). ``MEMORY_PROBE_TRACE=1``
traces the heap from the first import (slower, and the tracing's own memory counts in RSS).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

_TOP = 60


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def mappings_mb() -> list[tuple[str, float]]:
    """RSS by what is mapped, largest first: ``[heap]``, anonymous memory, and each file,
    the shared libraries of one installed package counted together."""
    groups: dict[str, int] = {}
    name = "[anon]"
    with open("/proc/self/smaps") as fh:
        for line in fh:
            if line[0] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
                parts = line.split(None, 5)
                name = parts[5].strip() if len(parts) > 5 else "[anon]"
                if "site-packages/" in name:
                    name = "site-packages/" + name.split("site-packages/", 1)[1].split("/", 1)[0]
                elif name.startswith("/"):
                    name = name.rsplit("/", 1)[1]
            elif line.startswith("Rss:"):
                groups[name] = groups.get(name, 0) + int(line.split()[1])
    ranked = sorted(groups.items(), key=lambda kv: -kv[1])
    return [(k, round(v / 1024, 1)) for k, v in ranked if v >= 512]


def _snapshot(label: str, out: Path) -> None:
    entry: dict[str, object] = {"label": label, "rss_mb": round(rss_mb(), 1), "at": time.monotonic()}
    entry["mappings"] = mappings_mb()
    entry["threads"] = len(os.listdir("/proc/self/task"))
    if tracemalloc.is_tracing():
        snap = tracemalloc.take_snapshot()
        stats = snap.statistics("filename")
        entry["traced_mb"] = round(sum(s.size for s in stats) / 2**20, 1)
        entry["files"] = [(str(s.traceback[0].filename), round(s.size / 2**20, 2)) for s in stats[:_TOP]]
        lines = snap.statistics("lineno")
        entry["lines"] = [
            (f"{s.traceback[0].filename}:{s.traceback[0].lineno}", round(s.size / 2**20, 2)) for s in lines[:_TOP]
        ]
    (out / f"{label}.json").write_text(json.dumps(entry))


def _watch(folder: Path) -> None:
    while True:
        for want in sorted(folder.glob("*.want")):
            want.unlink()
            _snapshot(want.stem, folder)
        time.sleep(0.1)


def main() -> None:
    folder = Path(os.environ["MEMORY_PROBE_DIR"])
    if os.environ.get("MEMORY_PROBE_TRACE") == "1":
        tracemalloc.start(1)
    _snapshot("interpreter", folder)
    from mcp_aggregator.cli import main as cli_main
    from mcp_aggregator.serve import runner  # noqa: F401  (what ``serve`` imports, measured apart)

    _snapshot("imports", folder)
    threading.Thread(target=_watch, args=(folder,), daemon=True).start()
    sys.argv = ["mcp-aggregator", *sys.argv[1:]]
    cli_main()


if __name__ == "__main__":
    main()
