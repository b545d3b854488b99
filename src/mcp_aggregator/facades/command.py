"""A facade command: a declaration (name, summary, params schema) plus its async handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_aggregator.facades.detail import Detail
from mcp_aggregator.facades.param_schema import EMPTY_OBJECT, ParamSchema

Handler = Callable[[dict[str, Any], Detail], Awaitable[Any]]
"""``(params, detail) -> data``. Params arrive validated. Raise an ``AggregatorError`` to fail;
return a list or ``Listing`` to get a ``count`` in the envelope."""


class Command:
    """One command of a domain.

    ``name`` is matched case-insensitively; ``summary`` is the one short line the tool
    description shows; ``params`` is the JSON schema the params object must satisfy
    (default: no params at all). ``lenient`` disables validation when the schema itself
    is invalid (see ``ParamSchema``) — for schemas taken from upstream servers.
    """

    __slots__ = ("handler", "key", "name", "param_schema", "summary")

    def __init__(
        self,
        name: str,
        summary: str,
        handler: Handler,
        params: Mapping[str, Any] = EMPTY_OBJECT,
        *,
        lenient: bool = False,
    ) -> None:
        if not name:
            raise ValueError("a command needs a name")
        self.name = name
        self.key = name.lower()
        self.summary = summary
        self.handler = handler
        self.param_schema = ParamSchema(params, lenient=lenient)

    @property
    def params(self) -> Mapping[str, Any]:
        return self.param_schema.schema

    def line(self) -> str:
        """The command's line in the tool description: ``name(args): summary``."""
        head = f"{self.name}({self.param_schema.signature()})"
        return f"{head}: {self.summary}" if self.summary else head

    async def run(self, params: dict[str, Any], detail: Detail) -> Any:
        """Validate ``params`` (raises ``FacadeError`` naming the field) and run the handler."""
        self.param_schema.check(params)
        return await self.handler(params, detail)
