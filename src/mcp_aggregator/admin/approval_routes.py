"""``/api/v1/aggregator/approvals``: the calls held for a person, and an admin's decision on one.

``GET`` lists them (pending by default; filters ``status``, ``server``, ``tool``, ``client``);
``GET /approvals/{id}`` shows one, decided or not (the audit's events name it);
``POST /approvals/{id}`` with ``{"decision": "approve" | "deny", "reason": "..."}`` decides one.
The admin token is the only way in, and the configuration refuses to give a client that
token (or its hash); a bearer that is any client's token is refused here too, so no client approves its
own call through this path. ``X-Approval-Via: cli | page`` names the tool the admin used
(the audit records it; ``rest`` when absent).
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.approvals.approval import ApprovalStatus, DecidedVia
from mcp_aggregator.errors import ApprovalDecidedError, ApprovalNotFoundError
from mcp_aggregator.settings import Settings

router = APIRouter(prefix="/api/v1/aggregator", tags=["approvals"])

_VIA: dict[str, DecidedVia] = {"rest": DecidedVia.REST, "cli": DecidedVia.CLI, "page": DecidedVia.PAGE}


class DecisionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    reason: str | None = Field(None, max_length=2000)


@router.get("/approvals")
async def list_approvals(
    gateway: GatewayDep,
    status: Annotated[ApprovalStatus | Literal["all"], Query()] = ApprovalStatus.PENDING,
    server: Annotated[str | None, Query(max_length=255)] = None,
    tool: Annotated[str | None, Query(max_length=512)] = None,
    client: Annotated[str | None, Query(max_length=255)] = None,
) -> dict[str, Any]:
    """Held calls, newest first (at most 500): pending ones unless ``status`` says otherwise;
    ``configured`` says whether any rule holds calls here (else the list stays empty)."""
    found = await gateway.approvals.desk.listed(
        status=None if status == "all" else ApprovalStatus(status), server=server, tool=tool, client=client
    )
    return {"approvals": [approval.to_json() for approval in found], "configured": bool(gateway.approvals.rules)}


@router.get("/approvals/{approval_id}")
async def get_approval(gateway: GatewayDep, approval_id: str) -> dict[str, Any]:
    """One held call, pending or decided (by whom, how, why, its digest); 404 unknown."""
    try:
        found = await gateway.approvals.desk.get(approval_id)
    except ApprovalNotFoundError as exc:
        raise HTTPException(404, str(exc)) from exc
    return found.to_json()


@router.post("/approvals/{approval_id}")
async def decide_approval(
    gateway: GatewayDep,
    approval_id: str,
    body: DecisionIn,
    authorization: Annotated[str | None, Header()] = None,
    x_approval_via: Annotated[Literal["rest", "cli", "page"] | None, Header()] = None,
) -> dict[str, Any]:
    """Approve or deny one held call; 404 unknown, 409 decided already, 403 a client's token."""
    if is_client_token(gateway.settings, authorization):
        raise HTTPException(403, "a client's token cannot decide held calls; use the admin token")
    reason = body.reason.strip() or None if body.reason is not None else None
    try:
        decided = await gateway.approvals.desk.decide(
            approval_id,
            approve=body.decision == "approve",
            by="admin",
            via=_VIA[x_approval_via or "rest"],
            reason=reason,
        )
    except ApprovalNotFoundError as exc:
        raise HTTPException(404, str(exc)) from exc
    except ApprovalDecidedError as exc:
        raise HTTPException(409, str(exc)) from exc
    return decided.to_json()


def is_client_token(settings: Settings, authorization: str | None) -> bool:
    """Whether the bearer of ``authorization`` is a client's token (``mcp_tokens``, a named
    client's ``token`` or ``token_sha256``)."""
    scheme, _, presented = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        return False
    token = presented.strip()
    digest = hashlib.sha256(token.encode()).hexdigest()
    return token in settings.serve.mcp_tokens or any(
        c.token == token or c.token_sha256 == digest for c in settings.clients
    )
