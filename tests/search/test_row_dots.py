"""``row_dots``: the one-node ONNX graph it runs, and the products it returns."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from mcp_aggregator.search.row_dots import MATMUL_MODEL, row_dots


def test_the_spelled_out_graph_is_the_matmul_onnx_helper_builds() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["queries", "columns"], ["dots"])],
        "row_dots",
        [
            helper.make_tensor_value_info("queries", TensorProto.FLOAT, ["q", "d"]),
            helper.make_tensor_value_info("columns", TensorProto.FLOAT, ["d", "n"]),
        ],
        [helper.make_tensor_value_info("dots", TensorProto.FLOAT, ["q", "n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(onnx.load_from_string(MATMUL_MODEL))
    assert model.SerializeToString() == MATMUL_MODEL


def test_row_dots_multiplies_queries_by_the_transposed_rows() -> None:
    rng = np.random.default_rng(3)
    queries = rng.normal(size=(2, 8)).astype(np.float32)
    columns = rng.normal(size=(8, 5)).astype(np.float32)
    assert np.allclose(row_dots(queries, columns), queries @ columns, atol=1e-5)
    assert row_dots(queries, np.zeros((8, 0), dtype=np.float32)).shape == (2, 0)
