"""One OpenAPI operation as a tool: its definition and where each argument goes in the request."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import mcp_types as types

from mcp_aggregator.bridges.security_schemes import Requirement


class Location(StrEnum):
    PATH = "path"
    QUERY = "query"
    HEADER = "header"
    COOKIE = "cookie"


class BodyKind(StrEnum):
    JSON = "json"
    FORM = "form"
    TEXT = "text"


@dataclass(frozen=True)
class Parameter:
    """A tool argument placed as the document's parameter ``name`` ``in`` ``location``."""

    argument: str
    name: str
    location: Location
    explode: bool = True
    """Query arrays: ``a=1&a=2`` (the default ``form`` style) or ``a=1,2``."""


@dataclass(frozen=True)
class Body:
    """The request body: one argument holding all of it, or the object's properties spread
    over top-level arguments (``spread``: argument name to property name)."""

    kind: BodyKind
    media_type: str
    argument: str | None = None
    spread: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Operation:
    tool: types.Tool
    method: str
    path: str
    """The path template as written in the document (``/pets/{petId}``)."""
    where: str
    """Its place in the document (``paths./pets/{petId}.get``), for messages."""
    parameters: tuple[Parameter, ...] = ()
    body: Body | None = None
    wraps_output: bool = False
    """The success answer is not a JSON object: structured content is ``{"result": ...}``."""
    output_schema: dict[str, Any] | None = field(default=None, compare=False)
    security: Requirement | None = None
    """The operation's own ``security``; None: the document's."""
