"""Reading operations from a document (the pure core): names, references, the 3.0 dialect,
and operations that cannot become tools, each named by its path in the document."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_aggregator.bridges.openapi.operation_reader import read_operations, tool_name
from mcp_aggregator.bridges.openapi.schema_inliner import DocumentPathError


def document(paths: dict[str, Any], schemas: dict[str, Any] | None = None, version: str = "3.0.3") -> dict[str, Any]:
    return {"openapi": version, "paths": paths, "components": {"schemas": schemas or {}}}


@pytest.mark.parametrize(
    ("operation_id", "method", "path", "name"),
    [
        ("listPets", "get", "/pets", "listPets"),
        (None, "get", "/pets/{petId}", "get_pets_petId"),
        ("pets.list v2", "get", "/pets", "pets_list_v2"),
        ("x" * 80, "get", "/pets", "x" * 64),
    ],
)
def test_a_tool_is_named_by_operation_id_else_method_and_path(
    operation_id: str | None, method: str, path: str, name: str
) -> None:
    assert tool_name(operation_id, method, path) == name


def test_references_are_inlined_and_a_recursive_one_is_cut() -> None:
    schemas = {
        "Node": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "nullable": True},
                "child": {"$ref": "#/components/schemas/Node"},
            },
        }
    }
    body = {"required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}}
    reading = read_operations(document({"/nodes": {"post": {"operationId": "addNode", "requestBody": body}}}, schemas))
    schema = reading.operations[0].tool.input_schema
    assert schema["properties"]["label"] == {"type": ["string", "null"]}
    assert schema["properties"]["child"] == {"description": "(a nested Node; its schema repeats the enclosing one)"}
    assert "$ref" not in str(schema)


def test_an_operation_that_cannot_become_a_tool_is_named_by_its_path_and_the_others_load() -> None:
    paths = {
        "/ok": {"get": {"operationId": "ok"}},
        "/upload": {"post": {"operationId": "upload", "requestBody": {"content": {"multipart/form-data": {}}}}},
        "/ref": {"get": {"operationId": "ref", "parameters": [{"$ref": "#/components/parameters/Missing"}]}},
        "/items/{id}": {"get": {"operationId": "item"}},
    }
    reading = read_operations(document(paths))
    assert [op.tool.name for op in reading.operations] == ["ok"]
    assert sorted(str(p) for p in reading.problems) == [
        "paths./items/{id}.get.parameters: path parameter 'id' of '/items/{id}' is not described",
        "paths./ref.get.parameters[0]: $ref '#/components/parameters/Missing' does not resolve in the document",
        "paths./upload.post.requestBody.content: no JSON, form or text media type to send (multipart/form-data)",
    ]


def test_a_selection_naming_no_operation_is_refused_at_its_index() -> None:
    paths = {"/a": {"get": {"operationId": "a"}}}
    with pytest.raises(DocumentPathError, match=r"operations\[1\]: 'b' is no operationId"):
        read_operations(document(paths), ["GET /a", "b"])
