"""Derive int8-compute variants of the packaged MiniLM graph, cached on disk.

The packaged model stores its weights as int8 with one float scale per output column, but
only for storage: ``int8 -> Cast -> Mul(scale) -> MatMul`` is constant-folded by
onnxruntime into plain float weights, so every query runs float matrix products (a float32
model dequantized ahead of time is bit-identical and no faster). This module rewrites each
such chain into ``com.microsoft.DynamicQuantizeMatMul`` on the very same weights and scales
(the activations are quantised per call), which runs on onnxruntime's int8 kernels. The
first few FFN down-projections stay float: they carry most of the activation-quantisation
error.

Two weight encodings (:data:`WEIGHT_ENCODINGS`): ``int8`` keeps the signed weights (u8s8
kernels: the fastest; their integer sums are exact with VNNI, but without it their 16-bit
pair sums saturate and cost accuracy) and ``uint8`` shifts them by 128 with a zero point of
128 (the same weights, run on u8u8 kernels that do not saturate: onnxruntime's advice for
x86 CPUs without VNNI), and ``int7`` halves the signed weights into 7 bits with a doubled
scale (onnxruntime's ``reduce_range``: the fast u8s8 kernels, whose pair sums cannot
saturate at 7 bits, for one bit of weight precision).

The rewrite is deterministic, needs no network, and its result is cached under a name that
carries the source sha256 and the variant tag; a sidecar records the files' own sha256 so a
truncated or edited file is derived again instead of loaded. The weights are written to a
file of their own beside the graph (ONNX external data, ``<name>.data``): onnxruntime maps
such a file instead of copying it into its heap, so the pages of the word-embedding table
that no text's tokens touch are never read (11 MB less RSS for a start over a few servers).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    import onnx

log = logging.getLogger(__name__)

WeightEncoding = Literal["int8", "uint8", "int7"]
WEIGHT_ENCODINGS: dict[WeightEncoding, str] = {"int8": "dqmm-v3", "uint8": "dqmm-u8-v3", "int7": "dqmm-r7-v3"}
"""Weight encoding -> variant tag; a tag changes whenever its rewrite changes, so an old
cached file is never reused (v3: the weights in a file of their own)."""
VECTOR_IDS: dict[WeightEncoding, str] = {"int8": "dqmm-v1", "uint8": "dqmm-u8-v1", "int7": "dqmm-r7-v1"}
"""Weight encoding -> the embedding cache's tag of its vectors. It changes only when a
rewrite changes the vectors: v2 (tables gathered before they are dequantised) computes the
same floats as v1, so vectors cached by v1 stay valid."""
AUTO_CANDIDATES: tuple[WeightEncoding, ...] = ("int8", "uint8")
"""The encodings the first-start self-check measures. ``int7`` is forced only: on an AVX2
CPU without VNNI it is as fast as ``int8`` and its worst probe cosine (0.992) passes 0.99,
yet LiveMCPBench Recall@5 fell from 0.586 (``uint8``) to 0.572 with it, a loss the probe
texts do not see."""
KEEP_FLOAT_DOWN_PROJECTIONS = 3
"""Leading MatMuls with more input rows than output columns (the FFN down-projections)
kept in float."""
_SIDECAR_FORMAT = 1


class DerivationError(Exception):
    """The variant cannot be derived, stored or validated here."""


def default_cache_dirs() -> list[Path]:
    """Candidate directories for derived models, most preferred first: the user's cache
    (``$XDG_CACHE_HOME`` when set, which replaces ``~/.cache``, so a run with its own cache
    never sees the user's), then the temp directory."""
    dirs = []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        dirs.append(Path(xdg) / "mcp-aggregator" / "models")
    else:
        with contextlib.suppress(RuntimeError):
            dirs.append(Path.home() / ".cache" / "mcp-aggregator" / "models")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    dirs.append(Path(tempfile.gettempdir()) / f"mcp-aggregator-{uid}" / "models")
    return dirs


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def quantize_matmuls(
    source: Path,
    dest: Path,
    *,
    weights: WeightEncoding = "int8",
    keep_float_down_projections: int = KEEP_FLOAT_DOWN_PROJECTIONS,
) -> int:
    """Writes ``source`` with its int8-stored MatMul weights run as DynamicQuantizeMatMul,
    the weights encoded as ``weights`` says, to ``dest`` and its weights to
    ``weights_file(dest)`` (which ``dest`` names, so the two stay side by side).

    Returns how many MatMuls were rewritten. Raises ``DerivationError`` when the ``onnx``
    package is missing or the graph has no such MatMul.
    """
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:  # pragma: no cover - onnx is a dependency
        raise DerivationError(f"the onnx package is needed to derive the model: {exc}") from exc

    model = onnx.load(str(source))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    graph_outputs = {o.name for o in graph.output}

    def only_consumer(name: str, op_type: str) -> onnx.NodeProto | None:
        nodes = consumers.get(name, [])
        if len(nodes) == 1 and nodes[0].op_type == op_type and name not in graph_outputs:
            return nodes[0]
        return None

    # MatMul node id -> (cast, mul, weight name, scale name)
    chains: dict[int, tuple[onnx.NodeProto, onnx.NodeProto, str, str]] = {}
    for name, init in inits.items():
        if init.data_type != TensorProto.INT8 or len(init.dims) != 2:
            continue
        cast = only_consumer(name, "Cast")
        if cast is None or helper.get_attribute_value(cast.attribute[0]) != TensorProto.FLOAT:
            continue
        mul = only_consumer(cast.output[0], "Mul")
        if mul is None:
            continue
        scale = next((x for x in mul.input if x != cast.output[0]), "")
        cols = init.dims[1]
        scale_init = inits.get(scale)
        if scale_init is None or scale_init.data_type != TensorProto.FLOAT:
            continue
        if list(scale_init.dims) not in ([1, cols], [cols]):
            continue
        matmul = only_consumer(mul.output[0], "MatMul")
        if matmul is None or matmul.input[1] != mul.output[0]:
            continue
        chains[id(matmul)] = (cast, mul, name, scale)

    removed: set[int] = set()
    replaced: dict[int, onnx.NodeProto] = {}
    new_inits: list[onnx.TensorProto] = []
    new_names: set[str] = set()
    down_projections = 0
    for node in graph.node:
        if id(node) not in chains:
            continue
        cast, mul, weight, scale = chains[id(node)]
        rows, cols = inits[weight].dims
        if rows > cols:
            down_projections += 1
            if down_projections <= keep_float_down_projections:
                continue
        factor = 2.0 if weights == "int7" else 1.0
        column_scale = f"{scale}__per_column" + ("_r7" if weights == "int7" else "")
        if column_scale not in new_names:
            values = numpy_helper.to_array(inits[scale]).reshape(-1) * np.float32(factor)
            new_inits.append(numpy_helper.from_array(values.astype(np.float32), column_scale))
            new_names.add(column_scale)
        zero_point = ""
        if weights == "int7":
            # Halved and rounded (ties to even) into -64..63: u8 x s7 pair sums fit 16 bits.
            halved = np.clip(np.round(numpy_helper.to_array(inits[weight]).astype(np.float32) / 2), -64, 63)
            weight = f"{weight}__r7"
            if weight not in new_names:
                new_inits.append(numpy_helper.from_array(halved.astype(np.int8), weight))
                new_names.add(weight)
        if weights == "uint8":
            # w + 128 with zero point 128 is the same weight; the shift is exact in int16.
            shifted = (numpy_helper.to_array(inits[weight]).astype(np.int16) + 128).astype(np.uint8)
            weight, zero_point = f"{weight}__u8", f"{weight}__u8_zero_point"
            new_inits.append(numpy_helper.from_array(shifted, weight))
            new_inits.append(numpy_helper.from_array(np.full(cols, 128, dtype=np.uint8), zero_point))
            new_names |= {weight, zero_point}
        inputs = [node.input[0], weight, column_scale, zero_point]
        output = node.output[0]
        add = only_consumer(output, "Add")
        if add is not None:
            bias = next((x for x in add.input if x != output), "")
            if bias in inits and list(inits[bias].dims) == [cols] and inits[bias].data_type == TensorProto.FLOAT:
                inputs.append(bias)
                output = add.output[0]
                removed.add(id(add))
        if not inputs[-1]:
            inputs.pop()
        replaced[id(node)] = helper.make_node(
            "DynamicQuantizeMatMul", inputs, [output], name=f"{node.name or weight}__dqmm", domain="com.microsoft"
        )
        removed |= {id(cast), id(mul)}
    if not replaced:
        raise DerivationError(f"{source} has no int8-stored MatMul weights to rewrite")

    nodes = [replaced.get(id(n), n) for n in graph.node if id(n) not in removed]
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for n in graph.node for name in n.input}
    kept = [i for i in list(graph.initializer) + new_inits if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    dequantize_after_gather(graph)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    props = {"mcp_aggregator.variant": WEIGHT_ENCODINGS[weights], "mcp_aggregator.source_sha256": _sha256(source)}
    helper.set_model_props(model, props)
    onnx.save(model, str(dest), save_as_external_data=True, location=weights_file(dest).name, size_threshold=1024)
    return len(replaced)


def weights_file(model: Path) -> Path:
    """Where the derived graph ``model`` keeps its weights."""
    return model.with_suffix(".data")


def dequantize_after_gather(graph: onnx.GraphProto) -> int:
    """Rewrites each ``int8 -> Cast -> Mul(scale) -> Gather`` (an embedding table stored as
    int8) into ``Gather -> Cast -> Mul(scale)`` on the int8 table; returns how many.

    onnxruntime constant-folds the first form into a float32 table: the word embeddings alone
    (30,522 x 384) take 47 MB of the process's memory that way, against 12 MB as int8. The
    gathered rows are dequantised by the same multiplications (a per-row scale is gathered
    with its row), so every output is bit for bit what it was.
    """
    from onnx import TensorProto, helper

    inits = {i.name: i for i in graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    moved: dict[int, list[onnx.NodeProto]] = {}
    removed: set[int] = set()
    for name, init in inits.items():
        if init.data_type != TensorProto.INT8 or len(init.dims) != 2 or len(consumers[name]) != 1:
            continue
        cast = consumers[name][0]
        if cast.op_type != "Cast" or len(consumers[cast.output[0]]) != 1:
            continue
        mul = consumers[cast.output[0]][0]
        scale = next((x for x in mul.input if x != cast.output[0]), "")
        if mul.op_type != "Mul" or scale not in inits:
            continue
        per_row = list(inits[scale].dims) == [init.dims[0], 1]
        if not per_row and list(inits[scale].dims) not in ([1, init.dims[1]], [init.dims[1]], [1, 1], [1], []):
            continue
        users = consumers[mul.output[0]]
        if len(users) != 1 or users[0].op_type != "Gather" or users[0].input[0] != mul.output[0]:
            continue
        gather = users[0]
        if any(helper.get_attribute_value(a) != 0 for a in gather.attribute if a.name == "axis"):
            continue
        rows = f"{gather.output[0]}__int8_rows"
        nodes = [
            helper.make_node("Gather", [name, gather.input[1]], [rows], name=f"{gather.name}__int8"),
            helper.make_node("Cast", [rows], [f"{rows}_f"], to=TensorProto.FLOAT, name=f"{gather.name}__cast"),
        ]
        if per_row:  # each row's own scale, gathered alongside it
            nodes.append(helper.make_node("Gather", [scale, gather.input[1]], [f"{rows}_s"], name=f"{gather.name}__s"))
            scale = f"{rows}_s"
        nodes.append(helper.make_node("Mul", [f"{rows}_f", scale], [gather.output[0]], name=f"{gather.name}__scale"))
        moved[id(gather)] = nodes
        removed |= {id(cast), id(mul)}
    nodes = [m for n in graph.node if id(n) not in removed for m in moved.get(id(n), [n])]
    del graph.node[:]
    graph.node.extend(nodes)
    return len(moved)


def derived_model(
    source: Path,
    source_sha256: str,
    weights: WeightEncoding,
    check: Callable[[Path], None],
    cache_dirs: list[Path] | None = None,
) -> Path:
    """The cached ``weights`` variant of ``source`` (already sha256-checked by the caller),
    derived if missing or corrupt.

    ``check(path)`` must raise ``DerivationError`` when a freshly derived file is not fit to
    serve (it is run before the file is published). A directory inside the source's own
    (an installed package) is never written. Raises ``DerivationError`` when no candidate
    directory can hold a valid file.
    """
    tag = WEIGHT_ENCODINGS[weights]
    stem = f"minilm-{source_sha256[:16]}-{tag}"
    errors = []
    for directory in cache_dirs if cache_dirs is not None else default_cache_dirs():
        if not usable_cache_dir(directory, source):
            errors.append(f"{directory}: not owned by this user, or inside the model's own package")
            continue
        model, sidecar = directory / f"{stem}.onnx", directory / f"{stem}.json"
        meta = _read_sidecar(sidecar, source_sha256, tag)
        if (
            meta.get("sha256")
            and meta.get("weights_sha256")
            and _matches(model, str(meta["sha256"]))
            and _matches(weights_file(model), str(meta["weights_sha256"]))
        ):
            return model
        try:
            _derive_into(source, source_sha256, weights, model, sidecar, check)
            return model
        except (OSError, DerivationError) as exc:
            errors.append(f"{directory}: {exc}")
    raise DerivationError("; ".join(errors) or "no cache directory")


def invalidate(model: Path) -> None:
    """Forgets a cached variant that could not be loaded, so the next start derives it again."""
    with contextlib.suppress(OSError):
        model.with_suffix(".json").unlink()


def usable_cache_dir(directory: Path, source: Path) -> bool:
    """False for a directory this process must not write derived files to: one inside the
    source model's directory (site-packages) or one owned by another user."""
    resolved = directory.resolve()
    if resolved == source.parent.resolve() or source.parent.resolve() in resolved.parents:
        return False
    return _owned_by_us(directory)


def _owned_by_us(directory: Path) -> bool:
    """False when the directory, or its nearest existing parent, belongs to another user
    than this one or root (e.g. planted in a shared temp directory)."""
    if not hasattr(os, "getuid"):
        return True
    for path in (directory, *directory.parents):
        try:
            owner = path.stat().st_uid
        except OSError:
            continue
        return owner in (os.getuid(), 0)
    return True


def _read_sidecar(sidecar: Path, source_sha256: str, tag: str) -> dict[str, object]:
    """The sidecar's fields when it is ours and describes this source and variant, else {}."""
    try:
        meta = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return {}
    if (
        isinstance(meta, dict)
        and meta.get("format") == _SIDECAR_FORMAT
        and meta.get("variant") == tag
        and meta.get("source_sha256") == source_sha256
    ):
        return meta
    return {}


def _matches(model: Path, sha256: str) -> bool:
    try:
        return _sha256(model) == sha256
    except OSError:
        return False


def _write_sidecar(sidecar: Path, fields: dict[str, object], source_sha256: str, tag: str) -> None:
    meta = {"format": _SIDECAR_FORMAT, "variant": tag, "source_sha256": source_sha256, **fields}
    tmp = sidecar.with_name(f".{sidecar.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(meta) + "\n")
    os.replace(tmp, sidecar)


def _derive_into(
    source: Path,
    source_sha256: str,
    weights: WeightEncoding,
    model: Path,
    sidecar: Path,
    check: Callable[[Path], None],
) -> None:
    model.parent.mkdir(parents=True, exist_ok=True)
    # Derived under the final names (the graph names its weights file) in a folder of its
    # own, then moved beside the cache's files: weights first, so a graph is never published
    # before the weights it reads.
    work = Path(tempfile.mkdtemp(prefix=f".{model.name}.", suffix=".tmp", dir=model.parent))
    try:
        tmp = work / model.name
        rewritten = quantize_matmuls(source, tmp, weights=weights)
        check(tmp)
        fields: dict[str, object] = {"sha256": _sha256(tmp), "weights_sha256": _sha256(weights_file(tmp))}
        os.replace(weights_file(tmp), weights_file(model))
        os.replace(tmp, model)
        _write_sidecar(sidecar, fields, source_sha256, WEIGHT_ENCODINGS[weights])
        log.info("derived %s embedding model %s (%d MatMuls on int8 kernels)", weights, model, rewritten)
    finally:
        shutil.rmtree(work, ignore_errors=True)
