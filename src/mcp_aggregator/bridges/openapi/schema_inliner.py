"""OpenAPI schemas to self-contained JSON Schema: references inlined, 3.0's dialect converted.

A tool's ``inputSchema`` travels alone to clients that resolve no ``$ref``, so every local
reference is inlined; a schema that refers to itself is cut at the second visit (an open
``{}`` with a note), since an LLM cannot use an infinite schema either. Lookups go through
``referencing`` (JSON pointers, escapes); what is inlined is converted from OpenAPI 3.0's
schema dialect (``nullable``, boolean ``exclusiveMaximum``, ``example``) to JSON Schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

DOCUMENT_URI = "urn:mcp-aggregator:openapi-document"
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "contains",
        "propertyNames",
        "if",
        "then",
        "else",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
    }
)
_OPENAPI_ONLY = frozenset({"discriminator", "xml", "externalDocs", "nullable", "example"})


class DocumentPathError(ValueError):
    """Something at ``where`` (a path in the document, e.g. ``paths./pets.get.parameters[0]``)
    cannot be used; the message says why."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where = where
        self.why = why


class SchemaInliner:
    """Resolves references within one OpenAPI document and inlines schemas."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self._document = document
        self._openapi30 = str(document.get("openapi", "")).startswith("3.0")
        resource: Resource[Any] = Resource.opaque(document)
        self._resolver = Registry().with_resource(DOCUMENT_URI, resource).resolver(DOCUMENT_URI)

    def deref(self, node: Any, where: str) -> Any:
        """``node`` with its (chain of) ``$ref`` followed; other keys beside a ``$ref`` are kept
        over the target's (3.1 allows siblings such as ``description``)."""
        seen: set[str] = set()
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise DocumentPathError(where, f"$ref {ref!r} refers to itself")
            seen.add(ref)
            target = self._lookup(ref, where)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, Mapping) else target
        return node

    def schema(self, node: Any, where: str) -> dict[str, Any]:
        """``node`` as a JSON Schema object with every reference inlined."""
        return self._schema(node, where, ())

    def _lookup(self, ref: str, where: str) -> Any:
        if not ref.startswith("#"):
            raise DocumentPathError(where, f"$ref {ref!r} points outside the document (only local references are read)")
        try:
            return self._resolver.lookup(ref).contents
        except Unresolvable as exc:
            raise DocumentPathError(where, f"$ref {ref!r} does not resolve in the document") from exc

    def _schema(self, node: Any, where: str, trail: tuple[str, ...]) -> dict[str, Any]:
        if isinstance(node, bool):
            return {} if node else {"not": {}}
        if not isinstance(node, Mapping):
            raise DocumentPathError(where, f"a schema must be an object, got {type(node).__name__}")
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in trail:
                name = ref.rsplit("/", 1)[-1]
                return {"description": f"(a nested {name}; its schema repeats the enclosing one)"}
            target = self._lookup(ref, where)
            inlined = self._schema(target, where, (*trail, ref))
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**inlined, **self._schema(siblings, where, trail)} if siblings else inlined
        out: dict[str, Any] = {}
        for key, value in node.items():
            here = f"{where}.{key}"
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {name: self._schema(sub, f"{here}.{name}", trail) for name, sub in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self._schema(sub, f"{here}[{i}]", trail) for i, sub in enumerate(value)]
            elif key in _SCHEMA_ONE and isinstance(value, Mapping | bool):
                out[key] = self._schema(value, here, trail)
            elif key == "items" and isinstance(value, list):
                out["prefixItems"] = [self._schema(sub, f"{here}[{i}]", trail) for i, sub in enumerate(value)]
            elif key not in _OPENAPI_ONLY:
                out[key] = value
        return self._dialect(node, out)

    def _dialect(self, node: Mapping[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        if "example" in node and "examples" not in out:
            out["examples"] = [node["example"]]
        if not self._openapi30:
            return out
        for bound, limit in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
            if out.get(bound) is True and limit in out:
                out[bound] = out.pop(limit)
            elif isinstance(out.get(bound), bool):
                del out[bound]
        if node.get("nullable") is True:
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
            elif "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        return out
