"""Fit the query-side linear map (``search/query_map.py``) for a packaged model's vectors.

Run (the ``train`` extra installs torch)::

    python scripts/fit_query_map.py --data PATH/TO/tooldata --model tools \\
        --out src/mcp_aggregator/search/model/tools-minilm/query_map.npy

Every query and tool text of ``--data`` is embedded once by the product's own embedder
(``search.onnx_model: MODEL``, int8 as the gateway runs it; the vectors are kept in an
embedding cache under ``--cache``, so a second run embeds nothing), then a 384 x 384 map
``W`` is learnt on those vectors alone: ``normalise(q @ W)`` against the tools, with the
loss of the encoder's training (each query against its tool, the other queries' tools,
hard negatives from the same server and a random sample of all tools), starting from the
identity and pulled back to it by ``--reg * |W - I|^2``. Each ``--reg`` is fitted and the
one with the best held-out nDCG@5 (the training command's held-out requests) is kept. The
figures go to ``OUT`` with ``.json`` for ``.npy``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from search_training.pairs import MULTI_PART, Data, Pair, dev_pool, held_out, load_data
from search_training.ranking_loss import dev_score

from mcp_aggregator.search import SearchSettings, build_embedder
from mcp_aggregator.search.embedding_cache import EmbeddingCache, embed_cached
from mcp_aggregator.search.query_map import QueryMap


def vectors(args: argparse.Namespace, texts: list[str]) -> tuple[dict[str, np.ndarray], str]:
    """The product embedder's vector of every text, through a cache file."""
    settings = {"onnx_model": args.model} if args.model_path is None else {"model_path": args.model_path}
    embedder = build_embedder(SearchSettings.model_validate(settings))
    args.cache.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(args.cache / "query-map-vectors.db")
    start = time.process_time()
    vecs, embedded = embed_cached(embedder, cache, texts, batch_size=32)
    cache.close()
    print(f"{len(texts)} texts, {embedded} embedded now ({time.process_time() - start:.0f} CPU s)", flush=True)
    return dict(zip(texts, vecs, strict=True)), embedder.model_id


def fit(args: argparse.Namespace, reg: float, data: Data, train: list[Pair], vec: dict[str, np.ndarray]) -> np.ndarray:
    """The map fitted with regularisation ``reg``."""
    tool_ids = sorted(data.docs)
    tool_row = {t: i for i, t in enumerate(tool_ids)}
    tools = torch.from_numpy(np.stack([vec[data.docs[t].dense_text()] for t in tool_ids]))
    eye = torch.eye(tools.shape[1])
    w = torch.nn.Parameter(eye.clone())
    opt = torch.optim.Adam([w], lr=args.lr)
    rng = random.Random(args.seed)
    gold_of: dict[str, set[int]] = {}
    for p in train:
        gold_of.setdefault(p.group, set()).add(tool_row[p.tool_id])
    for _epoch in range(args.epochs):
        order = list(range(len(train)))
        rng.shuffle(order)
        for b in range(0, len(order), args.batch):
            chunk = [train[i] for i in order[b : b + args.batch]]
            candidates = list(
                dict.fromkeys(
                    [tool_row[p.tool_id] for p in chunk]
                    + [tool_row[data.negative(p.tool_id, rng)] for p in chunk]
                    + rng.sample(range(len(tool_ids)), args.sample)
                )
            )
            col = {c: j for j, c in enumerate(candidates)}
            q = torch.from_numpy(np.stack([vec[p.query] for p in chunk]))
            qm = torch.nn.functional.normalize(q @ w, dim=-1)
            logits = args.scale * qm @ tools[candidates].T
            mask = torch.zeros_like(logits, dtype=torch.bool)
            for i, p in enumerate(chunk):
                for g in gold_of[p.group] - {tool_row[p.tool_id]}:
                    if g in col:
                        mask[i, col[g]] = True
            logits = logits.masked_fill(mask, float("-inf"))
            target = torch.tensor([col[tool_row[p.tool_id]] for p in chunk])
            weights = torch.tensor([p.weight for p in chunk])
            loss = (torch.nn.functional.cross_entropy(logits, target, reduction="none") * weights).sum() / weights.sum()
            loss = loss + reg * ((w - eye) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w.detach().numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="folder with train.jsonl and tools.jsonl")
    parser.add_argument("--model", choices=["base", "tools"], default="tools", help="the packaged model")
    parser.add_argument("--model-path", type=Path, default=None, help="an ONNX file instead (a fresh export)")
    parser.add_argument("--out", type=Path, required=True, help="the map's .npy file")
    parser.add_argument("--cache", type=Path, default=Path("build/train-cache"))
    parser.add_argument("--reg", default="0.01,0.1,1", help="comma-separated pulls towards the identity")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--sample", type=int, default=1024, help="random tools added to each batch's candidates")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument(
        "--multi-part",
        choices=MULTI_PART,
        default="clause",
        help="pair a several-tool request's tools with its best clause, the whole request, or both",
    )
    parser.add_argument("--max-pairs", type=int, default=0, help="fit on at most this many pairs (0: all)")
    parser.add_argument("--held-out", type=float, default=0.05)
    parser.add_argument("--dev-pool", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = load_data(args.data, args.multi_part)
    train, dev = held_out(data.pairs, args.held_out)
    pool = dev_pool(data, dev, args.dev_pool)
    if args.max_pairs:
        random.Random(args.seed).shuffle(train)
        train = train[: args.max_pairs]
        # Only the tools these pairs can meet (theirs, their servers' others, the held-out
        # pool) are embedded and ranked against: the embedding is the fit's whole cost.
        universe = {t for p in train for t in data.siblings[data.docs[p.tool_id].server]} | set(pool)
        data = Data({t: d for t, d in data.docs.items() if t in universe}, data.source_of, data.pairs)
    texts = list(dict.fromkeys([p.query for p in train + dev] + [d.dense_text() for d in data.docs.values()]))
    vec, model_id = vectors(args, texts)

    def scorer(matrix: np.ndarray | None) -> float:
        def embed(batch: list[str]) -> np.ndarray:
            return np.stack([vec[t] for t in batch])

        def embed_query(batch: list[str]) -> np.ndarray:
            return embed(batch) if matrix is None else QueryMap(matrix).apply(embed(batch))

        return dev_score(embed, dev, pool, data, embed_query)

    figures: dict[str, Any] = {"embedder": model_id, "held_out_ndcg@5_unmapped": round(scorer(None), 4), "fits": []}
    best: tuple[float, float, np.ndarray] | None = None
    for reg in (float(r) for r in args.reg.split(",")):
        start = time.process_time()
        matrix = fit(args, reg, data, train, vec)
        score = scorer(matrix)
        figures["fits"].append(
            {
                "reg": reg,
                "held_out_ndcg@5": round(score, 4),
                "cpu_s": round(time.process_time() - start, 1),
                "distance_from_identity": round(float(np.linalg.norm(matrix - np.eye(len(matrix)))), 3),
            }
        )
        print(figures["fits"][-1], flush=True)
        if best is None or score > best[0]:
            best = (score, reg, matrix)
    assert best is not None
    QueryMap(best[2]).save(args.out)
    stored = QueryMap.load(args.out, expected_sha256=None, dimension=len(best[2]))
    figures["reg"] = best[1]
    figures["held_out_ndcg@5_mapped"] = round(scorer(stored.matrix), 4)
    figures["command"] = "scripts/fit_query_map.py " + " ".join(sys.argv[1:]).replace(
        str(args.data), f"PATH/TO/{args.data.name}"
    )
    args.out.with_suffix(".json").write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
