"""``mcp-aggregator approvals``: the calls held for a person, and an admin's decision on one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from mcp_aggregator.cli.options import ConfigOption, GatewayOption, JsonOption, TokenOption, gateway_client
from mcp_aggregator.cli.output import print_json, print_table, reported

approvals_app = typer.Typer(no_args_is_help=True, help="Tool calls held for a person's approval.")

_VIA = {"X-Approval-Via": "cli"}


@approvals_app.command("list")
def list_approvals(
    status: Annotated[
        str, typer.Option("--status", help="pending, approved, denied, expired, cancelled or all.")
    ] = "pending",
    server: Annotated[str | None, typer.Option("--server", help="Only this server's calls.")] = None,
    tool: Annotated[str | None, typer.Option("--tool", help="Only this tool (its name at the server).")] = None,
    client: Annotated[str | None, typer.Option("--client", help="Only this client's calls.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """The held calls, newest first (pending ones unless --status says otherwise)."""
    with reported(), gateway_client(config, gateway, token) as api:
        listed = api.get("/approvals", status=status, server=server, tool=tool, client=client)
    if json:
        print_json(listed)
        return
    items = listed.get("approvals", [])
    # Six columns fit an 80-column terminal with the id whole; a decision's who and why
    # show only once some call has one.
    columns = ["id", "status", "call", "arguments", "client", "expires"]
    decided = any(item.get("decided_by") or item.get("reason") for item in items)
    print_table(
        None, [*columns, "decided"] if decided else columns, [_row(item, decided) for item in items], whole=["id"]
    )


def _row(item: dict[str, Any], decided: bool) -> tuple[Any, ...]:
    arguments = item.get("arguments")
    row = (
        item.get("id"),
        item.get("status"),
        f"{item.get('server')}.{item.get('tool')} ({item.get('rule')})",
        arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False),
        item.get("client") or "",
        item.get("expires_at"),
    )
    if not decided:
        return row
    by, reason = item.get("decided_by") or "", item.get("reason") or ""
    return (*row, f"{by}: {reason}" if by and reason else by or reason)


@approvals_app.command("approve")
def approve(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The held call's id (approvals list).")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why (recorded in the audit).")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Let one held call run (once)."""
    _decide(approval_id, "approve", reason, config, gateway, token, json)


@approvals_app.command("deny")
def deny(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The held call's id (approvals list).")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why: the calling client is told.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Refuse one held call: it never reaches its server, and its client is told why."""
    _decide(approval_id, "deny", reason, config, gateway, token, json)


def _decide(
    approval_id: str,
    decision: str,
    reason: str | None,
    config: Path | None,
    gateway: str | None,
    token: str | None,
    json: bool,
) -> None:
    with reported(), gateway_client(config, gateway, token) as api:
        decided = api.request(
            "POST", f"/approvals/{approval_id}", body={"decision": decision, "reason": reason}, headers=_VIA
        )
    if json:
        print_json(decided)
        return
    typer.echo(f"{decided['id']}: {decided['status']} ({decided['server']}.{decided['tool']})")
