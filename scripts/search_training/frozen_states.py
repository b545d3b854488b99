"""The outputs of the frozen embeddings and lower layers, computed once for every text.

With the lower layers fixed, their output for a text never changes during training, so it
is computed once (sorted by length, so batches carry little padding), stored unpadded in
float16 (half the memory; its 11-bit mantissa rounds each value by at most ~5e-4 of
itself, far below what a contrastive loss on normalised vectors feels) and reused by
every step, every evaluation and a resumed run.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import BertModel

HIDDEN = 384
_BATCH = 64


@dataclass
class FrozenStates:
    """Row ``i`` of ``texts`` owns ``hidden[offsets[i]:offsets[i + 1]]`` (one row a token)."""

    texts: list[str]
    hidden: np.ndarray
    offsets: np.ndarray
    seconds: float
    """What computing them took (0.0 when they were read back from the cache)."""

    def __post_init__(self) -> None:
        self.row = {t: i for i, t in enumerate(self.texts)}

    def batch(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded float32 states and their attention mask for ``texts`` (all cached)."""
        rows = [self.row[t] for t in texts]
        lengths = [int(self.offsets[r + 1] - self.offsets[r]) for r in rows]
        out = torch.zeros((len(rows), max(lengths), HIDDEN), dtype=torch.float32)
        mask = torch.zeros((len(rows), max(lengths)), dtype=torch.long)
        for i, (r, n) in enumerate(zip(rows, lengths, strict=True)):
            out[i, :n] = torch.from_numpy(self.hidden[self.offsets[r] : self.offsets[r] + n].astype(np.float32))
            mask[i, :n] = 1
        return out, mask

    @property
    def tokens(self) -> int:
        return int(self.offsets[-1])


def extended_mask(mask: torch.Tensor) -> torch.Tensor:
    """The additive (batch, 1, 1, length) mask a ``BertLayer`` takes, made here because
    transformers 4 and 5 build it with different helpers."""
    return (1.0 - mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min


def run_layers(bert: BertModel, first: int, last: int, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``hidden`` through encoder layers ``first`` .. ``last - 1``."""
    ext = extended_mask(mask)
    for layer in bert.encoder.layer[first:last]:
        out = layer(hidden, attention_mask=ext)
        hidden = out[0] if isinstance(out, tuple) else out
    return hidden


def cache_key(weights_sha: str, frozen: int, texts: Sequence[str], lengths: Sequence[int]) -> str:
    digest = hashlib.sha256(json.dumps([weights_sha, frozen, list(lengths)]).encode())
    for t in texts:
        digest.update(t.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:20]


@torch.no_grad()
def compute(bert: BertModel, frozen: int, ids: Sequence[Sequence[int]], texts: Sequence[str]) -> FrozenStates:
    """The states of ``texts`` (token ids ``ids``, already truncated) after the embeddings
    and the ``frozen`` lowest layers."""
    bert.eval()
    start = time.process_time()
    lengths = np.array([len(x) for x in ids], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    hidden = np.zeros((int(offsets[-1]), HIDDEN), dtype=np.float16)
    order = np.argsort(lengths, kind="stable")
    for b in range(0, len(order), _BATCH):
        rows = order[b : b + _BATCH]
        width = int(lengths[rows].max())
        batch_ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            batch_ids[i, : lengths[r]] = torch.tensor(ids[r])
            mask[i, : lengths[r]] = 1
        h = bert.embeddings(input_ids=batch_ids)
        h = run_layers(bert, 0, frozen, h, mask).numpy()
        for i, r in enumerate(rows):
            hidden[offsets[r] : offsets[r + 1]] = h[i, : lengths[r]]
    return FrozenStates(list(texts), hidden, offsets, time.process_time() - start)


def load_or_compute(
    bert: BertModel, frozen: int, ids: Sequence[Sequence[int]], texts: Sequence[str], path: Path
) -> FrozenStates:
    """``compute``'s result, read from ``path`` when an earlier run stored it there."""
    if path.is_file():
        with np.load(path) as z:
            return FrozenStates(list(texts), z["hidden"], z["offsets"], 0.0)
    states = compute(bert, frozen, ids, texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, hidden=states.hidden, offsets=states.offsets)
    tmp.replace(path)
    return states
