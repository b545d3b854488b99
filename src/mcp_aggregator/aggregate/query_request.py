"""Validating the arguments of an aggregator query.

Every refusal is an ``InvalidQueryError(field, reason)``; ``serve/`` maps it to JSON-RPC
-32602 "Invalid query parameters" with ``data: {"field": ..., "reason": ...}``. Checks run
in a fixed order (query, maxResults, servers, unknown keys) so one input always gives the
same error.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mcp_aggregator.aggregate.config import MAX_MAX_RESULTS, MIN_MAX_RESULTS
from mcp_aggregator.errors import InvalidQueryError

MAX_QUERY_CHARS = 10_000
_KNOWN_ARGUMENTS = ("query", "maxResults", "servers")


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """A validated query. ``servers`` empty means "let the rules choose"."""

    query: str
    max_results: int
    servers: tuple[str, ...] = ()


def parse_query_arguments(
    arguments: Mapping[str, Any] | None,
    *,
    known_servers: Collection[str],
    default_max_results: int,
) -> QueryRequest:
    """Validate tool-call arguments against the contract's input schema.

    ``null`` for ``maxResults`` or ``servers`` counts as absent; an integral float such as
    ``30.0`` is a JSON integer. Repeated server names are asked once.

    Raises:
        InvalidQueryError: e.g. ``("maxResults", "Must be between 10 and 100, got 500")``,
            ``("query", "Required")``, ``("servers", "Unknown server 'x'; known servers: a, b")``.
    """
    args = arguments if arguments is not None else {}
    query = _parse_query(args)
    max_results = _parse_max_results(args.get("maxResults"), default_max_results)
    servers = _parse_servers(args.get("servers"), known_servers)
    unknown = sorted(key for key in args if key not in _KNOWN_ARGUMENTS)
    if unknown:
        raise InvalidQueryError(unknown[0], f"Unknown argument; expected one of {', '.join(_KNOWN_ARGUMENTS)}")
    return QueryRequest(query=query, max_results=max_results, servers=servers)


def json_type_name(value: object) -> str:
    """The JSON Schema type name of a decoded JSON value (for error reasons)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _parse_query(args: Mapping[str, Any]) -> str:
    if "query" not in args:
        raise InvalidQueryError("query", "Required")
    query = args["query"]
    if not isinstance(query, str):
        raise InvalidQueryError("query", f"Must be a string, got {json_type_name(query)}")
    if not 1 <= len(query) <= MAX_QUERY_CHARS:
        raise InvalidQueryError("query", f"Must be between 1 and {MAX_QUERY_CHARS} characters, got {len(query)}")
    if not query.strip():
        raise InvalidQueryError("query", "Must contain non-whitespace characters")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidQueryError("query", "Must be valid UTF-8") from exc
    return query


def _parse_max_results(value: object, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidQueryError("maxResults", f"Must be an integer, got {json_type_name(value)}")
    if not MIN_MAX_RESULTS <= value <= MAX_MAX_RESULTS:
        raise InvalidQueryError("maxResults", f"Must be between {MIN_MAX_RESULTS} and {MAX_MAX_RESULTS}, got {value}")
    return value


def _parse_servers(value: object, known: Collection[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise InvalidQueryError("servers", f"Must be an array of server names, got {json_type_name(value)}")
    names: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise InvalidQueryError("servers", f"Item {index} must be a string, got {json_type_name(item)}")
        if item not in names:
            names.append(item)
    unknown = [name for name in names if name not in known]
    if unknown:
        label = "Unknown server" if len(unknown) == 1 else "Unknown servers"
        listed = ", ".join(repr(name) for name in unknown)
        available = ", ".join(sorted(known)) or "none"
        raise InvalidQueryError("servers", f"{label} {listed}; known servers: {available}")
    return tuple(names)
