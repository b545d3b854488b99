"""Training of the upper layers on the frozen lower layers' cached outputs, resumable.

A step runs only the trained layers (forward and backward) on states read from memory,
so its cost is the trained layers' share of the network, and the embeddings and frozen
layers run once per text for the whole run instead of once per text per step.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import BertModel

from search_training.frozen_states import FrozenStates, run_layers
from search_training.pairs import Data, Pair
from search_training.ranking_loss import contrastive_loss, dev_score

_EMBED_BATCH = 64


class UpperEncoder(torch.nn.Module):
    """The layers above ``frozen`` of ``bert`` with mean pooling and L2 normalisation, run
    on cached states."""

    def __init__(self, bert: BertModel, frozen: int, states: FrozenStates) -> None:
        super().__init__()
        self.bert = bert
        self.frozen = frozen
        self.states = states
        bert.requires_grad_(False)
        for layer in bert.encoder.layer[frozen:]:
            layer.requires_grad_(True)

    def forward(self, texts: list[str]) -> torch.Tensor:
        hidden, mask = self.states.batch(texts)
        hidden = run_layers(self.bert, self.frozen, len(self.bert.encoder.layer), hidden, mask)
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def trained(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.bert.named_parameters() if v.requires_grad}

    @torch.no_grad()
    def embed(self, texts: list[str]) -> np.ndarray:
        self.eval()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.bert.config.hidden_size), dtype=np.float32)
        for start in range(0, len(order), _EMBED_BATCH):
            idx = order[start : start + _EMBED_BATCH]
            out[idx] = self([texts[i] for i in idx]).numpy()
        return out


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """The pairs' order in ``epoch``: a function of the seed, so a resumed run replays it."""
    order = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return order


def epoch_negatives(data: Data, train: list[Pair], seed: int, epoch: int) -> list[str]:
    """The hard negative of each pair in ``epoch``, drawn before training so that only the
    texts a run uses need their states computed."""
    rng = random.Random(seed * 1_000_003 + epoch + 1)
    return [data.negative_for(p, rng) for p in train]


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def train_upper(
    args: argparse.Namespace, model: UpperEncoder, data: Data, train: list[Pair], dev: list[Pair], pool: list[str]
) -> dict[str, Any]:
    """Trains ``model``'s upper layers, checkpointing to ``args.out / checkpoint.pt`` every
    ``args.checkpoint_every`` steps; with ``args.resume`` it carries on from there. Leaves
    the best held-out state in ``model`` and returns the figures."""
    ckpt_path = args.out / "checkpoint.pt"
    params = [p for p in model.parameters() if p.requires_grad]
    steps_per_epoch = len(train) // args.batch
    total = steps_per_epoch * args.epochs
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    warmup = max(1, total // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup)))
    )
    config = {k: str(getattr(args, k)) for k in ("epochs", "batch", "lr", "scale", "freeze_layers", "seed")}
    config.update(max_query_tokens=str(args.max_query_tokens), max_tool_tokens=str(args.max_tool_tokens))
    config.update(multi_part=str(args.multi_part), max_pairs=str(args.max_pairs))
    if args.mined:
        config.update(mined=str(args.mined), mined_skip=str(args.mined_skip), mined_depth=str(args.mined_depth))
    step, cpu_before, wall_before = 0, 0.0, 0.0
    if args.resume and ckpt_path.is_file():
        ckpt = torch.load(ckpt_path, weights_only=False)
        if ckpt["config"] != config:
            raise SystemExit(f"{ckpt_path} was made with {ckpt['config']}, not {config}: drop --resume or it")
        model.bert.load_state_dict(ckpt["trained"], strict=False)
        opt.load_state_dict(ckpt["opt"])
        sched.load_state_dict(ckpt["sched"])
        step, best, history = ckpt["step"], ckpt["best"], ckpt["history"]
        cpu_before, wall_before = ckpt["cpu_s"], ckpt["wall_s"]
        print(f"resumed at step {step}/{total} (best held-out nDCG@5 {best[0]:.4f})", flush=True)
    else:
        base = dev_score(model.embed, dev, pool, data)
        print(f"held-out nDCG@5 before training: {base:.4f}", flush=True)
        best = (base, 0, model.trained())
        history = [{"step": 0, "held_out_ndcg@5": round(base, 4)}]
    cpu_start, wall_start = time.process_time(), time.perf_counter()

    def spent() -> tuple[float, float]:
        return cpu_before + time.process_time() - cpu_start, wall_before + time.perf_counter() - wall_start

    negatives: dict[int, list[str]] = {}
    while step < total:
        epoch, b = divmod(step, steps_per_epoch)
        order = epoch_order(len(train), args.seed, epoch)
        chunk = [train[i] for i in order[b * args.batch : (b + 1) * args.batch]]
        if epoch not in negatives:
            negatives = {epoch: epoch_negatives(data, train, args.seed, epoch)}
        chunk_negatives = [negatives[epoch][i] for i in order[b * args.batch : (b + 1) * args.batch]]
        tools = [p.tool_id for p in chunk] + chunk_negatives
        model.train()
        q = model([p.query for p in chunk])
        t = model([data.docs[x].dense_text() for x in tools])
        loss = contrastive_loss(q, t, chunk, tools, args.scale)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        if step % 10 == 0:
            cpu, wall = spent()
            print(f"step {step}/{total} loss {loss.item():.4f} ({cpu:.0f} CPU s, {wall:.0f} s so far)", flush=True)
        if step % args.eval_every == 0 or step == total:
            score = dev_score(model.embed, dev, pool, data)
            history.append({"step": step, "held_out_ndcg@5": round(score, 4)})
            print(f"step {step}: held-out nDCG@5 {score:.4f} (best {best[0]:.4f})", flush=True)
            if score > best[0]:
                best = (score, step, model.trained())
        if step % args.checkpoint_every == 0 or step == total:
            cpu, wall = spent()
            save_checkpoint(
                ckpt_path,
                {
                    "config": config,
                    "step": step,
                    "trained": model.trained(),
                    "opt": opt.state_dict(),
                    "sched": sched.state_dict(),
                    "best": best,
                    "history": history,
                    "cpu_s": cpu,
                    "wall_s": wall,
                    "command": args.command,
                },
            )
    model.bert.load_state_dict(best[2], strict=False)
    cpu, wall = spent()
    return {
        "training_pairs": len(train),
        "held_out_pairs": len(dev),
        "held_out_pool_tools": len(pool),
        "held_out_ndcg@5_base": history[0]["held_out_ndcg@5"],
        "held_out_ndcg@5_tuned": round(best[0], 4),
        "best_step": best[1],
        "steps": step,
        "train_cpu_seconds": round(cpu, 1),
        "train_wall_seconds": round(wall, 1),
        "torch_threads": args.threads,
        "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
        "history": history,
    }
