"""A tool as a Python-style signature a script is written against (pure).

``memory.search_nodes(query: str, limit: int = 10) -> {entities: list[{name: str}]}``: the
name to pass to ``call_tool``, the arguments with their JSON Schema types in Python
spelling (required first, optional ones with their default or ``...``), then the shape
``call_tool`` returns — the structured result when the tool declares an ``outputSchema``
(the SDK's ``{"result": x}`` wrapper unwrapped, as ``call_tool`` unwraps it), else
``str``. Object shapes are written ``{key: type, key?: type}`` (``?``: may be absent).
Deep or large schemas are cut with ``…``.
Strings are written as Python writes them (``'a'``): inside the JSON a model reads, a
double quote would cost an escape each.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

MAX_DEPTH: Final = 3
MAX_KEYS: Final = 12
MAX_LITERALS: Final = 8
_SCALARS: Final = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def tool_signature(name: str, input_schema: Mapping[str, Any], output_schema: Mapping[str, Any] | None) -> str:
    """``name(args) -> result`` for a tool with these schemas."""
    return f"{name}({parameters(input_schema)}) -> {result_type(output_schema)}"


def parameters(schema: Mapping[str, Any]) -> str:
    """The argument list: required arguments first, each ``name: type``; optional ones
    ``name: type = default`` (``= ...`` when the schema gives no default)."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ""
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    renderer = _Renderer(schema)
    first, rest = [], []
    for key, prop in props.items():
        kind = renderer.type_of(prop, 1)
        if key in needed:
            first.append(f"{_key(key)}: {kind}")
        else:
            default = prop.get("default", ...) if isinstance(prop, Mapping) else ...
            rest.append(f"{_key(key)}: {kind} = {_literal(default)}")
    return ", ".join([*first, *rest])


def result_type(schema: Mapping[str, Any] | None) -> str:
    """What ``call_tool`` returns: the declared structured result, else ``str`` (the text)."""
    if not isinstance(schema, Mapping):
        return "str"
    props = schema.get("properties")
    if isinstance(props, Mapping) and list(props) == ["result"]:
        return _Renderer(schema).type_of(props["result"], 0)
    return _Renderer(schema).type_of(schema, 0)


class _Renderer:
    """Renders schemas found under one root (whose ``$defs`` resolve local references)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.seen: list[str] = []

    def type_of(self, schema: Any, depth: int) -> str:
        if not isinstance(schema, Mapping) or not schema:
            return "Any"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._ref(ref, depth)
        if "const" in schema:
            return f"Literal[{_literal(schema['const'])}]"
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            if len(enum) <= MAX_LITERALS:
                return f"Literal[{', '.join(_literal(v) for v in enum)}]"
            return "str" if all(isinstance(v, str) for v in enum) else "Any"
        for combinator in ("anyOf", "oneOf"):
            options = schema.get(combinator)
            if isinstance(options, list) and options:
                return _union([self.type_of(option, depth) for option in options])
        every = schema.get("allOf")
        if isinstance(every, list) and len(every) == 1:
            return self.type_of(every[0], depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self._typed(str(k), schema, depth) for k in kind])
        if isinstance(kind, str):
            return self._typed(kind, schema, depth)
        if isinstance(schema.get("properties"), Mapping):
            return self._typed("object", schema, depth)
        return "Any"

    def _typed(self, kind: str, schema: Mapping[str, Any], depth: int) -> str:
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            prefix = schema.get("prefixItems")
            if isinstance(prefix, list) and prefix:
                return f"tuple[{', '.join(self.type_of(item, depth + 1) for item in prefix)}]"
            items = schema.get("items")
            return f"list[{self.type_of(items, depth + 1)}]" if isinstance(items, Mapping) and items else "list"
        if kind == "object":
            return self._object(schema, depth)
        return "Any"

    def _object(self, schema: Mapping[str, Any], depth: int) -> str:
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            if depth >= MAX_DEPTH:
                return "dict"
            required = schema.get("required")
            needed = set(required) if isinstance(required, list) else set()
            fields = [
                f"{_key(key)}{'' if key in needed else '?'}: {self.type_of(prop, depth + 1)}"
                for key, prop in list(props.items())[:MAX_KEYS]
            ]
            if len(props) > MAX_KEYS:
                fields.append("…")
            return "{" + ", ".join(fields) + "}"
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"dict[str, {self.type_of(extra, depth + 1)}]"
        return "dict"

    def _ref(self, ref: str, depth: int) -> str:
        name = ref.rsplit("/", 1)[-1] or "Any"
        target = self._resolve(ref)
        if target is None or ref in self.seen or depth >= MAX_DEPTH:
            return name
        self.seen.append(ref)
        try:
            return self.type_of(target, depth)
        finally:
            self.seen.pop()

    def _resolve(self, ref: str) -> Mapping[str, Any] | None:
        if not ref.startswith("#/"):
            return None
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node if isinstance(node, Mapping) else None


def _union(kinds: Sequence[str]) -> str:
    """``A | B``; literals side by side merge (``Literal['a'] | Literal['b']`` is ``Literal['a', 'b']``)."""
    unique = list(dict.fromkeys(kinds))
    if "Any" in unique:
        return "Any"
    merged: list[str] = []
    for kind in unique:
        if merged and _is_literal(kind) and _is_literal(merged[-1]):
            merged[-1] = f"{merged[-1][:-1]}, {kind[len('Literal[') :]}"
        else:
            merged.append(kind)
    return " | ".join(merged)


def _is_literal(kind: str) -> bool:
    return kind.startswith("Literal[") and kind.endswith("]") and kind.count("Literal[") == 1


def _key(key: str) -> str:
    return key if key.isidentifier() else repr(key)


def _literal(value: Any) -> str:
    """A JSON value written as Python (``true`` → ``True``, ``"a"`` → ``'a'``); ``...`` stays ``...``."""
    if value is ...:
        return "..."
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return repr(value)
    return repr(value) if isinstance(value, list | dict) else "..."
