"""Reading an OpenAPI document's operations as tools (pure: a parsed document in, tools out).

An operation that cannot become a tool is a ``DocumentPathError`` naming its place in the
document; the others still load. The tool's input schema holds the path, query, header and
cookie parameters by name and the JSON body: an object body's properties are spread beside
the parameters (what a model fills best), unless a name clashes, then the body is one
``body`` argument.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from mcp_aggregator.bridges.openapi.operation import Body, BodyKind, Location, Operation, Parameter
from mcp_aggregator.bridges.openapi.schema_inliner import DocumentPathError, SchemaInliner
from mcp_aggregator.bridges.security_schemes import openapi_requirement

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
# RFC-defined headers the document may not describe as parameters (OpenAPI: "ignored").
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})


@dataclass(frozen=True)
class Reading:
    operations: tuple[Operation, ...]
    problems: tuple[DocumentPathError, ...]


def selector_of(method: str, path: str) -> str:
    """The ``"METHOD /path"`` form a selection may name an operation by."""
    return f"{method.upper()} {path}"


def tool_name(operation_id: str | None, method: str, path: str) -> str:
    """``operationId`` made client-safe, else method and path (``get_pets_petId``)."""
    raw = operation_id or "_".join([method, *(part.strip("{}") for part in path.split("/") if part)])
    name = _UNSAFE.sub("_", raw).strip("_")
    return (name or method)[:MAX_NAME]


def read_operations(document: Mapping[str, Any], selection: Sequence[str] | None = None) -> Reading:
    """Every operation of ``document`` (or those ``selection`` names) as a tool.

    Raises ``DocumentPathError`` for a document without ``paths`` and, at ``operations[i]``,
    for a selected name that is no operation of the document.
    """
    paths = document.get("paths")
    if not isinstance(paths, Mapping):
        raise DocumentPathError("paths", "missing or not an object (is this an OpenAPI 3 document?)")
    inliner = SchemaInliner(document)
    found: list[tuple[str, str, str, Mapping[str, Any], Mapping[str, Any]]] = []
    for path, item in paths.items():
        if not isinstance(item, Mapping):
            continue
        for method in METHODS:
            spec = item.get(method)
            if isinstance(spec, Mapping):
                found.append((str(path), method, f"paths.{path}.{method}", item, spec))
    if selection is not None:
        found = _selected(found, selection)
    operations: list[Operation] = []
    problems: list[DocumentPathError] = []
    names: set[str] = set()
    for path, method, where, item, spec in found:
        try:
            operation = _operation(inliner, path, method, where, item, spec)
            if operation.tool.name in names:
                raise DocumentPathError(
                    where, f"tool name {operation.tool.name!r} is already taken by another operation"
                )
        except DocumentPathError as exc:
            problems.append(exc)
            continue
        names.add(operation.tool.name)
        operations.append(operation)
    return Reading(tuple(operations), tuple(problems))


def _selected(
    found: list[tuple[str, str, str, Mapping[str, Any], Mapping[str, Any]]], selection: Sequence[str]
) -> list[tuple[str, str, str, Mapping[str, Any], Mapping[str, Any]]]:
    keys: dict[str, int] = {}
    for index, (path, method, _, _, spec) in enumerate(found):
        keys[selector_of(method, path)] = index
        if isinstance(spec.get("operationId"), str):
            keys[spec["operationId"]] = index
    chosen: list[int] = []
    for position, wanted in enumerate(selection):
        method, _, rest = wanted.strip().partition(" ")
        key = selector_of(method, rest.strip()) if rest else wanted
        if key not in keys:
            raise DocumentPathError(
                f"operations[{position}]", f"{wanted!r} is no operationId or 'METHOD /path' of the document"
            )
        if keys[key] not in chosen:
            chosen.append(keys[key])
    return [found[index] for index in sorted(chosen)]


def _operation(
    inliner: SchemaInliner, path: str, method: str, where: str, item: Mapping[str, Any], spec: Mapping[str, Any]
) -> Operation:
    operation_id = spec.get("operationId") if isinstance(spec.get("operationId"), str) else None
    properties: dict[str, Any] = {}
    required: list[str] = []
    parameters = _parameters(inliner, where, item, spec, properties, required)
    body = _body(inliner, where, spec, properties, required)
    for name in re.findall(r"{([^}]+)}", path):
        if not any(p.location is Location.PATH and p.name == name for p in parameters):
            raise DocumentPathError(f"{where}.parameters", f"path parameter {name!r} of {path!r} is not described")
    output, wraps = _output(inliner, where, spec)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    tool = types.Tool(
        name=tool_name(operation_id, method, path),
        title=spec.get("summary") if isinstance(spec.get("summary"), str) else None,
        description=_description(spec, method, path),
        input_schema=input_schema,
        output_schema=output,
        annotations=_annotations(method, spec),
    )
    return Operation(
        tool=tool,
        method=method.upper(),
        path=path,
        where=where,
        parameters=tuple(parameters),
        body=body,
        wraps_output=wraps,
        output_schema=output,
        security=openapi_requirement(spec.get("security")),
    )


def _description(spec: Mapping[str, Any], method: str, path: str) -> str:
    parts = [text.strip() for text in (spec.get("summary"), spec.get("description")) if isinstance(text, str)]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    return "\n\n".join(part for part in parts if part) or f"{method.upper()} {path}"


def _annotations(method: str, spec: Mapping[str, Any]) -> types.ToolAnnotations:
    read_only = method in ("get", "head", "options")
    return types.ToolAnnotations(
        title=spec.get("summary") if isinstance(spec.get("summary"), str) else None,
        read_only_hint=read_only,
        destructive_hint=None if read_only else method == "delete",
        idempotent_hint=None if read_only else method in ("put", "delete"),
        open_world_hint=True,
    )


def _parameters(
    inliner: SchemaInliner,
    where: str,
    item: Mapping[str, Any],
    spec: Mapping[str, Any],
    properties: dict[str, Any],
    required: list[str],
) -> list[Parameter]:
    merged: dict[tuple[str, str], tuple[str, Mapping[str, Any]]] = {}
    # Operation-level parameters override path-level ones with the same name and location.
    for source, owner in (("parameters", item), ("parameters", spec)):
        listed = owner.get(source) or []
        base = f"{where.rsplit('.', 1)[0]}.parameters" if owner is item else f"{where}.parameters"
        if not isinstance(listed, list):
            raise DocumentPathError(base, "must be a list")
        for index, raw in enumerate(listed):
            here = f"{base}[{index}]"
            param = inliner.deref(raw, here)
            if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
                raise DocumentPathError(here, "a parameter needs a name")
            location = param.get("in")
            if location not in {loc.value for loc in Location}:
                raise DocumentPathError(here, f"'in' must be path, query, header or cookie, got {location!r}")
            merged[(param["name"], location)] = (here, param)
    out: list[Parameter] = []
    for (name, location), (here, param) in merged.items():
        if location == "header" and name.lower() in _IGNORED_HEADERS:
            continue
        clash = sum(1 for other, _ in merged if other == name) > 1
        argument = f"{location}_{name}" if clash else name
        schema = _parameter_schema(inliner, here, param)
        if isinstance(param.get("description"), str) and "description" not in schema:
            schema["description"] = param["description"]
        properties[argument] = schema
        if location == "path" or param.get("required") is True:
            required.append(argument)
        out.append(Parameter(argument, name, Location(location), explode=param.get("explode", True) is not False))
    return out


def _parameter_schema(inliner: SchemaInliner, here: str, param: Mapping[str, Any]) -> dict[str, Any]:
    if "schema" in param:
        return inliner.schema(param["schema"], f"{here}.schema")
    content = param.get("content")
    if isinstance(content, Mapping) and content:
        media = next(iter(content.values()))
        if isinstance(media, Mapping) and "schema" in media:
            return inliner.schema(media["schema"], f"{here}.content")
    raise DocumentPathError(here, "a parameter needs a schema (or content with one)")


def _media(content: Mapping[str, Any]) -> tuple[str, BodyKind] | None:
    for media_type in content:
        lowered = media_type.split(";")[0].strip().lower()
        if lowered == "application/json" or lowered.endswith("+json"):
            return media_type, BodyKind.JSON
    for media_type in content:
        lowered = media_type.split(";")[0].strip().lower()
        if lowered == "application/x-www-form-urlencoded":
            return media_type, BodyKind.FORM
        if lowered.startswith("text/"):
            return media_type, BodyKind.TEXT
    return None


def _body(
    inliner: SchemaInliner,
    where: str,
    spec: Mapping[str, Any],
    properties: dict[str, Any],
    required: list[str],
) -> Body | None:
    if "requestBody" not in spec:
        return None
    here = f"{where}.requestBody"
    request_body = inliner.deref(spec["requestBody"], here)
    content = request_body.get("content") if isinstance(request_body, Mapping) else None
    if not isinstance(content, Mapping) or not content:
        raise DocumentPathError(here, "a request body needs content")
    chosen = _media(content)
    if chosen is None:
        kinds = ", ".join(str(key) for key in content)
        raise DocumentPathError(f"{here}.content", f"no JSON, form or text media type to send ({kinds})")
    media_type, kind = chosen
    media = content[media_type] if isinstance(content[media_type], Mapping) else {}
    schema = inliner.schema(media.get("schema", {}), f"{here}.content.{media_type}.schema")
    body_required = request_body.get("required") is True
    props = schema.get("properties")
    spreadable = (
        kind is not BodyKind.TEXT
        and isinstance(props, Mapping)
        and props
        and schema.get("type", "object") == "object"
        and not (set(props) & set(properties))
        and not any(key in schema for key in ("allOf", "anyOf", "oneOf"))
    )
    if spreadable:
        assert isinstance(props, Mapping)
        properties.update(props)
        if body_required:
            required.extend(name for name in schema.get("required", []) if name in props)
        return Body(kind, media_type, spread=tuple((name, name) for name in props))
    argument = "body" if "body" not in properties else "request_body"
    if kind is BodyKind.TEXT:
        schema = {"type": "string", **{k: v for k, v in schema.items() if k == "description"}}
    properties[argument] = schema
    if body_required:
        required.append(argument)
    return Body(kind, media_type, argument=argument)


def _output(inliner: SchemaInliner, where: str, spec: Mapping[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    responses = spec.get("responses")
    if not isinstance(responses, Mapping):
        return None, False
    codes = sorted((str(code) for code in responses if str(code).startswith("2")), key=lambda c: (c == "2XX", c))
    for code in codes:
        here = f"{where}.responses.{code}"
        response = inliner.deref(responses[code], here)
        content = response.get("content") if isinstance(response, Mapping) else None
        if not isinstance(content, Mapping):
            continue
        chosen = _media(content)
        if chosen is None or chosen[1] is not BodyKind.JSON:
            continue
        media = content[chosen[0]]
        if not isinstance(media, Mapping) or "schema" not in media:
            return None, False
        schema = inliner.schema(media["schema"], f"{here}.content.{chosen[0]}.schema")
        if schema.get("type") == "object" or (
            "type" not in schema and "properties" in schema and not schema.get("nullable")
        ):
            return schema, False
        return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True
    return None, False
