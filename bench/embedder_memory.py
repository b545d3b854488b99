"""Where the embedder's memory goes: RSS, and RSS by mapping, after each step of making the
default embedder and embedding tool texts with it, in a fresh process per run.

Run: ``.venv/bin/python bench/embedder_memory.py [--texts 527] [--session-options JSON]
[--json bench/results/embedder_memory.json]``.

The steps: numpy, importing onnxruntime, the gateway's embedder module, the embedder made
as ``search.build`` makes it (its WordPiece tokenizer, the machine's variant and its
session), embedding ``--texts`` LiveMCPBench tool texts (name and description, as a start
embeds them, on the embedder's worker threads), one query, and ``free_heap``. Each run
prints the CPU seconds the embedding took, the peak (``VmHWM``) and a digest of the vectors:
``--session-options '{"enable_cpu_mem_arena": false}'`` (attributes of onnxruntime's
``SessionOptions``; ``"cfg:key"`` for a session config entry) measures another setting and
shows whether the vectors stay bit for bit the same.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TEXTS = HERE / "data" / "livemcpbench" / "tools_flat.jsonl"
SHOWN = ("[anon]", "[heap]", "onnxruntime", "tokenizers", "model weights")


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def by_mapping() -> dict[str, float]:
    """RSS (MB) of the anonymous memory, the main heap, onnxruntime's and tokenizers'
    libraries (the latter loaded only by a checkout before WordPiece) and the model's mapped
    weights file."""
    groups: dict[str, int] = {}
    name = "[anon]"
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split(" ", 1)[0]
            if "-" in head and all(c in "0123456789abcdef-" for c in head):
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) > 5 else "[anon]"
                if "site-packages/" in path:
                    name = path.split("site-packages/", 1)[1].split("/", 1)[0]
                elif path.endswith(".data") and "minilm" in path:
                    name = "model weights"
                else:
                    name = path
            elif line.startswith("Rss:"):
                groups[name] = groups.get(name, 0) + int(line.split()[1])
    return {k: round(groups.get(k, 0) / 1024, 1) for k in SHOWN}


def _patch_session_options(options: dict[str, Any]) -> None:
    import onnxruntime as ort

    from mcp_aggregator.search import onnx_embedder

    made = onnx_embedder._session_options

    def patched(threads: int) -> ort.SessionOptions:
        opts = made(threads)
        for key, value in options.items():
            if key.startswith("cfg:"):
                opts.add_session_config_entry(key[4:], str(value))
            else:
                setattr(opts, key, value)
        return opts

    onnx_embedder._session_options = patched


def child(count: int, options: dict[str, Any]) -> dict[str, Any]:
    steps: list[tuple[str, float, dict[str, float]]] = []

    def mark(step: str) -> None:
        steps.append((step, round(rss_mb(), 1), by_mapping()))

    mark("interpreter")
    import numpy as np

    mark("numpy")
    import onnxruntime  # noqa: F401

    mark("onnxruntime imported")
    from mcp_aggregator.search import onnx_embedder
    from mcp_aggregator.search.free_heap import free_heap

    mark("the embedder's modules")
    _patch_session_options(options)
    embedder = onnx_embedder.OnnxMiniLmEmbedder()
    mark(f"embedder made ({embedder.variant})")
    texts = [f"{t['name']}: {t.get('description') or ''}" for t in map(json.loads, TEXTS.read_text().splitlines())]
    texts = texts[:count]
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    vectors = embedder.embed(texts)
    after = resource.getrusage(resource.RUSAGE_SELF)
    mark(f"{len(texts)} texts embedded")
    embedder.embed(["list files"])
    mark("a query embedded")
    free_heap()
    mark("free_heap")
    used = (after.ru_utime + after.ru_stime) - (cpu.ru_utime + cpu.ru_stime)
    digest = hashlib.sha256(np.ascontiguousarray(vectors).tobytes()).hexdigest()[:16]
    return {"steps": steps, "embed_cpu_s": round(used, 2), "peak_mb": round(peak_mb(), 1), "vectors": digest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=527)
    parser.add_argument("--session-options", default="{}", help="JSON: SessionOptions attributes, cfg:key entries")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "embedder_memory.json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    options = json.loads(args.session_options)
    if args.child:
        print(json.dumps(child(args.texts, options)))
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, __file__, "--child", "--texts", str(args.texts), "--session-options", args.session_options]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    run = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"session options {options or 'as shipped'}\n")
    print("| step | RSS MB (+added) | " + " | ".join(SHOWN) + " |")
    print("| --- | --- |" + " --- |" * len(SHOWN))
    before = 0.0
    for step, rss, maps in run["steps"]:
        print(f"| {step} | {rss:.0f} (+{rss - before:.0f}) | " + " | ".join(f"{maps[k]:.1f}" for k in SHOWN) + " |")
        before = rss
    print(f"\npeak {run['peak_mb']} MB, embedding CPU {run['embed_cpu_s']} s, vectors sha256 {run['vectors']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"session_options": options, **run}, indent=2))


if __name__ == "__main__":
    main()
