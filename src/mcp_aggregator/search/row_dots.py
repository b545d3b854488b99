"""``RowDots``: dot products of query vectors with every row of a stored matrix, on one core.

A search scores the query against every tool (10,000 x 384 at the goal size). numpy's
single-threaded ``einsum`` took ~3.5 ms for that; OpenBLAS's matrix product is fast but
spreads over all cores, and on a busy 2-core machine waiting for the second core made it
~40 ms. onnxruntime's MatMul with one intra-op thread runs its vectorised kernel on the
calling thread (and releases the GIL): ~0.6 ms. The stored matrix is kept transposed,
the layout that kernel streams fastest, and handed to onnxruntime without a copy.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from mcp_aggregator.search.embedder import Vectors

if TYPE_CHECKING:
    import onnxruntime as ort

MATMUL_MODEL = (
    b'\x08\x08:\x80\x01\n \n\x07queries\n\x07columns\x12\x04dots"\x06MatMul\x12\x08row_dotsZ\x1b\n\x07queries'
    b"\x12\x10\n\x0e\x08\x01\x12\n\n\x03\x12\x01q\n\x03\x12\x01dZ\x1b\n\x07columns\x12\x10\n\x0e\x08\x01\x12\n\n\x03"
    b"\x12\x01d\n\x03\x12\x01nb\x18\n\x04dots\x12\x10\n\x0e\x08\x01\x12\n\n\x03\x12\x01q\n\x03\x12\x01nB\x04\n\x00\x10\x11"
)
"""The serialized ONNX graph ``dots = MatMul(queries[q, d], columns[d, n])`` (float32, opset 17,
IR 8). Spelled out, not built with the ``onnx`` package at run time: importing it cost 13 MB of
RSS for these 139 bytes (a test builds it with ``onnx.helper`` and compares)."""


def _matmul_session() -> ort.InferenceSession:
    # Imported here: onnxruntime costs ~20 MB and a tenth of a second, and a gateway without
    # vector search (``search.embedder: none``) never needs it.
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(MATMUL_MODEL, sess_options=opts, providers=["CPUExecutionProvider"])


_session: ort.InferenceSession | None = None
_session_lock = threading.Lock()


def _shared_session() -> ort.InferenceSession:
    """One session for the process: its graph has no weights and ``run`` is thread-safe."""
    global _session
    with _session_lock:
        if _session is None:
            _session = _matmul_session()
        return _session


def row_dots(queries: Vectors, columns: Vectors) -> Vectors:
    """``queries @ columns``: shape (q, n) from queries (q, d) and the transposed rows (d, n)."""
    q = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, columns.shape[0])
    if columns.shape[1] == 0 or len(q) == 0:
        return np.zeros((len(q), columns.shape[1]), dtype=np.float32)
    (out,) = _shared_session().run(["dots"], {"queries": q, "columns": columns})
    result: Vectors = out
    return result


class RowDots:
    """The transposed copy of a row matrix, made once per version of the rows.

    Owners call ``invalidate`` after changing rows; ``dots`` rebuilds the copy when needed.
    """

    def __init__(self, dimension: int) -> None:
        self._dim = dimension
        self._columns: Vectors | None = None

    def invalidate(self) -> None:
        self._columns = None

    def dots(self, queries: Vectors, rows: Vectors) -> Vectors:
        """``queries @ rows.T`` for ``rows`` (n, d), the matrix as of the last ``invalidate``."""
        columns = self._columns
        if columns is None or columns.shape[1] != len(rows):
            columns = self._columns = np.ascontiguousarray(rows.T, dtype=np.float32)
        return row_dots(queries, columns)
