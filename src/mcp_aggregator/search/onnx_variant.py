"""Which ONNX variant of the embedding model this machine runs: measured once, remembered.

The int8-compute variants trade a little accuracy for speed, and how much accuracy depends
on the CPU (u8s8 kernels saturate without VNNI) and the onnxruntime build. So the first
start measures each variant against the packaged model on fixed probe texts (worst cosine,
median latency per text) and :func:`pick` chooses; the choice is stored next to the derived
files under a key of the model's sha256, the onnxruntime version, the derivations and the
CPU's flags, so a later start on the same machine and build reuses it and any change of
them measures again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, get_args

import onnxruntime as ort

from mcp_aggregator.search.onnx_quantize import AUTO_CANDIDATES, WEIGHT_ENCODINGS, usable_cache_dir

Variant = Literal["int8", "uint8", "int7", "packaged"]
VariantSetting = Literal["auto", "int8", "uint8", "int7", "packaged"]
VARIANTS: tuple[Variant, ...] = get_args(Variant)
SIMILAR_SPEED = 1.1
"""Variants within this factor of the fastest count as equally fast; the more accurate wins."""
_FORMAT = 1


@dataclass(frozen=True)
class Trial:
    """One variant measured against the packaged model on the probe texts."""

    variant: Variant
    cosine: float
    """Worst cosine to the packaged model's vector (1.0 for the packaged model itself)."""
    latency_ms: float
    """CPU milliseconds to embed one probe text (mean over the texts of the best of three runs)."""


@dataclass(frozen=True)
class VariantChoice:
    variant: Variant
    reason: str
    trials: tuple[Trial, ...] = ()


def pick(trials: list[Trial], *, min_cosine: float, min_speedup: float) -> VariantChoice:
    """The variant to run, given the packaged model's trial and the derived ones' trials.

    A derived variant qualifies when its worst cosine is at least ``min_cosine`` and it is at
    least ``min_speedup`` times as fast as the packaged model; of those, the most accurate
    among the ones within :data:`SIMILAR_SPEED` of the fastest. None qualifying means the
    packaged model. Raises ``ValueError`` without a packaged trial.
    """
    packaged = next((t for t in trials if t.variant == "packaged"), None)
    if packaged is None:
        raise ValueError("the packaged model's trial is needed as the reference")
    verdicts = []
    qualified = []
    for t in trials:
        if t.variant == "packaged":
            continue
        speedup = packaged.latency_ms / max(t.latency_ms, 1e-9)
        if t.cosine < min_cosine:
            verdicts.append(f"{t.variant}: cosine {t.cosine:.4f} < {min_cosine}")
        elif speedup < min_speedup:
            verdicts.append(f"{t.variant}: {speedup:.2f}x as fast < {min_speedup}x")
        else:
            qualified.append(t)
            verdicts.append(f"{t.variant}: cosine {t.cosine:.4f}, {speedup:.2f}x as fast")
    if not qualified:
        return VariantChoice("packaged", "; ".join(verdicts) or "no derived variant", tuple(trials))
    fastest = min(t.latency_ms for t in qualified)
    best = max((t for t in qualified if t.latency_ms <= fastest * SIMILAR_SPEED), key=lambda t: t.cosine)
    return VariantChoice(best.variant, "; ".join(verdicts), tuple(trials))


def cpu_flags() -> str:
    """The CPU's feature flags (Linux), else what the platform module knows."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return " ".join(sorted(line.split(":", 1)[1].split()))
    return f"{platform.machine()} {platform.processor()}"


def machine_key(source_sha256: str, flags: str | None = None) -> str:
    """What a remembered choice is valid for: model, onnxruntime, derivations and CPU."""
    tags = sorted(WEIGHT_ENCODINGS[w] for w in AUTO_CANDIDATES)
    parts = [source_sha256, ort.__version__, *tags, flags or cpu_flags()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def choice_file(directory: Path, source_sha256: str, key: str) -> Path:
    return directory / f"minilm-{source_sha256[:16]}-choice-{key}.json"


def remembered_choice(dirs: list[Path], source: Path, source_sha256: str, key: str) -> VariantChoice | None:
    """The choice stored for ``key`` in the first of ``dirs`` that has a valid one."""
    for directory in dirs:
        if not usable_cache_dir(directory, source):
            continue
        try:
            meta = json.loads(choice_file(directory, source_sha256, key).read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT or meta.get("variant") not in VARIANTS:
            continue
        try:
            trials = tuple(Trial(**t) for t in meta.get("trials", []))
        except TypeError:
            continue
        return VariantChoice(meta["variant"], f"remembered: {meta.get('reason', '')}", trials)
    return None


def remember(directory: Path, source_sha256: str, key: str, choice: VariantChoice) -> Path:
    """Stores ``choice`` atomically; raises ``OSError`` when the directory is not writable."""
    path = choice_file(directory, source_sha256, key)
    meta = {
        "format": _FORMAT,
        "variant": choice.variant,
        "reason": choice.reason,
        "trials": [asdict(t) for t in choice.trials],
        "onnxruntime": ort.__version__,
    }
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp, path)
    return path
