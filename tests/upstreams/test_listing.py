"""Listing an upstream's tools: schemas equal as JSON are held once."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcp_aggregator.upstreams.listing import share_schemas


def _tool(name: str, schema: dict[str, Any], output: dict[str, Any] | None = None) -> types.Tool:
    # Each from its own parse, as a listing's tools are.
    return types.Tool.model_validate_json(
        types.Tool(name=name, input_schema=schema, output_schema=output).model_dump_json(by_alias=True)
    )


def test_tools_with_equal_schemas_share_one_dict_and_keep_their_contents() -> None:
    query = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}
    tools = [
        _tool("a", query, {"type": "object"}),
        _tool("b", query),
        _tool("c", {"type": "object"}, {"type": "object"}),
        _tool("d", {"properties": {"limit": {"type": "integer"}, "query": {"type": "string"}}, "type": "object"}),
    ]
    assert tools[0].input_schema is not tools[1].input_schema
    shared = share_schemas(tools)
    assert [t.name for t in shared] == ["a", "b", "c", "d"]
    assert shared[0].input_schema is shared[1].input_schema
    assert shared[0].input_schema == query
    # An output schema equal to another tool's input schema is the same dict too.
    assert shared[0].output_schema is shared[2].output_schema is shared[2].input_schema
    # Same keys in another order: what the client sees stays that tool's own.
    assert shared[3].input_schema is not shared[0].input_schema
    assert list(shared[3].input_schema) == ["properties", "type"]
    assert shared[1].output_schema is None


def test_a_schema_that_is_not_plain_json_is_kept_as_it_is() -> None:
    odd = types.Tool(name="odd", input_schema={"type": "object", "enum": {1, 2}})
    plain = types.Tool(name="plain", input_schema={"type": "object"})
    shared = share_schemas([odd, plain])
    assert shared[0].input_schema == {"type": "object", "enum": {1, 2}}
    assert shared[1].input_schema == {"type": "object"}
