"""What one tool text costs the embedding model: the floor under a cold start's indexing.

Run: ``.venv/bin/python bench/embed_cost_bench.py [--texts 200] [--json bench/results/embed_cost.json]``.

Embeds the first ``--texts`` tool texts of ``startup_bench.py``'s catalogue (the texts the
index embeds, ``ToolDoc.dense_text``) on one thread, in each of these ways, and reports
the CPU milliseconds per text (the calling thread's CPU time, best of three interleaved
rounds, so that other processes on the machine count for little) and the worst cosine to
the packaged model's vectors:

- the packaged model, one text per inference (the baseline);
- the int8 variant, one text per inference (what the gateway runs on an x86 CPU with VNNI);
- the int8 variant in batches of 8 and 32 texts, sorted by length;
- the int8 variant with every FFN down-projection quantised too (the shipped variant keeps
  the first three in float for accuracy).

Prints a table and writes the JSON to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.many_tools_server import tool_list

from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder, _open_session
from mcp_aggregator.search.onnx_quantize import quantize_matmuls
from mcp_aggregator.search.tool_doc import ToolDoc

HERE = Path(__file__).resolve().parent
Embed = Callable[[list[str]], np.ndarray]


def catalogue_texts(count: int) -> list[str]:
    texts: list[str] = []
    server = 0
    while len(texts) < count:
        name = f"s{server:02d}"
        tools = tool_list(name, 200)
        texts += [ToolDoc(f"{name}.{t.name}", name, t.name, t.description or "").dense_text() for t in tools]
        server += 1
    return texts[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "embed_cost.json")
    args = parser.parse_args()
    texts = catalogue_texts(args.texts)
    packaged = OnnxMiniLmEmbedder(variant="packaged", threads=1)
    int8 = OnnxMiniLmEmbedder(variant="int8", threads=1)
    tokens = [len(packaged._tokenizer.ids(text)) for text in texts]
    with tempfile.TemporaryDirectory(prefix="embed-cost-") as tmp:
        all_int8 = Path(tmp) / "all-int8.onnx"
        quantize_matmuls(packaged.model_path, all_int8, keep_float_down_projections=0)
        all_int8_session = _open_session(all_int8, 1)

        def batched(size: int) -> Embed:
            def embed(batch: list[str]) -> np.ndarray:
                out = np.empty((len(batch), 384), dtype=np.float32)
                order = sorted(range(len(batch)), key=lambda i: len(batch[i]))
                for start in range(0, len(order), size):
                    idx = order[start : start + size]
                    out[idx] = int8._embed_batch(int8._text_session, [batch[i] for i in idx])
                return out

            return embed

        ways: dict[str, Embed] = {
            "packaged, one text per inference (baseline)": lambda b: packaged._embed_each(packaged._text_session, b),
            f"{int8.variant}, one text per inference (shipped)": lambda b: int8._embed_each(int8._text_session, b),
            "int8, batches of 8": batched(8),
            "int8, batches of 32": batched(32),
            "int8, all down-projections quantised": lambda b: int8._embed_each(all_int8_session, b),
        }
        best = {name: float("inf") for name in ways}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.rounds):
            for name, embed in ways.items():
                start = time.thread_time()
                vectors[name] = embed(texts)
                best[name] = min(best[name], time.thread_time() - start)
    reference = vectors[next(iter(ways))]
    rows = [
        {
            "way": name,
            "cpu_ms_per_text": round(1000 * best[name] / len(texts), 2),
            "worst_cosine_to_packaged": round(float((vectors[name] * reference).sum(axis=1).min()), 4),
        }
        for name in ways
    ]
    load = os.getloadavg()
    print(
        f"{len(texts)} tool texts of {np.mean(tokens):.0f} tokens on average, one thread, best of {args.rounds}; "
        f"load average {load[0]:.1f}\n"
    )
    print("| way | CPU ms per text | worst cosine to the packaged model |")
    print("| --- | --- | --- |")
    for row in rows:
        print(f"| {row['way']} | {row['cpu_ms_per_text']} | {row['worst_cosine_to_packaged']} |")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    payload = {"texts": len(texts), "mean_tokens": float(np.mean(tokens)), "load_average": load, "rows": rows}
    args.json.write_text(json.dumps(payload, indent=2))
    print(f"\nwritten {args.json}")


if __name__ == "__main__":
    main()
