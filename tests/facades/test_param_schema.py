import pytest
from jsonschema.exceptions import SchemaError

from mcp_aggregator.facades.param_schema import ParamIssue, ParamSchema


def test_issues_are_sorted_by_field_and_all_reported() -> None:
    schema = ParamSchema(
        {
            "type": "object",
            "properties": {"b": {"type": "string"}, "a": {"type": "integer"}},
            "required": ["a", "b"],
        }
    )
    assert schema.issues({"a": "x"}) == [
        ParamIssue("params.a", "must be of type integer"),
        ParamIssue("params.b", "is required"),
    ]


def test_nested_paths_use_dots_and_indices() -> None:
    schema = ParamSchema(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"n": {"type": "string", "maxLength": 2}}},
                }
            },
        }
    )
    assert [str(i) for i in schema.issues({"items": [{"n": "ok"}, {"n": "long"}]}, "args")] == [
        "args.items[1].n: must have at most 2 characters"
    ]


def test_an_invalid_schema_raises_unless_lenient() -> None:
    broken = {"type": "object", "properties": {"n": {"type": "number", "minimum": True}}}
    with pytest.raises(SchemaError):
        ParamSchema(broken)
    assert ParamSchema(broken, lenient=True).issues({"n": "anything"}) == []


def test_a_remote_ref_is_not_fetched_and_not_enforced() -> None:
    schema = ParamSchema({"type": "object", "properties": {"x": {"$ref": "https://example.invalid/s.json"}}})
    assert schema.issues({"x": 1}) == []


def test_draft_07_schemas_with_local_refs_validate() -> None:
    schema = ParamSchema(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"node": {"type": "object", "required": ["name"]}},
            "properties": {"root": {"$ref": "#/definitions/node"}},
        }
    )
    assert [str(i) for i in schema.issues({"root": {}})] == ["params.root.name: is required"]


@pytest.mark.parametrize(
    ("schema", "signature"),
    [
        ({"type": "object"}, ""),
        ({"type": "object", "properties": {"q": {}, "k": {}}, "required": ["q"]}, "q, k?"),
        (
            {"type": "object", "properties": {f"p{i}": {} for i in range(10)}},
            "p0?, p1?, p2?, p3?, p4?, p5?, p6?, p7?, …",
        ),
    ],
)
def test_signature_marks_optional_args_and_caps_their_number(schema: dict[str, object], signature: str) -> None:
    assert ParamSchema(schema).signature() == signature
