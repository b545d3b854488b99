"""Validation of facade params against a command's JSON schema, with errors that name the field."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from mcp_aggregator.errors import FacadeError

logger = logging.getLogger(__name__)

EMPTY_OBJECT: Mapping[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def object_schema(properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A params schema for our own commands: unknown fields are refused, so typos get named."""
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties), "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


@dataclass(frozen=True, slots=True)
class ParamIssue:
    """One validation failure: ``field`` is a dotted path such as ``params.items[2].name``."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


_COMPILED_MAX = 4096
_COMPILED: dict[tuple[int, bool], tuple[Mapping[str, Any], ParamSchema]] = {}
"""Keyed by the schema object's id; the entry keeps the object alive so the id stays its own."""


class ParamSchema:
    """A compiled JSON schema for one command's params.

    ``lenient`` is for schemas we do not own (upstream tools): an invalid schema then
    disables validation instead of raising, because refusing every call to a tool whose
    author wrote ``"minimum": true`` helps nobody; the upstream still validates. A lenient
    schema is checked and compiled at its first validation, not here: checking costs about
    2 ms a schema, and a catalogue of 10,000 tools made the facades rebuild block the event
    loop for seconds at every change, for tools most of which are never called that way.
    """

    __slots__ = ("_compiled", "_validator", "schema")

    def __init__(self, schema: Mapping[str, Any], *, lenient: bool = False) -> None:
        self.schema = schema
        self._validator: Validator | None = None
        self._compiled = False
        if not lenient:
            self._compile(lenient=False)

    def _compile(self, *, lenient: bool) -> Validator | None:
        self._compiled = True
        cls = validator_for(self.schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(dict(self.schema))
        except SchemaError:
            if not lenient:
                raise
            logger.info("param schema is invalid; calls go unvalidated")
            return None
        self._validator = cls(dict(self.schema))
        return self._validator

    @classmethod
    def of(cls, schema: Mapping[str, Any], *, lenient: bool = False) -> ParamSchema:
        """The compiled schema for ``schema``, compiled once per schema object.

        Tool schemas live in the catalogue and stay the same objects until the next
        discovery, so a facade ``execute`` validates without checking and compiling the
        schema again on every call.
        """
        key = (id(schema), lenient)
        cached = _COMPILED.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        compiled = cls(schema, lenient=lenient)
        _COMPILED[key] = (schema, compiled)
        return compiled

    def issues(self, instance: Any, prefix: str = "params") -> list[ParamIssue]:
        """Every failure, sorted by field so the first one is deterministic."""
        validator = self._validator if self._compiled else self._compile(lenient=True)
        if validator is None:
            return []
        try:
            errors = list(validator.iter_errors(instance))
        except Unresolvable:
            # A $ref to somewhere we will not fetch: leave validation to the upstream.
            return []
        found = {_issue(error, prefix) for error in errors}
        return sorted(found, key=lambda issue: (issue.field, issue.message))

    def check(self, instance: Any, prefix: str = "params") -> None:
        """Raises ``FacadeError`` naming the first bad field."""
        issues = self.issues(instance, prefix)
        if issues:
            more = f" (and {len(issues) - 1} more)" if len(issues) > 1 else ""
            raise FacadeError(f"{issues[0]}{more}")

    def signature(self, max_args: int = 8) -> str:
        """``"query, k?, server?"``: property names, optional ones marked, at most ``max_args``."""
        props = self.schema.get("properties")
        if not isinstance(props, Mapping):
            return ""
        required = self.schema.get("required")
        required_names = set(required) if isinstance(required, list) else set()
        names = [name if name in required_names else f"{name}?" for name in props]
        if len(names) > max_args:
            names = [*names[:max_args], "…"]
        return ", ".join(names)


def _field(prefix: str, path: Any) -> str:
    out = prefix
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _issue(error: ValidationError, prefix: str) -> ParamIssue:
    where = _field(prefix, error.absolute_path)
    value: Any = error.validator_value
    instance: Any = error.instance
    match error.validator:
        case "required" if isinstance(instance, Mapping):
            missing = [name for name in value if name not in instance]
            return ParamIssue(f"{where}.{missing[0]}" if missing else where, "is required")
        case "additionalProperties" if isinstance(instance, Mapping):
            allowed = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
            extra = sorted(name for name in instance if name not in allowed)
            return ParamIssue(f"{where}.{extra[0]}" if extra else where, "is not an accepted field")
        case "type":
            kinds = " or ".join(value) if isinstance(value, list) else str(value)
            return ParamIssue(where, f"must be of type {kinds}")
        case "enum":
            return ParamIssue(where, "must be one of " + ", ".join(str(v) for v in value))
        case "minimum":
            return ParamIssue(where, f"must be >= {value}")
        case "maximum":
            return ParamIssue(where, f"must be <= {value}")
        case "minLength":
            return ParamIssue(where, f"must have at least {value} characters")
        case "maxLength":
            return ParamIssue(where, f"must have at most {value} characters")
        case _:
            return ParamIssue(where, error.message)
