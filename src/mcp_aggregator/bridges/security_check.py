"""``check-config``'s look at the security schemes of each ``openapi`` and ``a2a`` server: the
document or agent card is read once, and every operation or skill whose scheme the server
gives no secret (nor ``headers`` nor ``auth: oauth``) is named with the line to add, as the
server itself would say when it connects."""

from __future__ import annotations

import httpx
import httpx2

from mcp_aggregator.bridges.a2a.card_security import access, unknown_in_card
from mcp_aggregator.bridges.a2a.skill_tools import skill_tools
from mcp_aggregator.bridges.agent_card import read_agent_card
from mcp_aggregator.bridges.openapi.document_source import read_document
from mcp_aggregator.bridges.openapi.operation_reader import read_operations
from mcp_aggregator.bridges.openapi.operation_security import operation_access, unknown_in_document
from mcp_aggregator.bridges.openapi.schema_inliner import DocumentPathError
from mcp_aggregator.errors import BridgeError
from mcp_aggregator.settings import ServerConfig, Settings, Transport

_STANDIN = "(configured)"
"""Only the names of ``security`` matter here; its ``${VAR}``s need not be set."""


async def _openapi_problems(server: ServerConfig) -> list[str]:
    assert server.spec is not None
    async with httpx2.AsyncClient(timeout=server.connect_timeout_secs, follow_redirects=False) as http:
        document = await read_document(server.spec, http, server=server.name)
    try:
        reading = read_operations(document, server.operations)
    except DocumentPathError as exc:
        raise BridgeError(server.name, str(exc)) from exc
    unknown = unknown_in_document(document, server.security)
    if unknown is not None:
        return [unknown]
    secrets = dict.fromkeys(server.security, _STANDIN)
    sent = frozenset(name.lower() for name in server.headers)
    found = operation_access(
        document, reading.operations, secrets, server=server.name, sent_headers=sent, signed_in=server.auth is not None
    )
    return sorted({why for why in found.values() if isinstance(why, str)})


async def _a2a_problems(server: ServerConfig) -> list[str]:
    assert server.base_url is not None
    async with httpx.AsyncClient(timeout=server.connect_timeout_secs) as http:
        card = await read_agent_card(http, server.base_url, server=server.name)
    unknown = unknown_in_card(card, server.security)
    if unknown is not None:
        return [unknown]
    skills = {name: skill for name, (_, skill) in skill_tools(card).items()}
    secrets = dict.fromkeys(server.security, _STANDIN)
    sent = frozenset(name.lower() for name in server.headers)
    found = access(card, skills, secrets, server=server.name, sent_headers=sent, signed_in=server.auth is not None)
    return sorted({why for why in found.values() if isinstance(why, str)})


async def security_warnings(settings: Settings) -> list[str]:
    """One sentence per problem, each naming its server; a document or card that cannot be
    read is one such sentence too (the server would fail to connect the same way)."""
    found: list[str] = []
    for server in settings.servers:
        if server.transport not in (Transport.OPENAPI, Transport.A2A):
            continue
        try:
            if server.transport is Transport.OPENAPI:
                problems = await _openapi_problems(server)
            else:
                problems = await _a2a_problems(server)
        except BridgeError as exc:
            problems = [f"its security schemes could not be checked: {str(exc).removeprefix(server.name + ': ')}"]
        found += [f"server {server.name!r}: {problem}" for problem in problems]
    return found
