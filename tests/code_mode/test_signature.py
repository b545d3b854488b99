"""JSON Schema → the Python-style signature a script is written against."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_aggregator.code_mode.signature import parameters, result_type, tool_signature

OBJ = "object"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": OBJ}, ""),
        ({"type": OBJ, "properties": {"q": {"type": "string"}}, "required": ["q"]}, "q: str"),
        (
            {
                "type": OBJ,
                "properties": {"k": {"type": "integer", "default": 10}, "q": {"type": "string"}},
                "required": ["q"],
            },
            "q: str, k: int = 10",
        ),
        ({"type": OBJ, "properties": {"on": {"type": "boolean", "default": True}}}, "on: bool = True"),
        ({"type": OBJ, "properties": {"x": {"type": "number"}}}, "x: float = ..."),
        (
            {"type": OBJ, "properties": {"tags": {"type": "array", "items": {"type": "string"}}}},
            "tags: list[str] = ...",
        ),
        (
            {"type": OBJ, "properties": {"mode": {"enum": ["a", "b"]}}, "required": ["mode"]},
            "mode: Literal['a', 'b']",
        ),
        (
            {"type": OBJ, "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["v"]},
            "v: str | None",
        ),
        ({"type": OBJ, "properties": {"v": {"type": ["integer", "null"]}}, "required": ["v"]}, "v: int | None"),
        ({"type": OBJ, "properties": {"entity-type": {"type": "string"}}}, "'entity-type': str = ..."),
        (
            {
                "type": OBJ,
                "properties": {
                    "entities": {
                        "type": "array",
                        "items": {
                            "type": OBJ,
                            "properties": {"name": {"type": "string"}, "tags": {"type": "array"}},
                            "required": ["name"],
                        },
                    }
                },
                "required": ["entities"],
            },
            "entities: list[{name: str, tags?: list}]",
        ),
        (
            {"type": OBJ, "properties": {"m": {"type": OBJ, "additionalProperties": {"type": "integer"}}}},
            "m: dict[str, int] = ...",
        ),
        (
            {"type": OBJ, "properties": {"p": {"type": "array", "prefixItems": [{"type": "number"}] * 2}}},
            "p: tuple[float, float] = ...",
        ),
        ({"type": OBJ, "properties": {"c": {"const": "x"}}, "required": ["c"]}, "c: Literal['x']"),
        ({"type": OBJ, "properties": {"any": {}}, "required": ["any"]}, "any: Any"),
        (
            {
                "type": OBJ,
                "$defs": {"Point": {"type": OBJ, "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
                "properties": {"at": {"$ref": "#/$defs/Point"}},
                "required": ["at"],
            },
            "at: {x: int}",
        ),
        (
            {
                "type": OBJ,
                "$defs": {"Node": {"type": OBJ, "properties": {"next": {"$ref": "#/$defs/Node"}}}},
                "properties": {"head": {"$ref": "#/$defs/Node"}},
                "required": ["head"],
            },
            "head: {next?: Node}",
        ),
        ({"type": OBJ, "properties": {"r": {"$ref": "https://example.com/x.json"}}, "required": ["r"]}, "r: x.json"),
        (
            {"type": OBJ, "properties": {"s": {"anyOf": [{"const": "hot"}, {"const": "new"}, {"type": "null"}]}}},
            "s: Literal['hot', 'new'] | None = ...",
        ),
        ({"type": OBJ, "properties": {"t": {"type": "string", "default": "it's"}}}, 't: str = "it\'s"'),
    ],
)
def test_parameters_render_json_schema_as_python(schema: dict[str, Any], expected: str) -> None:
    assert parameters(schema) == expected


def test_deep_objects_are_cut_to_dict() -> None:
    leaf: dict[str, Any] = {"type": "string"}
    for name in ("d", "c", "b", "a"):
        leaf = {"type": OBJ, "properties": {name: leaf}, "required": [name]}
    assert parameters(leaf) == "a: {b: {c: dict}}"


def test_many_keys_are_cut_with_an_ellipsis() -> None:
    inner = {"type": OBJ, "properties": {f"k{i}": {"type": "integer"} for i in range(14)}}
    rendered = parameters({"type": OBJ, "properties": {"o": inner}, "required": ["o"]})
    assert rendered.startswith("o: {k0?: int, k1?: int,")
    assert rendered.endswith("k11?: int, …}")


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, "str"),
        ({"type": OBJ, "properties": {"result": {"type": "integer"}}, "required": ["result"]}, "int"),
        ({"type": OBJ, "properties": {"total": {"type": "integer"}}, "required": ["total"]}, "{total: int}"),
        ({"type": OBJ}, "dict"),
    ],
)
def test_the_result_is_the_structured_shape_unwrapped_or_text(schema: dict[str, Any] | None, expected: str) -> None:
    assert result_type(schema) == expected


def test_a_whole_signature() -> None:
    schema = {"type": OBJ, "properties": {"query": {"type": "string"}}, "required": ["query"]}
    output = {
        "type": OBJ,
        "properties": {
            "entities": {"type": "array", "items": {"type": OBJ, "properties": {"name": {"type": "string"}}}}
        },
    }
    assert tool_signature("memory.search_nodes", schema, output) == (
        "memory.search_nodes(query: str) -> {entities?: list[{name?: str}]}"
    )
