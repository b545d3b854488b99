"""A REST API as an MCP server: the SDK's low-level ``Server`` over one OpenAPI document.

The gateway connects to it in-process like to any upstream, so pinning, health, policies
and the rest apply unchanged. Each ``tools/list`` (the first at connect, then every health
check's re-list) reads the document again: a changed document reaches the pins, and a
document that can no longer be fetched fails the health check.

The document's security schemes take the secrets of the server's ``security`` setting
(``security_schemes``): each operation's (or the document's) requirement is resolved at
load, so a call needs no lookup, and a call whose requirement has no secret is a tool error
saying which line to add.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
import mcp_types as types
import orjson
from jsonschema import Draft202012Validator
from mcp.server import ServerRequestContext

from mcp_aggregator.bridges.bridge_server import BridgeServer
from mcp_aggregator.bridges.openapi.document_source import api_base_url, read_document
from mcp_aggregator.bridges.openapi.operation import Operation
from mcp_aggregator.bridges.openapi.operation_reader import Reading, read_operations
from mcp_aggregator.bridges.openapi.operation_security import operation_access, unknown_in_document
from mcp_aggregator.bridges.openapi.rest_call import RestCaller, error_result
from mcp_aggregator.bridges.openapi.schema_inliner import DocumentPathError
from mcp_aggregator.bridges.security_schemes import Placement
from mcp_aggregator.errors import BridgeError

logger = logging.getLogger(__name__)


class OpenApiBridge(BridgeServer):
    """The operations of one document, kept current, and the server that offers them."""

    def __init__(
        self,
        name: str,
        spec: str,
        client: httpx2.AsyncClient,
        *,
        base_url: str | None = None,
        selection: Sequence[str] | None = None,
        secrets: Mapping[str, str] | None = None,
        signed_in: bool = False,
    ) -> None:
        """``secrets``: the ``security`` setting, expanded (scheme name to secret);
        ``signed_in``: ``client`` carries the gateway's OAuth sign-in (``auth: oauth``)."""
        self.name = name
        self._secrets = dict(secrets or {})
        self._signed_in = signed_in
        self._credentials: dict[str, Placement | str] = {}
        self._spec = spec
        self._client = client
        self._configured_base = base_url
        self._selection = selection
        self._operations: dict[str, Operation] = {}
        self._validators: dict[str, Draft202012Validator | None] = {}
        self._caller = RestCaller(client, base_url or "")
        self._fresh = False
        self.problems: tuple[str, ...] = ()
        """Why some operations did not become tools (each naming its path in the document)."""

    async def load(self) -> None:
        """Reads the document and its operations; raises ``BridgeError`` when nothing usable is
        left (a document that does not parse, an unknown selected operation, no tools)."""
        document = await read_document(self._spec, self._client, server=self.name)
        base_url = api_base_url(document, self._spec, self._configured_base, server=self.name)
        try:
            reading = read_operations(document, self._selection)
        except DocumentPathError as exc:
            raise BridgeError(self.name, str(exc)) from exc
        unknown = unknown_in_document(document, self._secrets)
        if unknown is not None:
            raise BridgeError(self.name, unknown)
        self._adopt(reading, base_url)
        sent = frozenset(name.lower() for name in self._client.headers)
        access = operation_access(
            document, reading.operations, self._secrets, server=self.name, sent_headers=sent, signed_in=self._signed_in
        )
        lacking = sorted({why for why in access.values() if isinstance(why, str)})
        if lacking != sorted({why for why in self._credentials.values() if isinstance(why, str)}):
            for why in lacking:
                logger.warning("upstream %s: %s", self.name, why)
        self._credentials = access

    def _adopt(self, reading: Reading, base_url: str) -> None:
        problems = tuple(str(problem) for problem in reading.problems)
        if problems != self.problems:
            for problem in problems:
                logger.warning("upstream %s: an operation cannot become a tool: %s", self.name, problem)
        self.problems = problems
        if not reading.operations:
            detail = "; ".join(problems) if problems else "the document describes no operations"
            raise BridgeError(self.name, f"spec: no operation could become a tool ({detail})")
        self._operations = {op.tool.name: op for op in reading.operations}
        self._validators = {}
        self._caller.base_url = base_url
        self._fresh = True

    def _instructions(self) -> str:
        return f"The REST API described by {self._spec}, one tool per operation."

    def _listed_tools(self) -> list[types.Tool]:
        return [op.tool for op in self._operations.values()]

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self.call(params.name, params.arguments or {})

    async def call(self, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
        operation = self._operations.get(name)
        if operation is None:
            return error_result(f"Unknown tool: {name}")
        credentials = self._credentials.get(name)
        if isinstance(credentials, str):
            return error_result(credentials)
        return await self._caller.call(operation, arguments, self._validator(operation), credentials)

    async def answer_raw(self, message: dict[str, Any]) -> bytes:
        """A raw JSON-RPC ``tools/call`` answered as the SDK's server would, minus its framing
        (the fast path's lane); any other method is not found, as there."""
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        arguments = params.get("arguments") if isinstance(params, dict) else None
        if message.get("method") != "tools/call" or not isinstance(name, str):
            error = {"code": types.METHOD_NOT_FOUND, "message": "Method not found"}
            return orjson.dumps({"jsonrpc": "2.0", "id": message.get("id"), "error": error})
        result = await self.call(name, arguments if isinstance(arguments, dict) else {})
        body = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return orjson.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": body})

    def _validator(self, operation: Operation) -> Draft202012Validator | None:
        name = operation.tool.name
        if name not in self._validators:
            schema = operation.output_schema
            self._validators[name] = Draft202012Validator(schema) if schema is not None else None
        return self._validators[name]
