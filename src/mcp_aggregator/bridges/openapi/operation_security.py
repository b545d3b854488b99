"""What each operation of a document must carry, from the server's secrets (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any

from mcp_aggregator.bridges.openapi.operation import Operation
from mcp_aggregator.bridges.security_schemes import (
    Placement,
    openapi_requirement,
    openapi_schemes,
    placement,
    unknown_scheme,
)
from mcp_aggregator.errors import MissingCredentialError

SCHEMES_AT = "components.securitySchemes"


def unknown_in_document(document: Mapping[str, Any], secrets: Iterable[str]) -> str | None:
    """Why a ``security`` entry names no scheme of ``document`` (None: each names one)."""
    return unknown_scheme(secrets, openapi_schemes(document), owner="the document", where=SCHEMES_AT)


def operation_access(
    document: Mapping[str, Any],
    operations: Iterable[Operation],
    secrets: Mapping[str, str],
    *,
    server: str,
    sent_headers: Set[str] = frozenset(),
    signed_in: bool = False,
) -> dict[str, Placement | str]:
    """By tool name: each operation's placed secrets (its own ``security``, else the
    document's), or the sentence saying which scheme lacks a secret and the line to add."""
    schemes = openapi_schemes(document)
    default = openapi_requirement(document.get("security")) or ()
    out: dict[str, Placement | str] = {}
    for op in operations:
        requirement = op.security if op.security is not None else default
        what = f"operation {op.tool.name} ({op.where})"
        try:
            out[op.tool.name] = placement(
                requirement, schemes, secrets, server=server, what=what, sent_headers=sent_headers, signed_in=signed_in
            )
        except MissingCredentialError as exc:
            out[op.tool.name] = str(exc)
    return out
